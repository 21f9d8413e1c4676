/**
 * Running the MCP server: over HTTP on `MCP_PORT` (default 8790) and `HOST` — under `svc start` on
 * exactly that port, with `svc mcp --transport http` on the next free one when it is taken (spec/2) —
 * or over stdio (`svc mcp --transport stdio`, for a client that spawns it). Both reach the REST API v2
 * at `DOCS_API_URL`, by default the docs-api of this machine on `DOCS_PORT` (8789).
 */
import { Host, serve, Settings } from "@svc/platform"
import { Config, Effect, Layer, Option } from "effect"
import { createServer } from "node:net"
import * as http from "node:http"
import { DocsClient } from "./DocsClient.ts"
import { MaxBodyBytes, routes } from "./McpHttp.ts"
import * as McpServer from "./McpServer.ts"
import { StdioTransport } from "./StdioTransport.ts"

export const DEFAULT_PORT = 8790

/** `MCP_PORT` (default 8790): the HTTP port of the MCP server. */
export const Port = Config.Port("MCP_PORT").pipe(Config.withDefault(DEFAULT_PORT))

/**
 * `DOCS_API_URL`; unset, the docs-api this machine runs with the same configuration:
 * `http://localhost:<DOCS_PORT>` (8789), or `HOST` itself when that names one address.
 */
export const ApiUrl = Config.all({
  // empty is unset; anything else must be a URL (else every tool call would say "try again shortly")
  url: Config.option(Settings.httpUrlSetting("DOCS_API_URL")),
  port: Config.Port("DOCS_PORT").pipe(Config.withDefault(8789)),
  host: Host
}).pipe(Config.map(({ host, port, url }) =>
  Option.getOrElse(url, () => {
    const name = host === "" || host === "0.0.0.0" || host === "::" ? "localhost" : host.includes(":") ? `[${host}]` : host
    return `http://${name}:${port}`
  })
))

/** How many ports above the asked one are tried before giving up. */
const PORT_ATTEMPTS = 20

/** Whether `port` can be bound on `host` right now. */
const canBind = (port: number, host: string) =>
  Effect.callback<boolean>((resume) => {
    const probe = createServer()
    probe.once("error", () => resume(Effect.succeed(false)))
    probe.listen(port, host, () => probe.close(() => resume(Effect.succeed(true))))
  })

/** The first port from `start` up that is free (spec/2: "tries successive ports when taken"). */
export const firstFreePort = Effect.fn("Mcp.firstFreePort")(function*(start: number, host: string) {
  for (let port = start; port < start + PORT_ATTEMPTS && port <= 65535; port++) {
    if (yield* canBind(port, host)) return port
  }
  return yield* Effect.fail(new Error(`Ports ${start} to ${start + PORT_ATTEMPTS - 1} are all taken; pass --port`))
})

/**
 * `https_proxy` / `HTTPS_PROXY` (and `http_proxy`, `NO_PROXY`) for the calls to the REST API: node's
 * fetch does not read them on its own.
 */
const useProxyFromEnvironment = Effect.sync(() => {
  const env = process.env
  if (env["https_proxy"] || env["HTTPS_PROXY"] || env["http_proxy"] || env["HTTP_PROXY"]) {
    http.setGlobalProxyFromEnv()
  }
})

/**
 * The MCP HTTP server on `HOST` and `port` (default `MCP_PORT`, 8790). A taken port is a start-up
 * failure naming `MCP_PORT`, unless `nextFreePort` (only `svc mcp --transport http`, as spec/2 says):
 * then the next free one up is used.
 */
export const httpLayer = (options: {
  readonly port?: number | undefined
  readonly host?: string | undefined
  readonly nextFreePort?: boolean | undefined
} = {}) =>
  Layer.unwrap(Effect.gen(function*() {
    yield* useProxyFromEnvironment
    const apiUrl = yield* ApiUrl
    const host = options.host ?? (yield* Host)
    const asked = options.port ?? (yield* Port)
    const port = options.nextFreePort === true ? yield* firstFreePort(asked, host) : asked
    if (port !== asked) yield* Effect.logWarning(`Port ${asked} is taken: using ${port}`)
    yield* Effect.logInfo(`Documentation API at ${apiUrl}`).pipe(Effect.annotateLogs({ service: "mcp" }))
    return serve(routes, { name: "mcp", port, host, portVariable: "MCP_PORT" }).pipe(
      Layer.provide(DocsClient.layer({ baseUrl: apiUrl }))
    )
  }))

/**
 * Serves one client over stdin/stdout until it disconnects (or the process is stopped). Its logs must
 * go to stderr, as `Logging.layer` sends them (`svc mcp` runs under it): stdout carries the protocol alone.
 */
export const runStdio = (options: { readonly apiKey: string | undefined }) =>
  Effect.gen(function*() {
    yield* useProxyFromEnvironment
    const apiUrl = yield* ApiUrl
    const server = yield* McpServer.make(options.apiKey).pipe(Effect.provide(DocsClient.layer({ baseUrl: apiUrl })))
    // a line is one message: capped as a POST /mcp body is
    const transport = new StdioTransport(process.stdin, process.stdout, { maxLineBytes: yield* MaxBodyBytes })
    yield* Effect.acquireRelease(
      Effect.promise(() => server.connect(transport)),
      () => Effect.promise(() => server.close())
    )
    yield* Effect.logDebug(`MCP server on stdio, documentation API at ${apiUrl}`)
    // until the client closes stdin and what it asked before is answered
    yield* Effect.callback<void>((resume) => {
      server.onclose = () => resume(Effect.void)
      void transport.finished.then(() => resume(Effect.void))
    })
  }).pipe(Effect.scoped)
