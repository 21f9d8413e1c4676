/**
 * The MCP server over stateless Streamable HTTP (spec/2 "Endpoints"):
 *
 * - `POST /mcp`: a fresh server and transport per request, no `Mcp-Session-Id`, JSON answers (no SSE
 *   stream to keep alive); the caller's key (`Authorization: Bearer`, `X-Svc-API-Key` or `X-API-Key`)
 *   is sent on to the REST API, and the caller's address too, signed (`ClientAddress.ts`), so the
 *   API's anonymous rate limit is per MCP client.
 * - Every `/mcp` route first validates `Host` and `Origin` (MCP 2025-11-25 transport security, DNS
 *   rebinding): `MCP_ALLOWED_HOSTS` (default `localhost`, `127.0.0.1`, `[::1]`, any port, plus the
 *   host of `MCP_PUBLIC_URL`), `MCP_ALLOWED_ORIGINS` (default: http(s) origins on those three local
 *   names, any port, plus the origin of `MCP_PUBLIC_URL`). A request without `Origin` (not from a
 *   browser) is judged on `Host` alone. Refused: 403 with a JSON-RPC error body.
 * - CORS, so that a browser page at an allowed origin can use `/mcp`: `OPTIONS` is a preflight (204
 *   with the methods, the request headers MCP clients send, a max-age) and every answer to an allowed
 *   `Origin` names it in `Access-Control-Allow-Origin` and exposes MCP's response headers; all carry
 *   `Vary: Origin`. A disallowed origin gets no grant, and its 403. The RFC 9728 metadata (public, not
 *   Host-checked) is granted to allowed origins the same way; `/ping` is not.
 * - `POST /mcp` checks its headers before reading the body: `Accept` must list `application/json` and
 *   `text/event-stream` (MCP), a range that covers them such as `*\/*` counts (406 otherwise), then
 *   `Content-Type` must be `application/json` with no charset but UTF-8 (415, as the SDK's transport
 *   answers a wrong type: JSON-RPC `-32000`), then the length (413, below); only then is the
 *   body read, and judged: empty or not JSON `-32700`, not JSON-RPC `-32600` (400).
 * - The body is capped at `MCP_MAX_BODY_BYTES` (default 1 MiB): a `Content-Length` over it is 413
 *   before anything is read; a chunked body is read up to the cap and refused (413) the moment it
 *   passes it, the rest never buffered.
 * - A batch (a JSON array of messages) is answered with an array of the responses to its requests,
 *   even when there is one (the SDK's transport then answered a bare object). Batches are 2025-03-26's
 *   (and a client's that names no version); with `MCP-Protocol-Version` 2025-06-18 or later, which
 *   removed them, a batch is refused 400 `-32600` ({@link FIRST_VERSION_WITHOUT_BATCHES}).
 * - A batch that carries its own `notifications/cancelled` for one of its requests: the cancelled
 *   request gets no JSON-RPC response (as the spec says). Rather than leave the HTTP exchange hanging
 *   until a gateway reaps it, the server drops the cancelled requests before serving the batch and,
 *   when nothing is left to answer, ends the exchange with 202 and no body.
 * - A body that is JSON but not JSON-RPC is `-32600 Invalid Request` (400), a `tools/call` whose params
 *   the tools cannot take `-32602 Invalid params`, each naming what is wrong (`JsonRpc.ts`).
 * - `GET`/`DELETE /mcp`: 405 (there are no sessions to stream or end).
 * - `GET /ping`, `/.well-known/oauth-protected-resource` (RFC 9728, built from `MCP_PUBLIC_URL`, no
 *   `authorization_servers`: there is no OAuth server), `/mcp/oauth` (404 saying there is no OAuth); every other path is the
 *   suite's JSON 404. `/ping` and the metadata are not Host-checked: health probes address a server
 *   by whatever name or IP they have.
 */
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"
import { ByteSize, Config, Effect, Layer, Option, Result, Schema } from "effect"
import { HttpIncomingMessage, HttpRouter, HttpServer, HttpServerError, HttpServerRequest, HttpServerResponse } from "effect/http"
import { isIP } from "node:net"
import { JsonBody } from "@svc/platform"
import { clientAddress, presentedKey } from "../Auth.ts"
import * as JsonRpc from "./JsonRpc.ts"
import * as McpServer from "./McpServer.ts"

type JsonRpcMessage = Record<string, unknown>

const isRequest = (message: JsonRpcMessage) => typeof message["method"] === "string" && "id" in message

/**
 * Removes from a batch the requests it cancels itself (and those notifications). Returns what is left
 * to serve, or `undefined` when nothing in the batch expects an answer any more.
 */
export const withoutSelfCancelled = (body: unknown): unknown => {
  if (!Array.isArray(body)) return body
  const messages = body.filter((item): item is JsonRpcMessage => typeof item === "object" && item !== null)
  const cancelled = new Set<unknown>()
  for (const message of messages) {
    if (message["method"] === "notifications/cancelled") {
      const params = message["params"] as { readonly requestId?: unknown } | undefined
      if (params?.requestId !== undefined) cancelled.add(params.requestId)
    }
  }
  const ownIds = new Set(messages.filter(isRequest).map((message) => message["id"]))
  const cancelsOwn = [...cancelled].some((id) => ownIds.has(id))
  if (!cancelsOwn) return body
  const kept = messages.filter((message) =>
    !(isRequest(message) && cancelled.has(message["id"])) &&
    !(message["method"] === "notifications/cancelled" &&
      ownIds.has((message["params"] as { readonly requestId?: unknown } | undefined)?.requestId))
  )
  return kept.some(isRequest) ? kept : undefined
}

const jsonRpcError = (status: number, code: number, message: string, headers: Record<string, string> = {}) =>
  HttpServerResponse.jsonUnsafe({ jsonrpc: "2.0", error: { code, message }, id: null }, { status, headers })

// -----------------------------------------------------------------------------
// Configuration
// -----------------------------------------------------------------------------

const entries = (value: string) => value.split(",").map((item) => item.trim()).filter((item) => item !== "")

/**
 * A comma-separated list whose every entry is `*` or passes `valid` (an entry that could never match,
 * such as a URL given as a host, stops the start naming it: ignored, it left clients with 403s); unset,
 * empty or only commas: `undefined` (the default applies).
 */
const List = (name: string, valid: (entry: string) => boolean, expected: string) =>
  Config.option(
    Config.schema(
      Schema.String.check(Schema.makeFilter((value) => {
        const wrong = entries(value).find((entry) => entry !== "*" && !valid(entry))
        return wrong === undefined || `${JSON.stringify(wrong)} is not ${expected}`
      })),
      name
    )
  ).pipe(Config.map((value) => {
    const list = Option.isNone(value) ? [] : entries(value.value)
    return list.length === 0 ? undefined : list
  }))

/** An http(s) origin as browsers send it: scheme, host and port, no path. Matching is exact: no `*` inside. */
const isOrigin = (entry: string) => {
  const url = URL.parse(entry)
  return url !== null && /^https?:$/.test(url.protocol) && url.pathname === "/" && url.search === "" && url.hash === "" &&
    url.username === "" && url.password === "" && !entry.includes("*")
}

/** A `Host` entry: a name, or `name:port` with a port a socket can have. Matching is exact: no `*` inside. */
const isHostEntry = (entry: string) => {
  const host = parseHost(entry)
  return host !== undefined && !entry.includes("*")
}

const PublicUrl = Config.option(
  Config.schema(
    Schema.String.check(Schema.isPattern(/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/, {
      message: "Expected an http(s) URL without query, like https://docs.example.com"
    })),
    "MCP_PUBLIC_URL"
  )
)

/**
 * `MCP_MAX_BODY_BYTES` (default 1 MiB): the largest `POST /mcp` body read, and the longest line read
 * over stdio (`StdioTransport`).
 */
export const MaxBodyBytes = Config.schema(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)), "MCP_MAX_BODY_BYTES").pipe(
  Config.withDefault(1_048_576)
)

/** The configuration of {@link routes}, read once when the routes are built. */
export const McpHttpConfig = Config.all({
  /** `MCP_ALLOWED_HOSTS`: `Host` names (any port) or `name:port`, comma-separated; `*` allows any. */
  allowedHosts: List("MCP_ALLOWED_HOSTS", isHostEntry, "a host name with an optional port (no wildcards), like docs.example.com or docs.example.com:8443"),
  /** `MCP_ALLOWED_ORIGINS`: origins (`https://app.example.com`), comma-separated; `*` allows any. */
  allowedOrigins: List("MCP_ALLOWED_ORIGINS", isOrigin, "an http(s) origin (no wildcards), like https://app.example.com"),
  /** `MCP_PUBLIC_URL`: where clients reach this server (default `http://localhost:<port>`). */
  publicUrl: PublicUrl,
  /** `MCP_MAX_BODY_BYTES` (default 1 MiB): the largest `POST /mcp` body read. */
  maxBodyBytes: MaxBodyBytes,
  /** `MCP_TRUST_PROXY`: the client address is the last `X-Forwarded-For` entry (behind a proxy). */
  trustProxy: Config.Boolean("MCP_TRUST_PROXY").pipe(Config.withDefault(false))
})

/** The local names a browser on this machine uses for it: the default allow-list. */
const LOCAL_NAMES = ["localhost", "127.0.0.1", "[::1]"]

/** `name[:port]` (an IPv6 address in brackets), the name lower-cased; port `""` when there is none. */
/** `name` or `name:port`, with a port a socket can have (a Host of `localhost:99999` names no server). */
const parseHost = (value: string): { readonly hostname: string; readonly port: string } | undefined => {
  const match = /^(\[[0-9a-f:.]+\]|[a-z0-9._~!$&'()*+,;=%-]+)(?::(\d{1,5}))?$/i.exec(value)
  if (match === null || Number(match[2] ?? 0) > 65_535) return undefined
  return { hostname: match[1]!.toLowerCase(), port: match[2] ?? "" }
}

export interface OriginPolicy {
  /** Whether a `Host` header value may reach `/mcp`. */
  readonly hostAllowed: (host: string | undefined) => boolean
  /** Whether an `Origin` header value may reach `/mcp` (absent: yes, it is not a browser). */
  readonly originAllowed: (origin: string | undefined) => boolean
}

/**
 * The Host/Origin checks. Hosts: `name` matches any port, `name:port` only that port. Origins: an
 * exact origin (`scheme://host[:port]`); the default allows http and https on the local names, any
 * port. The public URL's host and origin are always allowed.
 */
export const originPolicy = (options: {
  readonly allowedHosts?: ReadonlyArray<string> | undefined
  readonly allowedOrigins?: ReadonlyArray<string> | undefined
  readonly publicUrl: string
}): OriginPolicy => {
  const publicUrl = new URL(options.publicUrl)
  const hosts = (options.allowedHosts ?? LOCAL_NAMES).map((entry) => entry === "*" ? "*" : parseHost(entry.toLowerCase()))
  const anyHost = hosts.includes("*")
  const hostEntries = hosts.filter((entry) => entry !== "*" && entry !== undefined)
  // the public URL's port as clients send it in Host (none for the scheme's default port)
  hostEntries.push({ hostname: publicUrl.hostname, port: publicUrl.port })
  const hostAllowed = (host: string | undefined) => {
    if (anyHost) return true
    const parsed = host === undefined ? undefined : parseHost(host)
    if (parsed === undefined) return false
    return hostEntries.some((entry) =>
      entry.hostname === parsed.hostname && (entry.port === "" || entry.port === parsed.port)
    )
  }

  const origins = options.allowedOrigins
  const anyOrigin = origins?.includes("*") ?? false
  const exact = new Set((origins ?? []).flatMap((entry) => {
    const url = URL.parse(entry)
    return url === null || url.origin === "null" ? [] : [url.origin]
  }))
  exact.add(publicUrl.origin)
  const originAllowed = (origin: string | undefined) => {
    if (origin === undefined) return true
    // an opaque origin (a sandboxed frame, a file: page): only `*` lets it through, never granted (grantable)
    if (origin === "null") return anyOrigin
    // a value that is not an origin is refused, also with `*`: no browser sends one
    const serialized = serializedOrigin(origin)
    if (serialized === undefined) return false
    if (anyOrigin || exact.has(serialized)) return true
    const url = new URL(serialized)
    return origins === undefined && (url.protocol === "http:" || url.protocol === "https:") &&
      LOCAL_NAMES.includes(url.hostname)
  }
  return { hostAllowed, originAllowed }
}

/**
 * `value` as the serialized origin it is (`scheme://host[:port]`, RFC 6454 §6.2), lower-cased, or
 * undefined when it is not one: a path (`http://localhost:3000/path`, even `/`), a query, user info, a
 * default port spelt out (`http://localhost:80`), `null`. Only case is forgiven (`HTTP://LOCALHOST:3000`
 * is `http://localhost:3000`, compared and granted so). `URL`'s origin of any URL was compared before,
 * and the header echoed as sent: `http://localhost:3000/path` was allowed and named in the grant.
 */
export const serializedOrigin = (value: string): string | undefined => {
  const url = URL.parse(value)
  if (url === null || url.origin === "null") return undefined
  return url.origin === value.toLowerCase() ? url.origin : undefined
}

const forbidden = (message: string) => jsonRpcError(403, -32000, `Forbidden: ${message}`)

/** The `/mcp` routes' guard: 403 unless Host and Origin are allowed. */
const guarded = <E, R>(policy: OriginPolicy, handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const host = request.headers["host"]
    if (!policy.hostAllowed(host)) {
      return forbidden(
        `the Host header ${host === undefined ? "is missing" : `"${host.slice(0, 100)}" is not allowed`} ` +
          "(DNS rebinding protection; allow it with MCP_ALLOWED_HOSTS)"
      )
    }
    const origin = request.headers["origin"]
    if (!policy.originAllowed(origin)) {
      return forbidden(
        `the Origin "${origin!.slice(0, 100)}" is not allowed (DNS rebinding protection; allow it with MCP_ALLOWED_ORIGINS)`
      )
    }
    return yield* handler
  })

// -----------------------------------------------------------------------------
// CORS
// -----------------------------------------------------------------------------

/**
 * The request headers a browser at an allowed origin may send: what the MCP SDK's client sends
 * (`content-type`, `accept`, `mcp-protocol-version`; `mcp-session-id` once it has one, `last-event-id`
 * when it resumes a stream) and the key headers this server reads (`authorization`, `x-svc-api-key`,
 * `x-api-key`). Listed, not echoed from the preflight: `authorization` is never covered by `*`.
 */
export const CORS_ALLOWED_HEADERS = [
  "accept",
  "authorization",
  "content-type",
  "last-event-id",
  "mcp-protocol-version",
  "mcp-session-id",
  "x-api-key",
  "x-svc-api-key"
] as const

/**
 * The response headers a browser client may read: MCP's (`mcp-session-id`, which this stateless
 * server never sends but clients look for, and `mcp-protocol-version`), `www-authenticate` (where a
 * client looks for the RFC 9728 metadata on a 401) and the request id every answer carries.
 */
export const CORS_EXPOSED_HEADERS = ["mcp-session-id", "mcp-protocol-version", "www-authenticate", "x-request-id"] as const

/** The methods of `/mcp` a browser may use: POST, and GET and DELETE so that it can read their 405. */
const MCP_METHODS = "POST, GET, DELETE"

/** The methods `/mcp` serves (its `Allow`): GET and DELETE are 405s, granted to a preflight only for MCP clients that try them. */
const MCP_ALLOW = "POST, OPTIONS"

/** How long a browser may keep a preflight's answer: 2 hours, the most Chromium keeps one. */
const CORS_MAX_AGE_SECONDS = 7200

/**
 * The origin a CORS grant names for `origin`, if any: allowed by the policy, and an origin (never
 * `null`), as serialized (lower-case).
 */
const grantable = (policy: OriginPolicy, origin: string | undefined): string | undefined =>
  origin === undefined || !policy.originAllowed(origin) ? undefined : serializedOrigin(origin)

/**
 * `handler`'s response with `Vary: Origin` (it depends on it), and, when the request's `Origin` is
 * allowed, the CORS grant: `Access-Control-Allow-Origin` naming that origin and
 * `Access-Control-Expose-Headers`. A disallowed origin gets no grant (on the guarded routes its 403).
 * No `Access-Control-Allow-Credentials`: keys travel in headers, never in cookies.
 */
const withCors = <E, R>(policy: OriginPolicy, handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const origin = request.headers["origin"]
    const response = HttpServerResponse.setHeader(yield* handler, "vary", "Origin")
    const granted = grantable(policy, origin)
    if (granted === undefined) return response
    return HttpServerResponse.setHeaders(response, {
      "access-control-allow-origin": granted,
      "access-control-expose-headers": CORS_EXPOSED_HEADERS.join(", ")
    })
  })

/**
 * `OPTIONS`: 204, with `Allow` naming the route's methods (`allow`, as its 405 does and as `OPTIONS`
 * does on every route of the suite; without it when the route answers every method). A CORS preflight
 * (`Access-Control-Request-Method`) from an allowed origin also gets
 * the methods, the request headers ({@link CORS_ALLOWED_HEADERS}), a max-age, and, when it asks for it
 * (Chromium's Private Network Access: a public page calling a server on this machine or network),
 * `Access-Control-Allow-Private-Network`. The origin itself is granted by {@link withCors}.
 */
const preflight = (policy: OriginPolicy, methods: string, allow?: string) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const headers: Record<string, string> = allow === undefined ? {} : { allow }
    if (grantable(policy, request.headers["origin"]) !== undefined && request.headers["access-control-request-method"] !== undefined) {
      headers["access-control-allow-methods"] = methods
      headers["access-control-allow-headers"] = CORS_ALLOWED_HEADERS.join(", ")
      headers["access-control-max-age"] = String(CORS_MAX_AGE_SECONDS)
      if (request.headers["access-control-request-private-network"] === "true") {
        headers["access-control-allow-private-network"] = "true"
      }
    }
    return HttpServerResponse.empty({ status: 204, headers })
  })

// -----------------------------------------------------------------------------
// Handlers
// -----------------------------------------------------------------------------

/**
 * The 413, with `Connection: close`: the rest of the body is never read, so the connection cannot carry
 * another request. A declared length over the cap got it from effect's adapter; a chunked body cut at
 * the cap was answered `Connection: keep-alive` (`Keep-Alive: timeout=5`), and the adapter closed the
 * socket ~10 ms later while draining what remained (outside audit).
 */
const tooLarge = (maxBodyBytes: number) =>
  HttpServerResponse.jsonUnsafe({
    code: "payload_too_large",
    message: `The request body is larger than ${maxBodyBytes} bytes (MCP_MAX_BODY_BYTES)`,
    maxBytes: maxBodyBytes
  }, { status: 413, headers: { connection: "close" } })

const isBodyTooLarge = (error: unknown) =>
  HttpServerError.isHttpServerError(error) && error.reason._tag === "RequestParseError" &&
  error.reason.reason === "BodyTooLarge"

// -----------------------------------------------------------------------------
// Media types
// -----------------------------------------------------------------------------

/** A media type's `type/subtype`, lower-cased, without its parameters. */
const essence = (value: string): string => value.split(";")[0]!.trim().toLowerCase()

/**
 * Whether an `Accept` header value accepts `type` (RFC 9110 §12.5.1): the most specific range that
 * matches it decides (`text/event-stream` over `text/*` over `*\/*`), and `q=0` means "not this".
 */
const accepts = (accept: string, type: string): boolean => {
  const wildcard = `${type.split("/")[0]}/*`
  let best: { readonly specificity: number; readonly q: number } | undefined
  for (const item of accept.split(",")) {
    const [range = "", ...parameters] = item.split(";")
    const name = range.trim().toLowerCase()
    const specificity = name === type ? 2 : name === wildcard ? 1 : name === "*/*" ? 0 : -1
    if (specificity < 0 || (best !== undefined && best.specificity > specificity)) continue
    const weight = parameters.map((parameter) => parameter.trim().toLowerCase()).find((parameter) => parameter.startsWith("q="))
    const q = weight === undefined ? 1 : Number(weight.slice(2))
    best = { specificity, q: Number.isNaN(q) ? 1 : q }
  }
  return best !== undefined && best.q > 0
}

/**
 * Whether a `POST /mcp` may be answered: MCP's Streamable HTTP has the client list both
 * `application/json` and `text/event-stream` in `Accept`. A range that covers them counts as listing
 * them (`*\/*`, or `application/*` with `text/*`), as HTTP reads it; a missing `Accept` does not.
 */
export const acceptsMcpAnswers = (accept: string | undefined): boolean =>
  accept !== undefined && accepts(accept, "application/json") && accepts(accept, "text/event-stream")

/** What the headers of a `POST /mcp` say wrong, before its body is read: 406, 415, 413. */
const headerRefusal = (
  headers: Readonly<Record<string, string | undefined>>,
  maxBodyBytes: number
): HttpServerResponse.HttpServerResponse | undefined => {
  const accept = headers["accept"]
  if (!acceptsMcpAnswers(accept)) {
    return jsonRpcError(
      406,
      -32000,
      `Not Acceptable: ${accept === undefined ? "there is no Accept header" : `Accept "${accept.slice(0, 100)}"`}; ` +
        "send Accept: application/json, text/event-stream (MCP Streamable HTTP)"
    )
  }
  const contentType = headers["content-type"]
  if (contentType === undefined || essence(contentType) !== "application/json") {
    return jsonRpcError(
      415,
      -32000,
      `Unsupported Media Type: ${
        contentType === undefined ? "there is no Content-Type header" : `Content-Type "${contentType.slice(0, 100)}"`
      }; send Content-Type: application/json`
    )
  }
  // JSON is UTF-8 (RFC 8259): a body declared otherwise was read as UTF-8 and refused as a parse error
  const charset = JsonBody.charsetProblem(contentType)
  if (charset !== undefined) return jsonRpcError(415, -32000, `Unsupported Media Type: ${charset}`)
  // a declared length over the cap: refused before a byte is read
  const length = headers["content-length"]
  if (length !== undefined && /^\d+$/.test(length.trim()) && Number(length) > maxBodyBytes) return tooLarge(maxBodyBytes)
  return undefined
}

/**
 * MCP 2025-06-18 removed JSON-RPC batches (a POST carries one message); 2025-03-26 requires them. So a
 * batch is served when the client speaks 2025-03-26 (or names no version: the spec's default for it)
 * and refused, 400 `-32600`, when its `MCP-Protocol-Version` is this one or later, as the SDKs and the
 * conformance suite's proposed check (modelcontextprotocol/conformance#378) have it. Versions are dates:
 * they compare as text.
 */
export const FIRST_VERSION_WITHOUT_BATCHES = "2025-06-18"

/**
 * `POST /mcp`, checked in this order: the headers (406 `Accept`, 415 `Content-Type`, 413 a declared
 * length over the cap), then the body as it is read (413 past the cap), then as text (400 `-32700`:
 * empty, not JSON), then as JSON-RPC (`JsonRpc.ts`: 400 `-32600`, `-32602`); only then the SDK.
 */
const handlePost = (config: { readonly maxBodyBytes: number; readonly trustProxy: boolean }) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const refusedHeaders = headerRefusal(request.headers, config.maxBodyBytes)
    if (refusedHeaders !== undefined) return refusedHeaders
    // without a declared length (chunked, or a lying one) the reader stops at the cap: BodyTooLarge
    const read = yield* Effect.result(
      Effect.provideService(request.arrayBuffer, HttpIncomingMessage.MaxBodySize, ByteSize.bytes(config.maxBodyBytes))
    )
    if (read._tag === "Failure") {
      return isBodyTooLarge(read.failure)
        ? tooLarge(config.maxBodyBytes)
        : jsonRpcError(400, -32700, "Parse error: the body could not be read")
    }
    // by the suite's rules for JSON bodies: bytes that are not UTF-8 were read as U+FFFD (an id came
    // back other than sent), and of a key given twice JSON.parse kept the last, silently
    const parsed = JsonBody.parse(new Uint8Array(read.success), "a JSON-RPC message (a JSON object)")
    if (Result.isFailure(parsed)) {
      const { parameter, problem } = parsed.failure
      return jsonRpcError(400, -32700, `Parse error: the body${parameter === "" ? "" : `'s ${parameter}`} ${problem}`)
    }
    // compared as the dates MCP's versions are: any other text ("xxxx" sorts after every date) is left
    // to the transport, which refuses it as an unsupported version
    const version = request.headers["mcp-protocol-version"]?.trim()
    const dated = version !== undefined && /^\d{4}-\d{2}-\d{2}$/.test(version)
    if (Array.isArray(parsed.success) && dated && version >= FIRST_VERSION_WITHOUT_BATCHES) {
      return jsonRpcError(
        400,
        -32600,
        `Invalid Request: MCP ${version.slice(0, 20)} takes one JSON-RPC message per request, not a batch (batches ended with ${FIRST_VERSION_WITHOUT_BATCHES})`
      )
    }
    // what is not JSON-RPC, or a tools/call the tools cannot take, is named with JSON-RPC's own codes (JsonRpc.ts)
    const refused = JsonRpc.refusalOf(parsed.success)
    if (refused !== undefined) {
      return HttpServerResponse.jsonUnsafe(
        { jsonrpc: "2.0", error: { code: refused.code, message: refused.message }, id: refused.id },
        // -32600 (not JSON-RPC) is a 400 with or without the request's id; -32602 (params) answers a request
        { status: refused.code === -32600 || refused.id === null ? 400 : 200 }
      )
    }
    const body = withoutSelfCancelled(parsed.success)
    if (body === undefined) return HttpServerResponse.empty({ status: 202 })

    const address = clientAddress(request, config.trustProxy)
    // the key read as the API reads it: a header present but holding no usable key ("Basic …", empty) is
    // sent on as such and refused there (401), as a REST caller's is, never served as anonymous
    const server = yield* McpServer.make(presentedKey(request.headers), isIP(address) === 0 ? undefined : address)
    // stateless: without a sessionIdGenerator there is no Mcp-Session-Id and no session check
    const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true })
    return yield* Effect.promise(async () => {
      await server.connect(transport)
      const requestHeaders = new Headers()
      for (const [name, value] of Object.entries(request.headers)) if (value !== undefined) requestHeaders.set(name, value)
      // Accept was judged above (a wildcard counts); the SDK only looks for the two names
      requestHeaders.set("accept", "application/json, text/event-stream")
      const response = await transport.handleRequest(
        new Request(`http://mcp.local${request.url}`, { method: "POST", headers: requestHeaders }),
        { parsedBody: body }
      )
      // the JSON answer is complete once handleRequest resolves: read it before the server closes
      const text = await response.text()
      const headers = new Headers(response.headers)
      headers.delete("content-length") // the body may have changed (readable)
      const answer = text === "" ? null : readable(text, Array.isArray(body) && response.status === 200)
      return new Response(answer, { status: response.status, headers })
    }).pipe(
      Effect.map(HttpServerResponse.fromWeb),
      Effect.ensuring(Effect.promise(() => server.close()))
    )
  })

/**
 * The SDK's JSON answer, with its schema refusals in words (`JsonRpc.readableErrors`), and as an array
 * when it answers a batch: the SDK's transport answers a batch that holds one request with that one
 * response, a bare object, where JSON-RPC 2.0 answers a batch with an array. (Its refusals of a whole
 * batch, 4xx, stay one object, as JSON-RPC answers a batch it cannot read.) Anything else as it is.
 */
const readable = (text: string, batch: boolean): string => {
  // only an answer holding an internal error, or to a batch, can need it: the others (tool results) pass unparsed
  const internal = text.includes("-32603")
  if (!internal && !batch) return text
  try {
    const answer: unknown = JSON.parse(text)
    const worded = internal ? JsonRpc.readableErrors(answer) : answer
    return JSON.stringify(batch && !Array.isArray(worded) ? [worded] : worded)
  } catch {
    return text
  }
}

/**
 * Every method but POST and OPTIONS on `/mcp` (GET for a stream, DELETE for a session, and any other):
 * the same 405 and the same `Allow`, whichever method it was.
 */
const methodNotAllowed = Effect.succeed(
  jsonRpcError(405, -32000, "Method not allowed: this server is stateless, send JSON-RPC with POST /mcp", {
    allow: MCP_ALLOW
  })
)

/** The handler of the request's method, {@link methodNotAllowed} for the others. */
const byMethod = <E, R>(handlers: Readonly<Record<string, Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>>>) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => Object.hasOwn(handlers, request.method) ? handlers[request.method]! : methodNotAllowed)

/**
 * RFC 9728 metadata, from the configured public URL (never from the request's Host): the protected
 * resource is `/mcp` and keys go in the Authorization header. No `authorization_servers`: there is no
 * OAuth authorization server, keys are API keys.
 */
const protectedResourceMetadata = (publicUrl: string) =>
  HttpServerResponse.jsonUnsafe({
    resource: `${publicUrl}/mcp`,
    resource_name: "svc documentation lookup (MCP)",
    bearer_methods_supported: ["header"]
  }, { headers: { "cache-control": "max-age=3600" } })

/** There is no OAuth flow: keys are API keys. Say so, in the suite's error shape. */
const oauth = Effect.succeed(
  HttpServerResponse.jsonUnsafe({
    code: "oauth_not_supported",
    message: "This server takes API keys, not OAuth: send Authorization: Bearer <API_KEY> " +
      "(or X-Svc-API-Key / X-API-Key) with each POST /mcp"
  }, { status: 404 })
)

/**
 * Every route of the MCP HTTP server, configured by {@link McpHttpConfig}. Needs `DocsClient`.
 * Without `MCP_PUBLIC_URL` the public URL is `http://localhost:<the port served>` (the server's bound
 * port when the routes are served by `serve`; 8790 otherwise).
 */
export const routes = Layer.unwrap(Effect.gen(function*() {
  const config = yield* McpHttpConfig
  const server = yield* Effect.serviceOption(HttpServer.HttpServer)
  const port = Option.isSome(server) && server.value.address._tag !== "UnixPathAddress" ? server.value.address.port : 8790
  const publicUrl = Option.getOrElse(config.publicUrl, () => `http://localhost:${port}`).replace(/\/+$/, "")
  const policy = originPolicy({ ...config, publicUrl })
  const metadata = Effect.sync(() => protectedResourceMetadata(publicUrl))
  // Said once at start: a client reaching the server by another name (a LAN address, a DNS name)
  // gets 403 until that name is allowed, and the operator should not have to guess why.
  yield* Effect.logInfo(
    `/mcp answers Host ${(config.allowedHosts ?? LOCAL_NAMES).join(", ")} and ${new URL(publicUrl).host} ` +
      "(others: 403; MCP_ALLOWED_HOSTS, MCP_PUBLIC_URL)"
  ).pipe(Effect.annotateLogs({ service: "mcp" }))
  // every /mcp route: Host and Origin checked (403), then answered with the CORS grant for an allowed origin
  const mcp = <E, R>(handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    withCors(policy, guarded(policy, handler))
  const oauthOrPreflight = Effect.flatMap(
    HttpServerRequest.HttpServerRequest,
    (request) => request.method === "OPTIONS" ? preflight(policy, "GET, POST") : oauth
  )
  return Layer.mergeAll(
    // one route for every method, so that no method reaches the router's generic 405 (whose `Allow`
    // would list GET and DELETE, routed only to be refused here)
    HttpRouter.add("*", "/mcp", mcp(byMethod({ POST: handlePost(config), OPTIONS: preflight(policy, MCP_METHODS, MCP_ALLOW) }))),
    HttpRouter.add("GET", "/ping", Effect.succeed(HttpServerResponse.jsonUnsafe({ status: "ok", message: "pong" }))),
    // the metadata is not Host-checked (above); a browser client at an allowed origin may read it
    ...(["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"] as const).flatMap((path) => [
      HttpRouter.add("GET", path, withCors(policy, metadata)),
      HttpRouter.add("OPTIONS", path, withCors(policy, preflight(policy, "GET", "GET, HEAD, OPTIONS")))
    ]),
    HttpRouter.add("*", "/mcp/oauth", mcp(oauthOrPreflight))
  )
}))
