/**
 * The HTTP bootstrap every service of the suite goes through.
 *
 * ```ts
 * // packages/listings/src/main.ts
 * const ListingsServer = serve(
 *   Layer.merge(
 *     apiRoutes({ api: ListingsApi, handlers: ListingsHandlers }), // handlers: HttpApiBuilder.group(...) layers
 *     openApiRoute(listingsOpenApi)   // the API's document, with the routes served outside it (@svc/schema)
 *   ),
 *   { name: "listings", port: Config.Port("LISTINGS_PORT").pipe(Config.withDefault(8787)) }
 * )
 * ListingsServer.pipe(Layer.provide(Database.layer), runServer)
 *
 * // tests, without a socket
 * const { handler, dispose } = toWebHandler(apiRoutes({ api: ListingsApi, handlers }))
 * ```
 *
 * Whatever the routes, every answer follows the suite's conventions (DESIGN.md §3):
 * - errors are JSON `{code, message, ...}` (see `@svc/schema` Errors.ts); a request that fails to decode
 *   is 400 `invalid_request` naming each bad parameter; an unknown route is a JSON 404; a defect is a 500
 *   `internal_error` whose body names only the request id, while the log line carries the full cause
 *   (a database that cannot be reached or cannot take work now is a 503 `service_unavailable` with
 *   `Retry-After: 5` instead: DatabaseUnavailable.ts);
 * - `GET /health` answers `{"status":"ok"}` unless the service routes it itself; `GET /ready` answers
 *   what the service's `Readiness.route` finds (`{"status":"ready","checks":{}}` without one), and 503
 *   `"status":"stopping"` once shutdown has begun (Readiness.ts);
 * - each request gets an id (a sane incoming `X-Request-Id`, or a fresh UUID), echoed in `X-Request-Id`
 *   and attached to every log line of the request;
 * - one log line per request: `GET /offers?svc_token=REDACTED 200 12ms`, annotated with service and request id.
 *
 * All of that is one global router middleware, so `serve` and `toWebHandler` behave identically.
 */
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import {
  DATABASE_UNAVAILABLE_MESSAGE,
  InternalError,
  InvalidRequest,
  MAX_ID_LENGTH,
  type RequestIssue,
  RouteNotFound,
  ServiceUnavailable
} from "@svc/schema"
import { Cause, Config, Context, Data, Duration, Effect, Exit, Layer, Runtime, Schema, SchemaIssue } from "effect"
import {
  HttpBody,
  HttpRouter,
  HttpServer,
  HttpServerError,
  HttpServerRequest,
  HttpServerRespondable,
  HttpServerResponse,
  UrlParams
} from "effect/http"
import { HttpApiBuilder, HttpApiError } from "effect/http-api"
import type { HttpApi, HttpApiGroup, OpenApi } from "effect/http-api"
import type * as Types from "effect/Types"
import * as NodeHttp from "node:http"
import type { Duplex } from "node:stream"
import { isDatabaseUnavailable } from "./DatabaseUnavailable.ts"
import * as Readiness from "./Readiness.ts"
import { recording, RouteTable } from "./RouteTable.ts"
import { durationSetting } from "./Settings.ts"

// -----------------------------------------------------------------------------
// Configuration
// -----------------------------------------------------------------------------

/**
 * `SHUTDOWN_TIMEOUT` (default 10 seconds): on SIGTERM/SIGINT, how long in-flight requests may take
 * to finish before they are interrupted and their connections closed.
 */
export const ShutdownTimeout: Config.Config<Duration.Duration> = durationSetting("SHUTDOWN_TIMEOUT", "10 seconds", { min: "0 seconds" })

/**
 * `HOST` (default `0.0.0.0`): the interface services listen on. All interfaces by default, because
 * the services are meant to be reached from elsewhere (the mobile client, queue destinations,
 * containers with published ports); set `HOST=127.0.0.1` to keep a development machine private,
 * `HOST=::` for IPv6.
 */
export const Host: Config.Config<string> = Config.String("HOST").pipe(Config.withDefault("0.0.0.0"))

// -----------------------------------------------------------------------------
// Routes
// -----------------------------------------------------------------------------

/** An `HttpApi` and its implementation. */
export interface ApiRoutesOptions<Id extends string, Groups extends HttpApiGroup.Constraint, A, E, R> {
  readonly api: HttpApi.HttpApi<Id, Groups>
  /** The `HttpApiBuilder.group(api, ...)` layers, merged. */
  readonly handlers: Layer.Layer<A, E, R>
}

/**
 * The routes of an `HttpApi`: its endpoints, implemented by `handlers` (the `HttpApiBuilder.group`
 * layers, their own services already provided). A group without handlers stays a requirement of the
 * layer, so it is a compile error at launch. Its OpenAPI document is served by {@link openApiRoute},
 * not by effect's `openapiPath`: that one documents the `HttpApi` alone, while every server answers
 * routes outside it (`/ready` at least).
 */
export const apiRoutes = <Id extends string, Groups extends HttpApiGroup.Constraint, A, E, R>(
  options: ApiRoutesOptions<Id, Groups, A, E, R>
) => HttpApiBuilder.layer(options.api).pipe(Layer.provide(options.handlers))

/**
 * `GET /openapi.json`: the document `make` gives (made once, when the routes are built). Every
 * server of the suite serves its document so, made by `openApiDocument` in `@svc/schema`
 * (OpenApiDocument.ts): the server's `HttpApi` with the routes it serves outside it, so that the
 * document lists every route the server answers and none it does not.
 */
export const openApiRoute = (make: () => OpenApi.OpenAPISpec): Layer.Layer<never, never, HttpRouter.HttpRouter> =>
  Layer.unwrap(Effect.sync(() => {
    const document = make()
    return HttpRouter.add("GET", "/openapi.json", Effect.sync(() => HttpServerResponse.jsonUnsafe(document)))
  }))

// -----------------------------------------------------------------------------
// Servers
// -----------------------------------------------------------------------------

/** Where and as what a service listens. */
export interface ServeOptions {
  /** The service name, in every log line (`service=listings`). */
  readonly name: string
  /** The port; `0` picks a free one (tests read it from `HttpServer.HttpServer`'s address). */
  readonly port: number | Config.Config<number>
  /** Defaults to the {@link Host} config. */
  readonly host?: string | Config.Config<string> | undefined
  /** The variable that moves the port (`LISTINGS_PORT`), named when the port cannot be bound. */
  readonly portVariable?: string | undefined
  /** How long a request may take to arrive (default {@link HEADERS_TIMEOUT_MS} / {@link REQUEST_TIMEOUT_MS}); tests shorten it. */
  readonly arrival?: { readonly headersMs: number; readonly requestMs: number } | undefined
  /**
   * The routes, by their paths as declared (`/v2/publish/*`), that read the query as sent (the queue's
   * publish: a destination's own query, `?x=%FF` included, is passed on to it): no check that it
   * decodes on those. On every other route a query parameter whose name or value is not valid
   * percent-encoded UTF-8 is a 400 naming it, as such a path is. (It was one switch for the whole
   * server, so the queue's list routes read `GET /v2/dlq?url=%FF` as the text `%FF` and answered 200.)
   */
  readonly queryAsSent?: ReadonlyArray<string> | undefined
  /**
   * The largest request line and headers read, in bytes (default {@link DEFAULT_MAX_HEAD_BYTES}, node's);
   * larger is 431. A service whose own parameter limits allow more (docs-api: a question of 2,000
   * characters percent-encoded) raises it, or its clients meet a 431 the API's limits promised not.
   */
  readonly maxHeadBytes?: number | undefined
}

/** Node's own bound on a request line and headers (16 KiB). */
export const DEFAULT_MAX_HEAD_BYTES = 16 * 1024

/**
 * The server could not listen: `listings cannot listen on 0.0.0.0:8787 (address in use); set
 * LISTINGS_PORT to another port`.
 */
export class ListenError extends Data.TaggedError("ListenError")<{
  readonly message: string
  readonly cause: unknown
}> {}

const listenError = (
  options: { readonly name: string; readonly host: string; readonly port: number; readonly portVariable?: string | undefined },
  cause: unknown
): ListenError => {
  const code = (cause as { readonly cause?: { readonly code?: unknown } } | undefined)?.cause?.code
  const address = `${options.host.includes(":") ? `[${options.host}]` : options.host}:${options.port}`
  const move = options.portVariable === undefined ? "move it to another port" : `set ${options.portVariable} to another port`
  const [reason, hint] = code === "EADDRINUSE"
    ? ["address in use", move]
    : code === "EACCES"
    ? ["permission denied", `${move} (above 1023)`]
    : code === "EADDRNOTAVAIL" || code === "ENOTFOUND" || code === "EAI_AGAIN"
    ? [code === "EADDRNOTAVAIL" ? "no such address on this machine" : "no such host", "set HOST to one of its addresses, or 0.0.0.0"]
    : [typeof code === "string" ? code : String((cause as { readonly cause?: unknown })?.cause ?? cause), move]
  return new ListenError({ message: `${options.name} cannot listen on ${address} (${reason}); ${hint}`, cause })
}

/**
 * Serves router layers (`apiRoutes(...)`, `HttpRouter.add(...)`, ...) on a node HTTP server, with the
 * suite's conventions. Provides `HttpServer.HttpServer`, whose `address` tells the bound port.
 *
 * Shutdown (closing the layer's scope, which `runServer` does on SIGTERM/SIGINT):
 * 1. the server stops accepting connections and closes its idle keep-alive connections (node's
 *    `server.close()`, called by `NodeHttpServer`);
 * 2. in-flight requests finish, each answered with `Connection: close`, for up to `SHUTDOWN_TIMEOUT`;
 * 3. requests still running are interrupted (answered 503 `service_unavailable` when still possible),
 *    then every remaining connection is destroyed, so nothing keeps the server open.
 *
 * Like `HttpRouter.serve`, layers first built inside `routes` are private to this server: provide
 * what the server shares with other parts of the process (the database pool, a background ingest)
 * outside `serve`, e.g. `serveApi({...}).pipe(Layer.provide(Database.layer))`.
 */
/**
 * The router takes a path parameter up to the longest id a path carries (`MAX_ID_LENGTH`, 300 decoded
 * characters), and the route's own schema bounds it from there. effect's default is 100: a listed
 * offer whose id is longer (a source id of up to 63 characters, ':', a native id of up to 200) could
 * not be fetched by that id, every request a 400 "a segment is longer than 100 characters".
 */
const ROUTER_CONFIG = { maxParamLength: MAX_ID_LENGTH }

export const serve = <A, E, R>(routes: Layer.Layer<A, E, R>, options: ServeOptions) =>
  Layer.unwrap(Effect.gen(function*() {
    const port = Config.isConfig(options.port) ? yield* options.port : options.port
    const host = options.host === undefined
      ? yield* Host
      : Config.isConfig(options.host)
      ? yield* options.host
      : options.host
    const shutdownTimeout = yield* ShutdownTimeout
    const arrival = options.arrival ?? { headersMs: HEADERS_TIMEOUT_MS, requestMs: REQUEST_TIMEOUT_MS }
    const maxHeadBytes = options.maxHeadBytes ?? DEFAULT_MAX_HEAD_BYTES
    // A request without Host is answered by `conventions` (a JSON 400 like every refusal); node's own
    // check answered an empty 400.
    const server = NodeHttp.createServer({
      requireHostHeader: false,
      maxHeaderSize: maxHeadBytes,
      headersTimeout: arrival.headersMs,
      requestTimeout: arrival.requestMs,
      // how often node looks for requests past those timeouts (its default, 30 s, adds up to that much)
      connectionsCheckingInterval: 1_000
    })
    // The socket listens before the routes are attached (the router layer builds after the server
    // layer). Node drops a request that finds no "request" listener, and its client waits forever:
    // until the routes are there (and after they are gone, at shutdown) the answer is a 503.
    server.on("request", (request, response) => {
      // node hands such a request to the routes, then fails it in its parser: the routes' answer
      // (`conventions` refuses it, closing the connection) is the only one (answerClientError)
      lastDispatched.set(request.socket, { request, response })
      if (unreadableTransferEncoding(request.headers["transfer-encoding"])) dispatchedUnreadable.add(request.socket)
      if (request.headers["transfer-encoding"] !== undefined && request.httpVersion === "1.0") faultyFraming.add(request.socket)
      if (server.listenerCount("request") > 1 || response.headersSent) return
      request.resume()
      response.setHeader("retry-after", "1")
      writeRefusal(response, 503, "service_unavailable", "The server is starting or stopping")
    })
    server.on("clientError", answerClientError(arrival, maxHeadBytes))
    // `Expect` other than 100-continue, and CONNECT (this is no proxy): node's answers were an empty
    // 417 and a closed connection; the suite's are JSON like every refusal.
    server.on("checkExpectation", (request, response) => {
      request.resume()
      writeRefusal(response, 417, "expectation_failed", "Only `Expect: 100-continue` is supported")
    })
    server.on("connect", (_request, socket: Duplex) =>
      endSocket(socket, 405, "method_not_allowed", "CONNECT is not supported: this server is no proxy"))

    const ServerLive = Layer.effect(
      HttpServer.HttpServer,
      Effect.gen(function*() {
        // `make` adds, to this scope, a finalizer waiting for `server.close()` to complete, i.e. for
        // every connection to end. Ours is added after it, so it runs before it: by then the drain
        // (bounded by `gracefulShutdownTimeout`, in the router layer's scope, which closes first) is
        // over and request fibers are interrupted; whatever connection is left is cut.
        const httpServer = yield* NodeHttpServer.make(() => server, {
          port,
          host,
          gracefulShutdownTimeout: shutdownTimeout
        }).pipe(
          Effect.mapError((error) => listenError({ name: options.name, host, port, portVariable: options.portVariable }, error))
        )
        yield* Effect.addFinalizer(() =>
          Effect.andThen(Effect.sync(() => server.closeAllConnections()), Effect.logInfo("HTTP server stopped"))
        )
        yield* Effect.logInfo(`Listening on ${HttpServer.formatAddress(httpServer.address)}`)
        return httpServer
      }).pipe(Effect.annotateLogs({ service: options.name }))
    )

    // `server.listening` turns false as soon as shutdown calls `server.close()`.
    const app = withConventions(routes, { name: options.name, closing: () => !server.listening, queryAsSent: options.queryAsSent ?? [] })
    return HttpRouter.serve(app, { disableLogger: true, disableListenLog: true, routerConfig: ROUTER_CONFIG }).pipe(
      Layer.provide(NodeHttpServer.layerHttpServices),
      Layer.provideMerge(ServerLive)
    )
  }))

/**
 * A service's server and its background work (a delivery worker, a scheduled ingest, indexing), the
 * work built once the server listens: a start whose port is taken then fails before it claims, ingests
 * or indexes anything. (A second `svc start queue` on a taken port started its worker, and could
 * claim messages, before it failed on the port.)
 */
export const withBackground = <A, E, R, B, E2, R2>(server: Layer.Layer<A, E, R>, background: Layer.Layer<B, E2, R2>) =>
  background.pipe(Layer.provideMerge(server))

/**
 * A client gets this long to send its request line and headers, and this long for the whole request
 * with its body (node's defaults: 60 s and 300 s, checked every 30 s, so a stalled body held its
 * connection for up to 5.5 minutes). The largest body a route takes is 10 MiB (queue batches): within
 * a minute at ~1.4 Mbit/s. Answering may take longer (an indexing RPC streams for minutes): only the
 * request's arrival is bounded.
 */
export const HEADERS_TIMEOUT_MS = 20_000
export const REQUEST_TIMEOUT_MS = 60_000

/**
 * A request node's parser refuses never reaches the router (headers over the server's bound, 16 KiB
 * unless raised, a request line it cannot read, a request that did not arrive in time): it gets the
 * suite's error body too, instead of node's empty answer.
 */
const answerClientError = (arrival: NonNullable<ServeOptions["arrival"]>, maxHeadBytes: number) =>
(error: Error & { readonly code?: string }, socket: Duplex) => {
  if (error.code === "HPE_INVALID_TRANSFER_ENCODING" && dispatchedUnreadable.has(socket)) return
  // The fault is in the body of a request the routes have already answered (a malformed chunk, a
  // body that stopped arriving): that answer is the request's one; a 400 (or 408) written after it
  // was a second answer to one request (`GET /services` with a bad chunk got 200, then 400; a 401
  // kept alive was followed by a 400 no request asked for) — outside sweep. Node's own handler
  // writes nothing once a response has begun either. The connection cannot be read on: closed.
  const dispatched = lastDispatched.get(socket)
  if (dispatched !== undefined && !dispatched.request.complete && dispatched.response.headersSent) {
    socket.destroy()
    return
  }
  // Bytes after a request that closes the connection (`Connection: close`, HTTP/1.0): RFC 9112 §9.6
  // answers that request and ignores the rest; node's parser fails on them, and a 400 here went out
  // in place of the answer still being made (`GET /offers` with `Connection: close` and a second
  // request pipelined behind it got only "could not be parsed as HTTP") — outside protocol audit. The
  // answer carries `Connection: close`: node closes the connection once it is sent.
  if (error.code === "HPE_CLOSED_CONNECTION") return
  if (error.code === "ECONNRESET" || !socket.writable) {
    socket.destroy()
    return
  }
  const [status, code, message] = clientErrorAnswer(error.code, arrival, maxHeadBytes)
  endSocket(socket, status, code, message)
}

const clientErrorAnswer = (
  code: string | undefined,
  arrival: NonNullable<ServeOptions["arrival"]>,
  maxHeadBytes: number
): readonly [number, string, string] => {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return [
        431,
        "request_header_fields_too_large",
        `The request line and headers are larger than the server accepts (${
          maxHeadBytes % 1024 === 0 ? `${maxHeadBytes / 1024} KiB` : `${maxHeadBytes} bytes`
        })`
      ]
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return [
        408,
        "request_timeout",
        `The request did not arrive in time: its headers within ${arrival.headersMs / 1000} s, all of it within ${arrival.requestMs / 1000} s`
      ]
    case "HPE_INVALID_METHOD":
      return [400, "invalid_request", "The request method is not an HTTP method this server knows"]
    // The faults a client can fix, named (all of them read "could not be parsed as HTTP" before: a
    // query sent unencoded, `?make=Škoda` as curl sends it, left nothing to go on)
    case "HPE_INVALID_URL":
      return [
        400,
        "invalid_request",
        "The request target is not a path starting with \"/\", or holds a character a URL cannot carry (a space, a control character or a byte over 0x7F): percent-encode it as UTF-8"
      ]
    case "HPE_INVALID_HEADER_TOKEN":
      return [
        400,
        "invalid_request",
        "A header holds a character HTTP does not allow (a control character such as NUL, CR or LF in a value, a space or separator in a name)"
      ]
    case "HPE_INVALID_TRANSFER_ENCODING":
      return [400, "invalid_request", TRANSFER_ENCODING_REFUSAL]
    case "HPE_INVALID_CONTENT_LENGTH":
      return [400, "invalid_request", "Content-Length is not a whole number of bytes, or is sent beside Transfer-Encoding: send one of them"]
    case "HPE_UNEXPECTED_CONTENT_LENGTH":
      return [400, "invalid_request", "Content-Length is given twice: send it once"]
    case "HPE_INVALID_CHUNK_SIZE":
    case "HPE_INVALID_CHUNK_EXTENSIONS":
      return [400, "invalid_request", "The chunked body is malformed (Transfer-Encoding: chunked)"]
    case "HPE_CR_EXPECTED":
    case "HPE_LF_EXPECTED":
      return [400, "invalid_request", "A line of the request (its request line, a header or a chunk's size) does not end with CRLF"]
    case "HPE_INVALID_VERSION":
      return [400, "invalid_request", "The request line is not HTTP/1.1 (nor 1.0), or does not end with CRLF"]
    default:
      return [400, "invalid_request", "The request could not be parsed as HTTP"]
  }
}

const TRANSFER_ENCODING_REFUSAL =
  "Transfer-Encoding is not one this server reads: chunked, given once and last, never beside Content-Length"

/**
 * A request's `Transfer-Encoding` whose last coding is not chunked (`identity`, `gzip`, `xchunked`):
 * its body's length cannot be known, and RFC 9112 §6.3 answers 400 and closes the connection. Node's
 * parser fails such a request only *after* handing it to the routes, which ran it with an empty body
 * (`POST /admin/ingest` with `Transfer-Encoding: identity` started an ingest, answered 202 and then
 * 400: two answers to one request, the body's bytes read as the next request) — outside protocol audit.
 */
const unreadableTransferEncoding = (value: string | undefined): boolean => {
  if (value === undefined || value.trim() === "") return false
  return value.split(",").map((coding) => coding.trim().toLowerCase()).at(-1) !== "chunked"
}

/** Sockets whose request {@link unreadableTransferEncoding} the routes answer (node's parser fails it too). */
const dispatchedUnreadable = new WeakSet<object>()

/** The last request node handed to the routes on each socket, and its response (answerClientError). */
const lastDispatched = new WeakMap<object, { readonly request: NodeHttp.IncomingMessage; readonly response: NodeHttp.ServerResponse }>()

/** Answers on a raw socket (no response object exists yet) and closes it. */
const endSocket = (socket: Duplex, status: number, code: string, message: string) => {
  const body = JSON.stringify({ code, message })
  socket.end(
    `HTTP/1.1 ${status} ${NodeHttp.STATUS_CODES[status]}\r\ncontent-type: application/json\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`
  )
}

/** Answers through node's response (before the router saw the request) and closes the connection. */
const writeRefusal = (response: NodeHttp.ServerResponse, status: number, code: string, message: string) => {
  const body = JSON.stringify({ code, message })
  response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body), connection: "close" })
  response.end(body)
}

/** {@link serve} for one `HttpApi`: `serve(apiRoutes(options), options)`. */
export const serveApi = <Id extends string, Groups extends HttpApiGroup.Constraint, A, E, R>(
  options: ServeOptions & ApiRoutesOptions<Id, Groups, A, E, R>
) => serve(apiRoutes(options), options)

/**
 * The same routes and conventions without a socket: `handler(Request) => Promise<Response>`, for
 * fast in-process tests. Call `dispose` when done.
 */
export const toWebHandler = <A, E>(
  routes: Layer.Layer<A, E, HttpRouter.HttpRouter | HttpServerServices>,
  options?: { readonly name?: string | undefined; readonly queryAsSent?: ReadonlyArray<string> | undefined }
) =>
  HttpRouter.toWebHandler(
    withConventions(routes, { name: options?.name ?? "web", closing: () => false, queryAsSent: options?.queryAsSent ?? [] }).pipe(
      Layer.provide(HttpServer.layerServices)
    ),
    { disableLogger: true, routerConfig: ROUTER_CONFIG }
  )

type HttpServerServices = Layer.Success<typeof HttpServer.layerServices>

/**
 * Runs a service's layer as the process: until SIGTERM/SIGINT, then shuts down (see {@link serve})
 * and exits with 0 (a signal is the normal way to stop a server, not a failure; `NodeRuntime.runMain`
 * alone would exit 130). A failure to start exits 1.
 *
 * If some finalizer hangs anyway (an uninterruptible handler, a stuck pool), a watchdog armed by the
 * signal exits with 1 after `SHUTDOWN_TIMEOUT` plus 5 seconds, so the process never outlives its bound.
 */
export const runServer = <A, E>(layer: Layer.Layer<A, E>): void =>
  launchServer(layer).pipe(NodeRuntime.runMain({ teardown: exitZeroOnSignal }))

/**
 * The effect behind {@link runServer}, for a process entry that does more around it (the `svc`
 * command): runs `layer` until interrupted, with the shutdown watchdog armed by SIGTERM/SIGINT.
 * Run it with `NodeRuntime.runMain({ teardown: exitZeroOnSignal })`.
 */
export const launchServer = <A, E, R>(layer: Layer.Layer<A, E, R>): Effect.Effect<never, E | Config.ConfigError, R> =>
  Effect.gen(function*() {
    const timeout = yield* ShutdownTimeout
    const armWatchdog = () => {
      setTimeout(() => {
        process.stderr.write("Shutdown did not complete in time, exiting\n")
        process.exit(1)
      }, Duration.toMillis(timeout) + 5_000).unref()
    }
    process.once("SIGTERM", armWatchdog)
    process.once("SIGINT", armWatchdog)
    return yield* Layer.launch(layer)
  })

/** Teardown for `NodeRuntime.runMain`: a server stopped by a signal exits 0, not 130. */
export const exitZeroOnSignal: Runtime.Teardown = (exit, onExit) =>
  Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)

// -----------------------------------------------------------------------------
// Conventions: one global router middleware
// -----------------------------------------------------------------------------

/** The routes with the conventions around them; the routes' methods noted for 405 / OPTIONS (RouteTable.ts). */
interface ConventionOptions {
  readonly name: string
  readonly closing: () => boolean
  /** See {@link ServeOptions.queryAsSent}. */
  readonly queryAsSent: ReadonlyArray<string>
}

const withConventions = <A, E, R>(routes: Layer.Layer<A, E, R>, options: ConventionOptions) =>
  Layer.merge(Layer.provide(routes, recording), conventions(options)).pipe(Layer.provide(RouteTable.layer))

// A global router middleware wraps the routing itself, so it sees unknown routes and decode failures
// and can still change the response. (`HttpRouter.serve`'s own `middleware` option cannot: it runs
// after the response has been sent.)
const conventions = (options: ConventionOptions) =>
  HttpRouter.middleware(
    Effect.map(RouteTable, (routes) => (app: Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled>) =>
      Effect.withFiber((fiber) => {
        const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
        const requestId = saneRequestId(request.headers["x-request-id"]) ?? crypto.randomUUID()
        const startedAt = performance.now()
        const coding = unsupportedCoding(request)
        const twice = repeatedHeader(request)
        const undecodable = undecodableQuery(request.url, (url) => {
          const route = routes.routeOf(request.method, url)
          return route !== undefined && options.queryAsSent.includes(route)
        })
        const target = unreadableTarget(request)
        const version = (request.source as { readonly httpVersion?: unknown }).httpVersion
        const handled: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown> =
          typeof version === "string" && !SERVED_VERSIONS.has(version)
            ? Effect.succeed(unsupportedVersion(version))
            : unreadableTransferEncoding(request.headers["transfer-encoding"])
            ? Effect.succeed(unreadableFraming(TRANSFER_ENCODING_REFUSAL))
            : faultyFraming.has((request.source as NodeHttp.IncomingMessage).socket)
            ? Effect.succeed(unreadableFraming(HTTP10_TRANSFER_ENCODING_REFUSAL))
            : target !== undefined
            ? Effect.fail(new InvalidRequest({ issues: [{ in: "path", parameter: "", problem: target }] }))
            : request.url === "*"
            ? Effect.succeed(HttpServerResponse.empty({ status: 204 }))
            : lacksHost(request)
          ? Effect.fail(missingHost)
          : twice !== undefined
          ? Effect.fail(repeated(twice))
          : request.url.includes("#")
          ? Effect.fail(fragmentInTarget)
          : request.url.includes(";") && (routes.cutAtSemicolon(request.method, request.url) || probeBeforeSemicolon(request))
          ? Effect.fail(semicolonInPath)
          : undecodable !== undefined
          ? Effect.fail(new InvalidRequest({ issues: [{ in: "query", parameter: undecodable, problem: "is not valid percent-encoded UTF-8" }] }))
          : options.closing() && isProbe(request, "/ready")
          ? Effect.succeed(Readiness.stopping())
          : coding !== undefined
          ? Effect.succeed(HttpServerResponse.text(
            `${coding} is not supported: send the body uncompressed`,
            { status: 415 }
          ))
          : app
        return handled.pipe(
          Effect.matchCauseEffect({
            onSuccess: (response) => Effect.succeed([response, undefined] as const),
            onFailure: (cause) => fromCause(cause, request, requestId, routes, options.closing())
          }),
          Effect.flatMap(([response, cause]) => {
            const final = finalize(response, requestId, options.closing() || bodyLeftUnread(request))
            const line = `${request.method} ${redactUrl(request.url)} ${final.status} ${
              Math.round(performance.now() - startedAt)
            }ms`
            // The only log line of the request; for a 5xx it carries the cause (stack and all).
            return Effect.as(cause === undefined ? Effect.logInfo(line) : Effect.logError(line, cause), final)
          }),
          Effect.annotateLogs({ service: options.name, requestId })
        )
      }) as Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled>),
    // The cast: global middleware is typed to never handle errors, so that the errors stay visible in
    // the types of the routes; handling *all* of them into responses is precisely this middleware's job.
    { global: true }
  )

/**
 * A request body's `Content-Encoding` other than identity, or a transfer coding other than chunked,
 * as the header to name: no route decodes one, and reading the compressed bytes as the body stored
 * garbage (a publish forwarded gzip bytes labelled JSON). Refused with 415 before any route runs.
 */
const unsupportedCoding = (request: HttpServerRequest.HttpServerRequest): string | undefined => {
  const value = request.headers["content-encoding"]?.trim().toLowerCase()
  if (value !== undefined && value !== "" && value !== "identity") return `Content-Encoding ${JSON.stringify(value.slice(0, 50))}`
  // a transfer coding besides chunked (`gzip, chunked`): node removes the chunking only, and the route read an empty body
  const codings = (request.headers["transfer-encoding"] ?? "").split(",").map((coding) => coding.trim().toLowerCase())
  const other = codings.filter((coding) => coding !== "" && coding !== "chunked" && coding !== "identity")
  return other.length === 0 ? undefined : `Transfer-Encoding ${JSON.stringify(other.join(", ").slice(0, 50))}`
}

/**
 * The HTTP versions this server speaks. Node's parser also takes an `HTTP/2.0` or `HTTP/0.9` request
 * line and ran the route as if it were 1.1; a client that means another protocol gets 505 (RFC 9110
 * §15.6.6) and the connection closed, since what follows may not be HTTP/1 framing.
 */
const SERVED_VERSIONS: ReadonlySet<string> = new Set(["1.0", "1.1"])

const unsupportedVersion = (version: string) =>
  HttpServerResponse.text(`HTTP/${version.slice(0, 10)} is not supported: send HTTP/1.1`, {
    status: 505,
    headers: { connection: "close" }
  })

/**
 * Why the request target is none a server reads (RFC 9112 §3.2), if it is not: `*` is OPTIONS's alone
 * (`OPTIONS *` is answered 204 for the server as a whole; `GET *` served the uploads page), and an
 * absolute-form target (`GET http://host/health`, which a server must take) must be an http(s) URL: one
 * with port 99999 or host `%zz` was a 500 with an empty body and no log line on every server.
 */
const unreadableTarget = (request: HttpServerRequest.HttpServerRequest): string | undefined => {
  const url = request.url
  if (url.startsWith("/")) return undefined
  if (url === "*") return request.method === "OPTIONS" ? undefined : "is '*', which only OPTIONS takes: send a path"
  const absolute = URL.parse(url)
  if (absolute === null) return "is neither a path (/…) nor an absolute URL this server can read"
  // `GET ftp://x/offers` was served as `/offers`: this server is reached over http only
  return absolute.protocol === "http:" || absolute.protocol === "https:"
    ? undefined
    : `is an absolute URL with the scheme ${JSON.stringify(absolute.protocol.slice(0, 20))}: this server speaks http and https`
}

/**
 * A body whose length this server cannot trust: one 400, the route never run, and the connection
 * closed, since whatever follows on it cannot be told apart from the body (RFC 9112 §6.3).
 */
const unreadableFraming = (message: string) =>
  HttpServerResponse.jsonUnsafe({ code: "invalid_request", message }, { status: 400, headers: { connection: "close" } })

/**
 * Connections that sent an HTTP/1.0 request with `Transfer-Encoding`: RFC 9112 §6.1 has a server treat
 * its framing as faulty (1.0 has no transfer codings; an intermediary may have framed it otherwise)
 * and close the connection. Node read the body as chunked and ran the route, and for a 1.0 keep-alive
 * read the bytes after it as further requests and ran those too. Every request of such a connection
 * is refused, the first answered, and the connection closed.
 */
const faultyFraming = new WeakSet<object>()

const HTTP10_TRANSFER_ENCODING_REFUSAL =
  "Transfer-Encoding is not HTTP/1.0's: send the body with Content-Length, or the request as HTTP/1.1"

/** HTTP/1.1 requires a Host header (RFC 9112 §3.2); HTTP/1.0 did not. */
const lacksHost = (request: HttpServerRequest.HttpServerRequest) =>
  request.headers["host"] === undefined && (request.source as { readonly httpVersion?: unknown }).httpVersion === "1.1"

const missingHost = new InvalidRequest({ issues: [{ in: "header", parameter: "host", problem: "is required in HTTP/1.1" }] })

/**
 * The first header sent more than once of those node keeps only one of, without saying so: `Host`
 * (RFC 9112 §3.2 answers a second with 400; `/mcp`'s allowed-hosts check judged one of two names the
 * request carried), `Authorization` (the first credential was checked, the other silently dropped)
 * and `Content-Type` (a body declared both JSON and text was read as whichever came first).
 */
const SINGLE_HEADERS: ReadonlySet<string> = new Set(["host", "authorization", "content-type"])

const repeatedHeader = (request: HttpServerRequest.HttpServerRequest): string | undefined => {
  const raw = (request.source as { readonly rawHeaders?: unknown }).rawHeaders
  if (!Array.isArray(raw)) return undefined
  const seen = new Set<string>()
  for (let i = 0; i < raw.length; i += 2) {
    const name = String(raw[i]).toLowerCase()
    if (!SINGLE_HEADERS.has(name)) continue
    if (seen.has(name)) return name
    seen.add(name)
  }
  return undefined
}

const repeated = (name: string) => new InvalidRequest({ issues: [{ in: "header", parameter: name, problem: "is given more than once: send one" }] })

/**
 * The first query parameter (its name as far as it reads) whose name or value is not valid
 * percent-encoded UTF-8 (`?make=%FF`, `?topic=%C0%AF`): read as the literal text `%FF`, it matched
 * nothing and answered 200, where the same escape in a path is a 400 (an outside sweep). None on a
 * route that reads the query as sent (`readAsSent`: looked up only for a query with a `%`).
 */
const undecodableQuery = (url: string, readAsSent: (url: string) => boolean): string | undefined => {
  const at = url.indexOf("?")
  if (at === -1) return undefined
  const query = url.slice(at + 1).split("#", 1)[0]!
  if (!query.includes("%") || readAsSent(url)) return undefined
  for (const part of query.split("&")) {
    const [name = "", value = ""] = part.split(/=(.*)/s)
    const readName = decodedQueryPart(name)
    if (readName === undefined || decodedQueryPart(value) === undefined) return (readName ?? name).slice(0, 100)
  }
  return undefined
}

/** A query's name or value as a form decodes it (`+` a space), or undefined when it is not UTF-8. */
const decodedQueryPart = (text: string): string | undefined => {
  try {
    return decodeURIComponent(text.replaceAll("+", " "))
  } catch {
    return undefined
  }
}

/**
 * A raw `#` in the request target: a request has no fragment (RFC 9112 §3.2), and the router cut the
 * path there, so `DELETE /v2/queues/zz#x` deleted queue `zz` (an outside re-probe).
 */
const fragmentInTarget = new InvalidRequest({
  issues: [{ in: "path", parameter: "", problem: "holds a '#', which a request target cannot: send it percent-encoded (%23)" }]
})

/** A `;` the router would cut the path at (RouteTable.cutAtSemicolon): refused before any handler runs. */
const semicolonInPath = new InvalidRequest({
  issues: [{ in: "path", parameter: "", problem: "holds a ';', which this server does not take in a path: send it percent-encoded (%3B)" }]
})

/**
 * `/health;x` or `/ready;x` where the conventions answer the probes (mcp, uploads): a `;` refused as on
 * a server that routes them, whose router would cut the path there (it was 400 on four servers, 404
 * on two).
 */
const probeBeforeSemicolon = (request: HttpServerRequest.HttpServerRequest): boolean => {
  const path = pathOf(request.url)
  const semicolon = path.indexOf(";")
  return semicolon >= 0 && ["/health", "/ready"].some((probe) => isProbe(request, probe, path.slice(0, semicolon)))
}

/** An incoming id is echoed only if short and plain: it ends up in logs and response headers. */
const saneRequestId = (value: string | undefined): string | undefined =>
  value !== undefined && /^[\w.:-]{1,128}$/.test(value) ? value : undefined

type Rendered = readonly [HttpServerResponse.HttpServerResponse, Cause.Cause<unknown> | undefined]

/** The response for a failed request, and the cause to log when it is the server's fault. */
const fromCause = (
  cause: Cause.Cause<unknown>,
  request: HttpServerRequest.HttpServerRequest,
  requestId: string,
  routes: RouteTable["Service"],
  closing: boolean
): Effect.Effect<Rendered> => {
  const reason = cause.reasons.find((reason) => reason._tag === "Fail" || reason._tag === "Die")
  if (reason === undefined) {
    // Interrupted only: the client went away (nobody reads the answer), or the server is shutting
    // down and the request outlived SHUTDOWN_TIMEOUT. Anything else interrupted the request from
    // within (effect's RPC server did, for an id given twice, after running the first request): a
    // fault of ours, not a shutdown to retry after.
    const clientAbort = cause.reasons.some((reason) => reason.annotations.has(HttpServerError.ClientAbort.key))
    if (clientAbort) return Effect.succeed([HttpServerResponse.empty({ status: 499 }), undefined])
    if (closing) return clientError(new ServiceUnavailable({ message: "The server is shutting down" }))
    return Effect.map(
      HttpServerRespondable.toResponse(new InternalError({ requestId })),
      (response): Rendered => [response, cause]
    )
  }
  const error = reason._tag === "Fail" ? reason.error : reason.defect
  if (HttpApiError.HttpApiSchemaError.is(error)) {
    const location = slotLocation[error.kind]
    // Body / ResponseHeaders: the *response* failed to encode, a bug of ours.
    if (location !== undefined) return clientError(new InvalidRequest({ issues: toIssues(error.cause, location) }))
  } else if (HttpServerError.isHttpServerError(error)) {
    const failure = error.reason
    if (failure._tag === "RouteNotFound") {
      const path = pathOf(request.url)
      if (isProbe(request, "/health")) {
        // Liveness for every service, unless it routes /health itself (then it never gets here).
        return Effect.succeed([HttpServerResponse.jsonUnsafe({ status: "ok" }), undefined])
      }
      if (isProbe(request, "/ready")) {
        // Readiness of a service without a `Readiness.route`: it depends on nothing it could probe.
        return Effect.succeed([Readiness.response({ status: "ready", checks: {}, missing: [] }), undefined])
      }
      // The router gives up on a path it cannot read (effect's RouteNotFound then): a malformed request,
      // not a missing route
      const unreadable = unreadablePath(path, failure.description)
      if (unreadable !== undefined) {
        return clientError(new InvalidRequest({ issues: [{ in: "path", parameter: "", problem: unreadable }] }))
      }
      // A path routed for other methods: 405 naming them (`Allow`), or for OPTIONS the list itself; the
      // liveness answer above counts as a route. `Allow` names OPTIONS too: every routed path answers it.
      const routed = routes.allowed(request.url)
      const probe = routedPath(request.url)
      const allowed = routed.length === 0 && (probe === "/health" || probe === "/ready") ? ["GET", "HEAD"] : routed
      if (allowed.length > 0) {
        const allow = [...new Set([...allowed, "OPTIONS"])].join(", ")
        return Effect.succeed([
          request.method === "OPTIONS"
            ? HttpServerResponse.empty({ status: 204, headers: { allow } })
            : HttpServerResponse.text(`${request.method} is not allowed on ${pathOf(request.url)}: it takes ${allow}`, {
              status: 405,
              headers: { allow }
            }),
          undefined
        ])
      }
      // as sent: `/./mcp` is not `/mcp`, which the router would have found
      const asSent = request.url.startsWith("/") ? request.url.split(/[?#]/)[0]! : path
      const shown = asSent.length > MAX_PATH_SHOWN ? `${asSent.slice(0, MAX_PATH_SHOWN)}…` : asSent
      return clientError(new RouteNotFound({ message: `No route for ${request.method} ${shown}` }))
    }
    if (failure._tag === "RequestParseError") {
      return failure.reason === "BodyTooLarge"
        ? Effect.succeed([HttpServerResponse.empty({ status: 413 }), undefined]) // body filled by finalize
        : clientError(
          new InvalidRequest({ issues: [{ in: "body", parameter: "", problem: "could not be read" }] })
        )
    }
  } else if (reason._tag === "Fail" && Schema.isSchemaError(error)) {
    // A raw route decoding its request with `HttpServerRequest.schema*`: the location is unknown.
    return clientError(new InvalidRequest({ issues: toIssues(error, "body") }))
  }
  if (HttpServerRespondable.isRespondable(error)) {
    // Our ApiError classes and effect's HttpApiError.* (whose empty bodies finalize fills in). A
    // `ServiceUnavailable` a handler refuses with on purpose (the admin API without ADMIN_TOKEN, a
    // draining server) is a state, not a fault: logged like a 4xx, without an ERROR and its stack.
    const refusal = reason._tag === "Fail" && error instanceof ServiceUnavailable
    return Effect.map(
      HttpServerRespondable.toResponse(error),
      (response): Rendered => [response, response.status >= 500 && !refusal ? cause : undefined]
    )
  }
  if (isDatabaseUnavailable(error)) {
    // Postgres cannot be reached or cannot take work now (stopped, restarting, out of disk): not a bug
    // of the request or of the code, and over once it is back. The cause is logged like a 500's.
    return Effect.map(
      HttpServerRespondable.toResponse(new ServiceUnavailable({ message: DATABASE_UNAVAILABLE_MESSAGE })),
      (response): Rendered => [HttpServerResponse.setHeader(response, "retry-after", String(DATABASE_RETRY_AFTER_SECONDS)), cause]
    )
  }
  return Effect.map(
    HttpServerRespondable.toResponse(new InternalError({ requestId })),
    (response): Rendered => [response, cause]
  )
}

/** A GET or HEAD of the probe path `path` (`/health`, `/ready`). */
const isProbe = (request: HttpServerRequest.HttpServerRequest, path: string, url = request.url): boolean =>
  (request.method === "GET" || request.method === "HEAD") && routedPath(url) === path

/**
 * The path as the router matches it (ROUTER_CONFIG keeps effect's defaults: case, duplicate and
 * trailing slashes ignored), so that `/health/`, `//health` and `/HEALTH` are the probe on a server
 * that leaves it to the conventions (mcp, uploads) as on one that routes it: they were 404 there and
 * 200 on listings, queue and docs-api.
 */
const routedPath = (url: string): string => pathOf(url).toLowerCase().replace(/\/{2,}/g, "/").replace(/(?<=.)\/$/, "")

/** The `Retry-After` of a 503 for a database that is unavailable. */
const DATABASE_RETRY_AFTER_SECONDS = 5

const clientError = (error: HttpServerRespondable.Respondable): Effect.Effect<Rendered> =>
  Effect.map(HttpServerRespondable.toResponse(error), (response): Rendered => [response, undefined])

const slotLocation: Partial<Record<HttpApiError.HttpApiSchemaError["kind"], RequestIssue["in"]>> = {
  Params: "path",
  Query: "query",
  Headers: "header",
  Payload: "body"
}

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1({
  leafHook: (issue) => issue._tag === "MissingKey" ? "missing" : SchemaIssue.defaultLeafHook(issue)
})

/**
 * One issue per bad parameter. The messages come from the schemas ("Expected an integer, got
 * \"1.5\""); the received value is in them when the API carries `ApiConventions` (`reportInput`).
 * `InvalidRequest` keeps the first `MAX_ISSUES` of them and counts the rest (`@svc/schema` Errors.ts).
 */
export const toIssues = (error: Schema.SchemaError, location: RequestIssue["in"]): Array<RequestIssue> =>
  formatIssues(error.issue).issues.map(({ message, path }) => {
    const parameter = formatPath(path ?? [])
    // The received value of a parameter named like a secret (svc_token, x-api-key) is not echoed.
    const problem = UrlParams.isRedactedName(parameter, redactedNames) ? message.replace(/, got .*$/s, "") : message
    return { in: location, parameter, problem: truncate(problem.charAt(0).toLowerCase() + problem.slice(1)) }
  })

const formatPath = (path: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }>): string =>
  path.map((segment) => typeof segment === "object" ? segment.key : segment).reduce<string>(
    (out, key) =>
      typeof key === "number" ? `${out}[${key}]` : out === "" ? String(key) : `${out}.${String(key)}`,
    ""
  )

// A whole JSON body can end up in a message ("expected an object, got {...}").
const truncate = (text: string): string => text.length > 300 ? `${text.slice(0, 297)}...` : text

/**
 * Last touches on every response: a JSON body for error responses that have none (effect's built-in
 * errors answer with empty bodies, a wrong content type with text), the request id, and
 * `Connection: close` while shutting down (so keep-alive connections end with their request) or when
 * the connection ends with this answer anyway ({@link bodyLeftUnread}).
 */
const finalize = (
  response: HttpServerResponse.HttpServerResponse,
  requestId: string,
  closing: boolean
): HttpServerResponse.HttpServerResponse => {
  if (response.status >= 400 && needsJsonBody(response)) {
    response = HttpServerResponse.setBody(response, HttpBody.jsonUnsafe(errorBody(response, requestId)))
  }
  response = HttpServerResponse.setHeader(response, "x-request-id", requestId)
  return closing ? HttpServerResponse.setHeader(response, "connection", "close") : response
}

/**
 * Whether the request announced a body that the answer comes before the end of (a refusal sent before
 * reading it: a 401, a 413 of a chunked body cut at its cap). node closes such a connection after the
 * answer rather than read the rest, so the answer says `Connection: close`; it said keep-alive, and the
 * socket closed ~10 ms later (an outside audit).
 */
const bodyLeftUnread = (request: HttpServerRequest.HttpServerRequest): boolean => {
  const announced = request.headers["transfer-encoding"] !== undefined || Number(request.headers["content-length"] ?? 0) > 0
  return announced && !(request.source as NodeHttp.IncomingMessage).complete
}

const needsJsonBody = (response: HttpServerResponse.HttpServerResponse): boolean =>
  response.body._tag === "Empty" ||
  (response.body._tag === "Uint8Array" && response.body.contentType.startsWith("text/plain"))

const errorBody = (response: HttpServerResponse.HttpServerResponse, requestId: string) => {
  if (response.status === 500) return { code: "internal_error", message: `Internal error (request id ${requestId})` }
  if (response.status === 400) return { code: "invalid_request", message: textOf(response) ?? "Invalid request" }
  const phrase = NodeHttp.STATUS_CODES[response.status] ?? "Error"
  const text = textOf(response)
  return { code: phrase.toLowerCase().replace(/\W+/g, "_"), message: (text === undefined ? undefined : unsupportedType(text)) ?? text ?? phrase }
}

/**
 * effect's own 415 for an `HttpApi` payload ("Unsupported content-type: text/plain", and for
 * `Content-Type: ;;;` "Unsupported content-type: ", naming nothing) in the suite's words.
 */
const unsupportedType = (text: string): string | undefined => {
  const type = /^Unsupported content-type: (.*)$/s.exec(text)?.[1]
  if (type === undefined) return undefined
  return type === ""
    ? "The Content-Type header names no media type: send the one this route takes (its request body in /openapi.json)"
    : `Content-Type ${JSON.stringify(type.slice(0, 100))} is not supported by this route: see its request body in /openapi.json`
}

const textOf = (response: HttpServerResponse.HttpServerResponse): string | undefined =>
  response.body._tag === "Uint8Array" && response.body.body.length > 0
    ? new TextDecoder().decode(response.body.body)
    : undefined

/**
 * The path of a request target as sent: an origin-form target (`/…`) up to its query. `new URL` read
 * `//evil.invalid/health` as a host and the path `/health` (answered 200) and named `//admin/ingest`
 * `/ingest` in a 405.
 */
const pathOf = (url: string): string => url.startsWith("/") ? url.split(/[?#]/, 1)[0]! : new URL(url, "http://localhost").pathname

/** A 404's message echoes at most this much of the path. */
const MAX_PATH_SHOWN = 200

/**
 * Why the router could not read `path`, if that is why it found no route: a path parameter longer
 * than its limit (effect says so in the failure's description), or percent-encoding that is not UTF-8.
 */
const unreadablePath = (path: string, description: string | undefined): string | undefined => {
  const limit = description === undefined ? undefined : /maxParamLength \((\d+)\)/.exec(description)?.[1]
  if (limit !== undefined) return `a segment is longer than ${limit} characters`
  try {
    decodeURI(path)
    return undefined
  } catch {
    return "is not valid percent-encoded UTF-8"
  }
}

/** Query parameters that may hold secrets never reach the logs. */
const redactUrl = (url: string): string => UrlParams.redactUrl(url, redactedNames)

const redactedNames: ReadonlyArray<string | RegExp> = [
  ...UrlParams.CurrentRedactedNames.defaultValue(),
  // …but not the docs API's `tokens`, a budget (a count of LLM tokens), which operators need to see.
  /^(?!tokens$).*token/i,
  /key/i,
  /secret/i,
  /passw/i,
  /signature/i,
  /credential/i,
  /auth/i
]
