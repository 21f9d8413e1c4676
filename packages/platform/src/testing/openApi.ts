/**
 * The suite's rule for `GET /openapi.json` (`OpenApiDocument.ts` in @svc/schema), as a test: the
 * document is valid by `@readme/openapi-parser` (OpenAPI 3.1 schema and semantics) and its operations
 * are exactly the routes the server's router is given — every route it answers, none it does not.
 *
 * ```ts
 * const routes = yield* servedRoutes(served)          // what Service.ts serves, over the test's services
 * yield* assertDocumentsRoutes(document, routes)
 * ```
 */
import { validate } from "@readme/openapi-parser"
import { assert } from "@effect/vitest"
import { Effect, Layer, type Scope } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { recording, RouteTable } from "../RouteTable.ts"

/**
 * Every route `routes` adds to its router, as `method /path/{param}` (lowercase method, OpenAPI path
 * parameters), noted on their way in by the router wrapper `serve` itself uses (RouteTable.ts). The
 * layer is built over the caller's context (its services; the router's request markers are types only).
 *
 * OpenAPI has no wildcard: a route that takes the rest of the path (`post /v2/publish/*`) is named by
 * `wildcards` as its document describes it (`post /v2/publish/{destination}`); one left unnamed keeps
 * its `*`, which no document path has.
 */
export const servedRoutes = <A, E, R>(
  routes: Layer.Layer<A, E, R>,
  options?: { readonly wildcards?: Readonly<Record<string, string>> | undefined }
): Effect.Effect<
  Array<string>,
  HttpRouter.Request.Without<E>,
  Scope.Scope | Exclude<HttpRouter.Request.Without<R>, HttpRouter.HttpRouter | Layer.Success<typeof HttpServer.layerServices>>
> =>
  Effect.gen(function*() {
    const noted: Array<string> = []
    const table = Layer.succeed(
      RouteTable,
      RouteTable.of({
        note: (route) => {
          const served = `${route.method.toLowerCase()} ${route.path.replace(/:(\w+)/g, "{$1}")}`
          noted.push(options?.wildcards?.[served] ?? served)
        },
        allowed: () => [],
        cutAtSemicolon: () => false,
        routeOf: () => undefined
      })
    )
    const router = Layer.effect(HttpRouter.HttpRouter, HttpRouter.make)
    const app = (routes as unknown as Layer.Layer<A, E, HttpRouter.HttpRouter>).pipe(
      Layer.provide(recording),
      Layer.provide([router, table, HttpServer.layerServices])
    )
    yield* Layer.build(app)
    return noted
  }) as any

/** The operations of an OpenAPI document, as `method /path/{param}`. */
export const documentedOperations = (document: { readonly paths: Record<string, object> }): Array<string> =>
  Object.entries(document.paths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method} ${path}`))

/**
 * `document` (as served, parsed JSON) is valid OpenAPI with no warnings, and its operations are
 * exactly `routes` (each once).
 */
export const assertDocumentsRoutes = (document: Record<string, any>, routes: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    // The parser dereferences in place: it gets a copy.
    const result = yield* Effect.promise(() => validate(structuredClone(document) as any))
    assert.deepStrictEqual(result, { valid: true, warnings: [], specification: "OpenAPI" })
    assert.strictEqual(new Set(routes).size, routes.length, `a route is served twice: ${routes.join(", ")}`)
    const wildcards = routes.filter((route) => route.includes("*"))
    assert.deepStrictEqual(wildcards, [], "a route taking the rest of the path is named as its document path (servedRoutes' wildcards)")
    assert.sameMembers(documentedOperations(document as any), [...routes], "the document's operations are the routes served")
  })
