/**
 * No 500 on any input at the status server of `svc start all` (issue 16, item 17): it has no
 * parameters of its own, so property-based requests (fast-check) throw any method, path, query,
 * body and header at it; every answer is below 500, an error is the suite's `{code, message}` body,
 * and nothing of the server's insides shows. A real server on 127.0.0.1, over a socket.
 */
import { assert, layer } from "@effect/vitest"
import { freePort } from "@svc/platform"
import { RequestFuzz } from "@svc/platform/testing"
import { ConfigProvider, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import type { SuiteService } from "../src/Services.ts"
import * as SuiteStatus from "../src/SuiteStatus.ts"

const { fc } = RequestFuzz

const services: ReadonlyArray<Pick<SuiteService, "name" | "description">> = [
  { name: "listings", description: "car offers" },
  { name: "queue", description: "message delivery" }
]

// SVC_PORT must be a real port (1-65535): a free one
const Server = Layer.unwrap(Effect.map(freePort(), (port) =>
  SuiteStatus.layer(services).pipe(
    Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ SVC_PORT: String(port), HOST: "127.0.0.1" })))
  )))

const baseUrl = Effect.map(
  HttpServer.HttpServer,
  ({ address }) => `http://127.0.0.1:${address._tag === "UnixPathAddress" ? 0 : address.port}`
)

const check = (url: string, path: string, init: RequestInit): Promise<RequestFuzz.Answer> =>
  fetch(url + path, init).then((response) => RequestFuzz.checkResponse(init.method ?? "GET", path, response))

layer(Server, { timeout: 120_000, excludeTestServices: true })("suite status server: no 500 on any input", (it) => {
  it.effect("its routes answer, with unknown parameters too", () =>
    Effect.gen(function*() {
      const url = yield* baseUrl
      const health = yield* Effect.promise(() => check(url, "/health?x=%00&__proto__=1", {}))
      assert.deepStrictEqual(JSON.parse(health.text), { status: "ok" })
      const list = yield* Effect.promise(() => check(url, "/services?limit=99999999999", {}))
      assert.deepStrictEqual(JSON.parse(list.text).services.map((s: any) => s.name), ["listings", "queue"])
      const missing = yield* Effect.promise(() => check(url, "/services/%00", {}))
      assert.strictEqual(missing.status, 404)
    }))

  it.effect("property: any method, path, query, body and header", () =>
    Effect.gen(function*() {
      const url = yield* baseUrl
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(
            RequestFuzz.anyRequest(["", "/health", "/services", "/openapi.json"], ["x", "services", "status"]),
            ({ init, path }) => check(url, path, init).then(() => undefined)
          ),
          RequestFuzz.fuzzParameters(200)
        )
      )
    }))
})
