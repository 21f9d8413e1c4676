/**
 * `GET /openapi.json` as docs-api serves it (a real server on 127.0.0.1 over a fresh database): valid
 * by `@readme/openapi-parser` (OpenAPI 3.1 schema and semantics), and it documents every route the
 * server answers and none it does not: the routes the server's router is given (`served`, what
 * `Service.layer` serves, recorded as they are added: `servedRoutes` in @svc/platform/testing) are
 * exactly the document's operations — /ready, /rpc (behind DOCS_ADMIN_TOKEN, its own security scheme:
 * `bearer` is an API key here) and the document itself included.
 */
import { assert, layer } from "@effect/vitest"
import { assertDocumentsRoutes, servedRoutes } from "@svc/platform/testing"
import { Effect, Layer } from "effect"
import { served } from "../src/Service.ts"
import { get, socketClient, stack } from "./support.ts"

layer(socketClient.pipe(Layer.provideMerge(stack)), { timeout: 60_000 })("the docs OpenAPI document", (it) => {
  it.effect("is valid and has every route the server answers, and none it does not", () =>
    Effect.gen(function*() {
      const { status, body: document } = yield* get("/openapi.json")
      assert.strictEqual(status, 200)
      assert.strictEqual(document.info.title, "svc docs")
      const routes = yield* Effect.scoped(servedRoutes(served))
      yield* assertDocumentsRoutes(document, routes)
      // what the router holds, spelt out: a new route must be added here and to the document
      assert.sameMembers(routes, [
        "get /health",
        "get /ready",
        "get /api/v2/libs/search",
        "get /api/v2/context",
        "post /rpc",
        "get /openapi.json"
      ])
    }))

  it.effect("/rpc behind DOCS_ADMIN_TOKEN naming its procedures; the API keys only on /api/v2", () =>
    Effect.gen(function*() {
      const { body: document } = yield* get("/openapi.json")
      const rpc = document.paths["/rpc"].post
      assert.deepStrictEqual(rpc.security, [{ adminToken: [] }])
      assert.include(document.components.securitySchemes.adminToken, { type: "http", scheme: "Bearer" })
      assert.match(document.components.securitySchemes.adminToken.description, /DOCS_ADMIN_TOKEN/)
      assert.match(document.components.securitySchemes.bearer.description, /API key/)
      assert.includeMembers(Object.keys(rpc.responses), ["200", "400", "401", "413", "415", "503"])
      assert.match(rpc.description, /Procedures: AddLibrary, Refresh, Remove, List\./)
      assert.sameMembers(Object.keys(document.paths["/ready"].get.responses), ["200", "503"])
      for (const path of ["/health", "/ready", "/openapi.json"]) {
        assert.isUndefined(Object.values<any>(document.paths[path])[0].security?.find((s: object) => Object.keys(s).length > 0), path)
      }
      assert.deepInclude(document.paths["/api/v2/context"].get.security, { bearer: [] })
    }))
})
