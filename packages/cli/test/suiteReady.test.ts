/**
 * `GET /ready` of the status server of `svc start all`: every service's own `/ready`, asked over
 * loopback. A service whose dependency is down makes it a 503 naming that service; one that does not
 * answer at all is `unreachable`. A real server on 127.0.0.1, over a socket.
 */
import { assert, describe, it } from "@effect/vitest"
import { freePort, Readiness, serve } from "@svc/platform"
import { Config, ConfigProvider, Context, Effect, Layer, Ref } from "effect"
import { HttpServer } from "effect/http"
import * as SuiteStatus from "../src/SuiteStatus.ts"

const portOf = (context: Context.Context<HttpServer.HttpServer>) => {
  const { address } = Context.get(context, HttpServer.HttpServer)
  return address._tag === "UnixPathAddress" ? 0 : address.port
}

describe("status server GET /ready", () => {
  it.live("ready when every service is; a service not ready or not answering is named in a 503", () =>
    Effect.gen(function*() {
      const databaseUp = yield* Ref.make(true)
      const check: Readiness.Check = {
        name: "database",
        probe: Effect.flatMap(Ref.get(databaseUp), (up) => up ? Effect.void : Effect.fail(new Error("down")))
      }
      const queue = portOf(yield* Layer.build(serve(Readiness.route(Effect.succeed([check])), { name: "queue", port: 0, host: "127.0.0.1" })))
      const mcp = portOf(yield* Layer.build(serve(Layer.empty, { name: "mcp", port: 0, host: "127.0.0.1" })))
      const gone = yield* freePort()
      const env = (svcPort: number) => ConfigProvider.layer(ConfigProvider.fromEnvRecord({ SVC_PORT: String(svcPort), HOST: "0.0.0.0" }))
      const statusAt = (services: ReadonlyArray<SuiteStatus.StatusService>) =>
        Effect.gen(function*() {
          const port = yield* freePort()
          yield* Layer.build(SuiteStatus.layer(services).pipe(Layer.provide(env(port))))
          return `http://127.0.0.1:${port}/ready`
        })
      const get = (url: string) =>
        Effect.promise(async () => {
          const response = await fetch(url)
          return { status: response.status, body: await response.json() as Record<string, unknown> }
        })

      const url = yield* statusAt([
        { name: "queue", description: "", port: Config.succeed(queue) },
        { name: "mcp", description: "", port: Config.succeed(mcp) }
      ])
      assert.deepStrictEqual(yield* get(url), { status: 200, body: { status: "ready", services: { queue: "ready", mcp: "ready" } } })

      yield* Ref.set(databaseUp, false)
      const down = yield* get(url)
      assert.strictEqual(down.status, 503)
      assert.deepStrictEqual(down.body, {
        code: "service_unavailable",
        message: "Not ready: queue",
        status: "unavailable",
        services: { queue: "unavailable", mcp: "ready" }
      })

      const withGone = yield* statusAt([
        { name: "mcp", description: "", port: Config.succeed(mcp) },
        { name: "listings", description: "", port: Config.succeed(gone) }
      ])
      const unreachable = yield* get(withGone)
      assert.strictEqual(unreachable.status, 503)
      assert.deepStrictEqual(unreachable.body.services, { mcp: "ready", listings: "unreachable" })
    }).pipe(Effect.scoped), { timeout: 60_000 })
})
