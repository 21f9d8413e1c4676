/**
 * Running the MCP server: over HTTP (`svc mcp --transport http`, port 8790 by default, the next free
 * port when it is taken) or over stdio (`svc mcp --transport stdio`, for a client that spawns it).
 * Both reach the REST API v2 at `DOCS_API_URL` (default `http://localhost:8789`).
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { serve } from "@svc/platform"
import { Config, Effect, Layer, Logger } from "effect"
import { createServer } from "node:net"
import * as http from "node:http"
import { DocsClient } from "./DocsClient.ts"
import { routes } from "./McpHttp.ts"
import * as McpServer from "./McpServer.ts"

export const DEFAULT_PORT = 8790

export const ApiUrl = Config.String("DOCS_API_URL").pipe(Config.withDefault("http://localhost:8789"))

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

/** The MCP HTTP server on the first free port from `port`. */
export const httpLayer = (options: { readonly port: number; readonly host?: string | undefined }) =>
  Layer.unwrap(Effect.gen(function*() {
    yield* useProxyFromEnvironment
    const apiUrl = yield* ApiUrl
    const host = options.host ?? "0.0.0.0"
    const port = yield* firstFreePort(options.port, host)
    if (port !== options.port) yield* Effect.logWarning(`Port ${options.port} is taken: using ${port}`)
    return serve(routes, { name: "mcp", port, host }).pipe(Layer.provide(DocsClient.layer({ baseUrl: apiUrl })))
  }))

/** Logs to stderr: over stdio, stdout carries the protocol and nothing else. */
export const stderrLogger = Logger.layer([Logger.withConsoleError(Logger.formatSimple)])

/** Serves one client over stdin/stdout until it disconnects (or the process is stopped). */
export const runStdio = (options: { readonly apiKey: string | undefined }) =>
  Effect.gen(function*() {
    yield* useProxyFromEnvironment
    const apiUrl = yield* ApiUrl
    const server = yield* McpServer.make(options.apiKey).pipe(Effect.provide(DocsClient.layer({ baseUrl: apiUrl })))
    const transport = new StdioServerTransport()
    yield* Effect.acquireRelease(
      Effect.promise(() => server.connect(transport)),
      () => Effect.promise(() => server.close())
    )
    yield* Effect.logDebug(`MCP server on stdio, documentation API at ${apiUrl}`)
    // until the client closes stdin
    yield* Effect.callback<void>((resume) => {
      server.onclose = () => resume(Effect.void)
      process.stdin.once("end", () => resume(Effect.void))
    })
  }).pipe(Effect.scoped)
