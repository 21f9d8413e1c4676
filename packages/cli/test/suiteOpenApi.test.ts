/**
 * `GET /openapi.json` of the status server of `svc start all`: valid by `@readme/openapi-parser`, and
 * it documents every route the server answers and none it does not — the routes its router is given
 * (`SuiteStatus.routes`, recorded as they are added: `servedRoutes` in @svc/platform/testing) are
 * exactly the document's operations, `/ready` (every service's own) and the document itself included.
 * In-process, no socket.
 */
import { assert, describe, it } from "@effect/vitest"
import { toWebHandler } from "@svc/platform"
import { assertDocumentsRoutes, servedRoutes } from "@svc/platform/testing"
import { Effect } from "effect"
import * as SuiteStatus from "../src/SuiteStatus.ts"

const services: ReadonlyArray<SuiteStatus.StatusService> = [{ name: "queue", description: "the delivery queue" }]

describe("the status server's OpenAPI document", () => {
  it.live("is valid and has every route the server answers, and none it does not", () =>
    Effect.gen(function*() {
      const { handler, dispose } = toWebHandler(SuiteStatus.routes(services))
      yield* Effect.addFinalizer(() => Effect.promise(dispose))
      const response = yield* Effect.promise(() => handler(new Request("http://status.test/openapi.json")))
      assert.strictEqual(response.status, 200)
      const document = yield* Effect.promise(() => response.json() as Promise<Record<string, any>>)
      assert.strictEqual(document.info.title, "svc status")
      const routes = yield* servedRoutes(SuiteStatus.routes(services))
      yield* assertDocumentsRoutes(document, routes)
      assert.sameMembers(routes, ["get /health", "get /services", "get /ready", "get /openapi.json"])
      assert.sameMembers(Object.keys(document.paths["/ready"].get.responses), ["200", "503"])
    }).pipe(Effect.scoped))
})
