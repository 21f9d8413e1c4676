/**
 * A small website on 127.0.0.1 for the web sources' tests: pages by path, redirects, and the log of
 * every path requested (so a test can tell what a crawl never asked for).
 */
import { Effect } from "effect"
import * as http from "node:http"

export interface Route {
  readonly status?: number
  readonly type?: string
  /** Text is sent as UTF-8; bytes as they are (a page in another character encoding). */
  readonly body?: string | Uint8Array
  /** A redirect (302) to this URL. */
  readonly location?: string
  /**
   * Never answered while the server runs (the request is logged, then held): a page that takes
   * forever, for the deadline and timeout tests, which wait for it with {@link Site.requestOf}.
   */
  readonly hold?: boolean
}

export interface Site {
  readonly base: string
  readonly port: number
  readonly requested: Array<string>
  /** Adds or replaces routes while the server runs. */
  readonly set: (routes: Record<string, Route>) => void
  /** Waits until `path` has been requested (at once when it was). */
  readonly requestOf: (path: string) => Effect.Effect<void>
  /** Whether a held request for `path` was given up by the client (its connection closed). */
  readonly abandoned: (path: string) => boolean
}

/** Serves `routes` (path with query → answer; 404 otherwise) until the scope closes. */
export const siteServer = (routes: Record<string, Route>) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<Site & { readonly server: http.Server; readonly held: Set<http.ServerResponse> }>((resolve) => {
        const table = new Map(Object.entries(routes))
        const requested: Array<string> = []
        const waiting = new Map<string, Array<() => void>>()
        const held = new Set<http.ServerResponse>()
        const abandoned = new Set<string>()
        const server = http.createServer((request, response) => {
          const url = request.url ?? ""
          requested.push(url)
          for (const wake of waiting.get(url) ?? []) wake()
          waiting.delete(url)
          const route = table.get(url)
          if (route === undefined) {
            response.writeHead(404, { "content-type": "text/plain" }).end("not found")
            return
          }
          if (route.hold === true) {
            held.add(response)
            response.on("close", () => {
              held.delete(response)
              abandoned.add(url)
            })
            return
          }
          if (route.location !== undefined) {
            response.writeHead(302, { location: route.location }).end()
            return
          }
          response.writeHead(route.status ?? 200, { "content-type": route.type ?? "text/html; charset=utf-8" }).end(route.body ?? "")
        })
        server.listen(0, "127.0.0.1", () => {
          const port = (server.address() as { port: number }).port
          resolve({
            server,
            port,
            base: `http://127.0.0.1:${port}`,
            requested,
            set: (more) => Object.entries(more).forEach(([key, value]) => table.set(key, value)),
            requestOf: (path) =>
              Effect.promise(() =>
                new Promise<void>((wake) => {
                  if (requested.includes(path)) return wake()
                  waiting.set(path, [...(waiting.get(path) ?? []), wake])
                })
              ),
            abandoned: (path) => abandoned.has(path),
            held
          })
        })
      })
    ),
    // held requests are ended first: close() waits for every open connection
    (site) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          for (const response of site.held) response.destroy()
          site.server.close(() => resolve())
        })
      )
  )

/** An HTML page with page furniture around its content. */
export const page = (title: string, content: string, options: { readonly description?: string; readonly nav?: string } = {}) =>
  `<!doctype html><html><head><title>${title}</title>` +
  (options.description === undefined ? "" : `<meta name="description" content="${options.description}">`) +
  `<style>body { color: red }</style><script>window.tracking = "SCRIPT-TEXT"</script></head>` +
  `<body><nav>NAV-TEXT ${options.nav ?? ""}</nav><main>${content}</main>` +
  `<footer>FOOTER-TEXT copyright</footer></body></html>`
