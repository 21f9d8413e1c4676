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
}

export interface Site {
  readonly base: string
  readonly port: number
  readonly requested: Array<string>
  /** Adds or replaces routes while the server runs. */
  readonly set: (routes: Record<string, Route>) => void
}

/** Serves `routes` (path with query → answer; 404 otherwise) until the scope closes. */
export const siteServer = (routes: Record<string, Route>) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<Site & { readonly server: http.Server }>((resolve) => {
        const table = new Map(Object.entries(routes))
        const requested: Array<string> = []
        const server = http.createServer((request, response) => {
          requested.push(request.url ?? "")
          const route = table.get(request.url ?? "")
          if (route === undefined) {
            response.writeHead(404, { "content-type": "text/plain" }).end("not found")
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
            set: (more) => Object.entries(more).forEach(([key, value]) => table.set(key, value))
          })
        })
      })
    ),
    (site) => Effect.promise(() => new Promise<void>((resolve) => site.server.close(() => resolve())))
  )

/** An HTML page with page furniture around its content. */
export const page = (title: string, content: string, options: { readonly description?: string; readonly nav?: string } = {}) =>
  `<!doctype html><html><head><title>${title}</title>` +
  (options.description === undefined ? "" : `<meta name="description" content="${options.description}">`) +
  `<style>body { color: red }</style><script>window.tracking = "SCRIPT-TEXT"</script></head>` +
  `<body><nav>NAV-TEXT ${options.nav ?? ""}</nav><main>${content}</main>` +
  `<footer>FOOTER-TEXT copyright</footer></body></html>`
