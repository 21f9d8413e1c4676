/**
 * `GET /openapi.json` as listings serves it: valid by `@readme/openapi-parser` (OpenAPI 3.1 schema and
 * semantics), and it documents every route the server answers: the routes the service's router is
 * given (`served`, what `Service.layer` serves, recorded as they are added: `servedRoutes` in
 * @svc/platform/testing, the suite's one check) are exactly the document's operations — the image
 * route, /ready, /rpc and the document itself included. The conditional answers of /offers and /offers/{id} (ETag, 304) are described.
 */
import { assert, layer } from "@effect/vitest"
import { assertDocumentsRoutes, servedRoutes } from "@svc/platform/testing"
import { Effect, Layer } from "effect"
import { served } from "../src/Service.ts"
import { Client, get, services, socketClient, TestDatabase } from "./support.ts"

const stack = services().pipe(Layer.provideMerge(TestDatabase.layer()))

layer(
  Layer.mergeAll(socketClient(stack), stack) as Layer.Layer<Client | Layer.Success<typeof stack>, unknown>,
  { excludeTestServices: true, timeout: 60_000 }
)("the listings OpenAPI document", (it) => {
  it.effect("is valid and has every route the server answers, and none it does not", () =>
    Effect.gen(function*() {
      const { status, body: document } = yield* get("/openapi.json")
      assert.strictEqual(status, 200)
      assert.strictEqual(document.info.title, "svc listings")
      const routes = yield* Effect.scoped(servedRoutes(served))
      yield* assertDocumentsRoutes(document, routes)
      // what the router holds, spelt out: a new route must be added here and to the document
      assert.sameMembers(routes, [
        "get /health",
        "get /ready",
        "get /offers",
        "get /offers/{id}",
        "get /sources",
        "get /import-services",
        "post /admin/ingest",
        "get /images/{key}",
        "post /rpc",
        "get /openapi.json"
      ])
    }))

  it.effect("the image route: the image, a redirect to the original, 304, 404; /offers revalidate", () =>
    Effect.gen(function*() {
      const { body: document } = yield* get("/openapi.json")
      const image = document.paths["/images/{key}"].get
      assert.sameMembers(Object.keys(image.responses), ["200", "302", "304", "400", "404"])
      assert.includeMembers(Object.keys(image.responses["200"].content), ["image/jpeg", "image/png", "image/webp"])
      assert.includeMembers(Object.keys(image.responses["200"].headers), ["etag", "cache-control"])
      assert.property(image.responses["302"].headers, "location")
      assert.deepStrictEqual(image.security, [])
      assert.deepInclude(image.parameters, { name: "key", in: "path", required: true, schema: image.parameters[0].schema })
      const rpc = document.paths["/rpc"].post
      assert.deepStrictEqual(rpc.security, [{ bearer: [] }])
      assert.includeMembers(Object.keys(rpc.responses), ["200", "400", "401", "413", "415", "503"])
      assert.sameMembers(Object.keys(document.paths["/ready"].get.responses), ["200", "503"])
      // GET /import-services names parameters it does not take in an optional `warnings`, as /offers does
      const directory = document.components.schemas.ImportServicesResponse
      assert.deepStrictEqual(directory.required, ["services"])
      assert.strictEqual(directory.properties.warnings.type, "array")
      assert.include(directory.properties.warnings.description, "parameters this route does not take")
      for (const path of ["/offers", "/offers/{id}"]) {
        const operation = document.paths[path].get
        assert.property(operation.responses, "304", path)
        assert.property(operation.responses["200"].headers, "ETag", path)
        assert.include(operation.parameters.map((parameter: any) => parameter.name), "If-None-Match", path)
      }
    }))
})
