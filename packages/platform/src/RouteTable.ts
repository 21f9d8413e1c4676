/**
 * Which methods a server's paths take, so that a request with another method is answered 405 with
 * `Allow` (RFC 9110 §15.5.6) instead of "No route", and `OPTIONS` lists them.
 *
 * effect's router keeps its routes to itself: {@link recording} stands between the routes' layers and
 * the router `HttpRouter.serve` (or `toWebHandler`) builds, passing every route on unchanged and noting
 * its method and path in a table of its own, matched by the same `FindMyWay` the router uses.
 */
import { Context, Effect, Layer } from "effect"
import { FindMyWay, HttpRouter } from "effect/http"

/** The methods a route may name, in the order `Allow` lists them. */
const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "QUERY"] as const

export class RouteTable extends Context.Service<RouteTable, {
  /** The methods routed at `url`'s path (HEAD with GET, as the router serves it), `[]` when none is. */
  readonly allowed: (url: string) => ReadonlyArray<string>
  /**
   * Whether `url`'s path has a `;` that the router would cut it at, dropping what follows: effect's
   * router (as find-my-way) reads `;` as the start of a query, so `DELETE /v2/queues/zz;x` deleted
   * queue `zz`. A `;` that a wildcard route takes whole (the queue's `/v2/publish/<destination URL>`,
   * which reads the raw path) is not cut.
   */
  readonly cutAtSemicolon: (method: string, url: string) => boolean
  /** The path, as its route declares it (`/v2/publish/*`), of the route the router takes for `url` (HEAD: GET's), or none. */
  readonly routeOf: (method: string, url: string) => string | undefined
  readonly note: (route: HttpRouter.Route<any, any>) => void
}>()("@svc/platform/RouteTable") {
  static readonly layer = Layer.effect(
    RouteTable,
    Effect.gen(function*() {
      // matched as the router matches (its configuration: trailing and duplicate slashes, case)
      // each route noted with its path, so that two lookups can tell whether they found the same route
      const table = FindMyWay.make<string>(yield* HttpRouter.RouterConfig)
      const on = (method: string, path: FindMyWay.PathInput, route: string) =>
        method === "*" ? table.all(path, route) : table.on(method, path, route)
      return RouteTable.of({
        note: (route) => {
          on(route.method, route.path, route.path)
          // the router takes `/x/*` for `/x` too
          if (route.path.endsWith("/*")) on(route.method, route.path.slice(0, -2) as FindMyWay.PathInput, route.path)
        },
        cutAtSemicolon: (method, url) => {
          const path = url.split(/[?#]/, 1)[0]!
          if (!path.includes(";")) return false
          const asked = method === "HEAD" ? "GET" : method
          // where the router takes the path (cut), and the route of the path as sent (its `;` encoded, so
          // kept); a path the router cannot read at all is left to it (it answers that itself)
          const find = (target: string, by = asked) => {
            try {
              return table.find(by, target)
            } catch {
              return undefined
            }
          }
          const cut = find(path)
          const whole = find(path.replaceAll(";", "%3B"))
          if (cut !== undefined && whole?.handler === cut.handler && whole.params["*"] !== undefined) return false
          // cut where some route takes the rest (for this method or, for a 405, another): refused
          const before = path.slice(0, path.indexOf(";"))
          return METHODS.some((other) => find(before, other) !== undefined)
        },
        routeOf: (method, url) => {
          try {
            return table.find(method === "HEAD" ? "GET" : method, url)?.handler
          } catch {
            return undefined
          }
        },
        allowed: (url) => {
          const found = METHODS.filter((method) => table.find(method, url) !== undefined)
          return found.includes("GET") && !found.includes("HEAD")
            ? METHODS.filter((method) => method === "HEAD" || found.includes(method))
            : found
        }
      })
    })
  )
}

/**
 * The router as the routes' layers see it: the one it stands for, every route noted in the
 * {@link RouteTable} on its way (under the prefix of a `prefixed` router, as the router adds it).
 */
export const recording: Layer.Layer<HttpRouter.HttpRouter, never, HttpRouter.HttpRouter | RouteTable> = Layer.effect(
  HttpRouter.HttpRouter,
  Effect.gen(function*() {
    const table = yield* RouteTable
    const wrap = (router: HttpRouter.HttpRouter, prefix: string | undefined): HttpRouter.HttpRouter => {
      const addAll: HttpRouter.HttpRouter["addAll"] = (routes) => {
        for (const route of routes) table.note(prefix === undefined ? route : HttpRouter.prefixRoute(route, prefix))
        return router.addAll(routes)
      }
      return HttpRouter.HttpRouter.of({
        ...router,
        prefixed: (next) => wrap(router.prefixed(next), prefix === undefined ? next : HttpRouter.prefixPath(next, prefix)),
        addAll,
        add: (method, path, handler, options) => addAll([HttpRouter.route(method, path, handler, options)])
      })
    }
    return wrap(yield* HttpRouter.HttpRouter, undefined)
  })
)
