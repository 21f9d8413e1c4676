import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { HttpServerRequest } from "effect/http"
import { BearerAuth } from "../../src/index.ts"

const configured = BearerAuth.make({ variable: "EXAMPLE_TOKEN", surface: "The example API", token: Option.some(Redacted.make("s3cret")) })

const refusal = (effect: Effect.Effect<unknown, { readonly _tag: string; readonly message: string }>) =>
  Effect.map(Effect.flip(effect), (error) => `${error._tag}: ${error.message}`)

describe("BearerAuth", () => {
  it("reads the token of a Bearer header only", () => {
    assert.strictEqual(BearerAuth.tokenOf("Bearer abc"), "abc")
    assert.strictEqual(BearerAuth.tokenOf("  bearer   abc  "), "abc")
    assert.isUndefined(BearerAuth.tokenOf("Basic abc"))
    assert.isUndefined(BearerAuth.tokenOf("Bearer "))
    assert.isUndefined(BearerAuth.tokenOf(undefined))
  })

  it.effect("accepts the configured token and refuses a missing or wrong one, naming the variable", () =>
    Effect.gen(function*() {
      yield* configured.check("s3cret")
      assert.strictEqual(
        yield* refusal(configured.check(undefined)),
        "Unauthorized: Missing bearer token (Authorization: Bearer <EXAMPLE_TOKEN>)"
      )
      assert.strictEqual(yield* refusal(configured.check("s3cret2")), "Unauthorized: Invalid bearer token")
      assert.strictEqual(yield* refusal(configured.check("")), "Unauthorized: Missing bearer token (Authorization: Bearer <EXAMPLE_TOKEN>)")
    }))

  it.effect("an unset or empty token disables the surface (503) rather than opening it", () =>
    Effect.gen(function*() {
      for (const token of [Option.none(), Option.some(Redacted.make(""))]) {
        const disabled = BearerAuth.make({ variable: "EXAMPLE_TOKEN", surface: "The example API", token })
        assert.strictEqual(
          yield* refusal(disabled.check("")),
          "ServiceUnavailable: The example API is disabled: the server has no EXAMPLE_TOKEN set"
        )
      }
    }))

  it.effect("each adapter runs the guarded effect only after the check passes", () =>
    Effect.gen(function*() {
      let runs = 0
      const guarded = Effect.sync(() => ++runs)
      const request = (authorization: string) =>
        HttpServerRequest.fromWeb(new Request("http://localhost/rpc", { method: "POST", headers: { authorization } }))

      assert.strictEqual(yield* configured.httpApi(guarded, { credential: Redacted.make("s3cret") }), 1)
      assert.strictEqual(yield* configured.rpc(guarded, { headers: { authorization: "Bearer s3cret" } }), 2)
      assert.strictEqual(
        yield* configured.route(guarded).pipe(Effect.provideService(HttpServerRequest.HttpServerRequest, request("Bearer s3cret"))),
        3
      )
      yield* refusal(configured.httpApi(guarded, { credential: Redacted.make("nope") }))
      yield* refusal(configured.rpc(guarded, { headers: {} }))
      yield* refusal(configured.route(guarded).pipe(Effect.provideService(HttpServerRequest.HttpServerRequest, request("Bearer nope"))))
      assert.strictEqual(runs, 3)
    }))
})
