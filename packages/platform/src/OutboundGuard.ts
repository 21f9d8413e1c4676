/**
 * (About 500 lines on purpose: an SSRF audit reads the address rules, the refusals and the guarded
 * transports together, top to bottom, in the four sections below.)
 *
 * The one guard every outbound request to an address the suite was given goes through (queue
 * deliveries and callbacks, feed pages, offer images, docs sources): DESIGN.md §3 "Outbound requests".
 *
 * - **Addresses**: `ipaddr.js`'s range table decides (`range()` names), not a list of our own. An IPv4
 *   address is allowed only in its `unicast` range; an IPv6 address only in `unicast` *and* inside the
 *   global unicast block `2000::/3` (ipaddr.js calls everything it has no name for `unicast`, the
 *   IPv4-compatible `::a.b.c.d` block included). IPv4-mapped `::ffff:a.b.c.d` is judged as the IPv4
 *   address it is; NAT64 (`64:ff9b::/96`), 6to4 (`2002::/16`), Teredo (`2001::/32`) and IPv4-compatible
 *   addresses are refused whatever they embed. Decimal, hex, octal and short IPv4 forms
 *   (`2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1`) never reach the guard as such: WHATWG URL parsing
 *   turns them into dotted quads first.
 * - **Names**: `localhost`, `*.localhost`, `*.local` and `*.internal` (a trailing dot ignored) are
 *   refused outright; any other name is refused when it resolves to a refused address.
 * - **Where it is checked**: on the address actually connected to. `lookup(...)` is the `lookup` of the
 *   http/https agents `agents(...)` makes, so the answer a connection uses is the answer checked (a name
 *   that changes its answer between a check and the request, DNS rebinding, is still refused), and an
 *   IP literal (which node connects to without a lookup) is checked before the request. `fetch(...)`
 *   follows redirects itself (at most `maxRedirects`, default 5), checking every hop the same way.
 * - **Credentials** go only to the origin they belong to: when a redirect leaves the first request's
 *   origin, every header but a short safe list (`Accept`, `Accept-Encoding`, `Accept-Language`,
 *   `User-Agent`, and `Content-Type` while a body is still sent) is dropped for that hop and every
 *   later one: `Authorization`, `Cookie`, `X-Api-Key`, a partner's own header, whatever it is called.
 * - **One setting per service** allows private hosts for development (`allowPrivate`); it switches off
 *   the address and name checks only, never the redirect bound or the credential rule.
 */
import { Context, Effect, Layer } from "effect"
import { FetchHttpClient, HttpClient } from "effect/http"
import ipaddr from "ipaddr.js"
import * as Dns from "node:dns"
import * as Http from "node:http"
import * as Https from "node:https"
import type * as Net from "node:net"
import { Readable } from "node:stream"
import * as Zlib from "node:zlib"

// -----------------------------------------------------------------------------
// Addresses and names
// -----------------------------------------------------------------------------

/** What the guard thinks of one IP address. */
export interface AddressVerdict {
  /** The address as written canonically (IPv4-mapped addresses as their IPv4 address). */
  readonly address: string
  /** ipaddr.js's range name, or `ipv4Compatible` / `nonGlobal` for IPv6 unicast outside `2000::/3`. */
  readonly range: string
  readonly allowed: boolean
  /** The IPv4 address an IPv6 one carries (IPv4-compatible, NAT64, 6to4, Teredo), for messages. */
  readonly embeds?: string
}

const GLOBAL_UNICAST = ipaddr.IPv6.parse("2000::")

const v4FromParts = (high: number, low: number) =>
  `${(high >> 8) & 255}.${high & 255}.${(low >> 8) & 255}.${low & 255}`

const embeddedV4 = (address: ipaddr.IPv6, range: string): string | undefined => {
  const p = address.parts
  switch (range) {
    case "ipv4Compatible":
    case "rfc6052":
    case "rfc6145":
      return v4FromParts(p[6]!, p[7]!)
    case "6to4":
      return v4FromParts(p[1]!, p[2]!)
    case "teredo": // the client's address, bits inverted
      return v4FromParts(~p[6]! & 0xffff, ~p[7]! & 0xffff)
    default:
      return undefined
  }
}

/**
 * The verdict on an IP address (v4 or v6, brackets allowed), or `undefined` when `text` is not one.
 * Only the canonical forms node and URL parsing produce are read as addresses.
 */
export const classifyAddress = (text: string): AddressVerdict | undefined => {
  const bare = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text
  // ipaddr.js also reads "127.1" or "0x7f.1" as addresses; a URL never leaves them so, and a name
  // is not an address: only dotted quads and IPv6 count.
  const isV4 = /^\d{1,3}(\.\d{1,3}){3}$/.test(bare)
  if (!isV4 && !bare.includes(":")) return undefined
  if (!ipaddr.isValid(bare)) return undefined
  let parsed: ipaddr.IPv4 | ipaddr.IPv6
  try {
    parsed = ipaddr.process(bare.replace(/%.*$/, ""))
  } catch {
    return undefined
  }
  if (parsed.kind() === "ipv4") {
    const range = parsed.range()
    return { address: parsed.toString(), range, allowed: range === "unicast" }
  }
  const v6 = parsed as ipaddr.IPv6
  let range: string = v6.range()
  if (range === "unicast") {
    const p = v6.parts
    if (p[0] === 0 && p[1] === 0 && p[2] === 0 && p[3] === 0 && p[4] === 0 && p[5] === 0) range = "ipv4Compatible"
    else if (!v6.match(GLOBAL_UNICAST, 3)) range = "nonGlobal"
  }
  const embeds = embeddedV4(v6, range)
  return {
    address: v6.toString(),
    range,
    allowed: range === "unicast",
    ...(embeds === undefined ? {} : { embeds })
  }
}

/** Whether `address` is an IP address the guard refuses (a name is not an address: false). */
export const isPrivateAddress = (address: string): boolean => classifyAddress(address)?.allowed === false

/** `localhost`, `*.localhost`, `*.local`, `*.internal` (trailing dot ignored): refused by name. */
export const isInternalName = (host: string): boolean => {
  const name = host.toLowerCase().replace(/\.+$/, "")
  return name === "" || name === "localhost" || name.endsWith(".localhost") || name.endsWith(".local") ||
    name.endsWith(".internal") || name === "local" || name === "internal"
}

const describeAddress = (verdict: AddressVerdict): string => `${verdict.address} is in ${rangeOf(verdict)}`

/** `the loopback range`, `the IPv4-mapped range (it embeds 127.0.0.1)`. */
const rangeOf = (verdict: AddressVerdict, showEmbedded = true): string => {
  const names: Record<string, string> = {
    loopback: "loopback",
    private: "private",
    linkLocal: "link-local",
    uniqueLocal: "unique-local",
    carrierGradeNat: "carrier-grade NAT",
    unspecified: "unspecified",
    broadcast: "broadcast",
    multicast: "multicast",
    reserved: "reserved",
    ipv4Mapped: "IPv4-mapped",
    ipv4Compatible: "IPv4-compatible",
    rfc6052: "NAT64",
    rfc6145: "IPv4-translated",
    "6to4": "6to4",
    teredo: "Teredo",
    nonGlobal: "non-global IPv6"
  }
  const name = names[verdict.range] ?? verdict.range
  return `the ${name} range${verdict.embeds === undefined || !showEmbedded ? "" : ` (it embeds ${verdict.embeds})`}`
}

// -----------------------------------------------------------------------------
// Options
// -----------------------------------------------------------------------------

/** One answer of a name lookup. */
export interface ResolvedAddress {
  readonly address: string
  readonly family: number
}

/** Resolves a host name to every address it has (tests inject one; the default asks the system). */
export type Resolve = (hostname: string) => Promise<ReadonlyArray<ResolvedAddress>>

export const systemResolve: Resolve = (hostname) => Dns.promises.lookup(hostname, { all: true, order: "verbatim" })

/**
 * How a service resolves names for a check ahead of a request (default: the system's); tests provide
 * their own to make a name resolve inward without any real DNS.
 */
export const Resolver = Context.Reference<Resolve>("@svc/platform/OutboundGuard/Resolver", {
  defaultValue: () => systemResolve
})

export interface GuardOptions {
  /** The service's development setting: loopback and private hosts allowed (no address checks). */
  readonly allowPrivate: boolean
  /** The setting's name, for refusals: `QUEUE_ALLOW_PRIVATE`. */
  readonly setting?: string | undefined
  /** Name lookups (default: the system's, as node's own connections use). */
  readonly resolve?: Resolve | undefined
  /**
   * Exact origins (`http://10.0.0.5:8080`) reached without address checks even when private hosts are
   * not allowed: an operator's explicit exception. Honoured by `refusal`, `requestRefusal` and
   * `makeFetch` (whose lookup is chosen per request, by origin); `agents` knows no origins.
   */
  readonly allowOrigins?: ReadonlyArray<string> | undefined
}

const exempt = (url: URL, options: GuardOptions) => options.allowOrigins?.includes(url.origin) === true

/** A refused outbound request (also the `cause` of the `HttpClientError` the effect client fails with). */
export class OutboundRefused extends Error {
  readonly code = "EPRIVATE"
  readonly reason: string
  constructor(reason: string) {
    super(`Refused outbound request: ${reason}`)
    this.name = "OutboundRefused"
    this.reason = reason
  }
}

/** Whether `error` (or an error in its `cause` chain) is the guard's refusal. */
export const isRefusal = (error: unknown): error is OutboundRefused => {
  for (let current = error, depth = 0; current !== undefined && current !== null && depth < 8; depth++) {
    if (current instanceof OutboundRefused || (current as { code?: unknown }).code === "EPRIVATE") return true
    current = (current as { cause?: unknown }).cause
  }
  return false
}

/** The guard's reason, when `error` (or an error in its `cause` chain) is its refusal. */
export const refusalOf = (error: unknown): string | undefined => {
  for (let current = error, depth = 0; current !== undefined && current !== null && depth < 8; depth++) {
    if (current instanceof OutboundRefused) return current.reason
    current = (current as { cause?: unknown }).cause
  }
  return undefined
}

const hint = (options: GuardOptions) => options.setting === undefined ? "" : ` (set ${options.setting}=true to allow it)`

/** Why a host name (as a URL's `hostname` gives it) may not be reached without resolving it, if it may not. */
const literalRefusal = (hostname: string, options: GuardOptions): string | undefined => {
  if (options.allowPrivate) return undefined
  const verdict = classifyAddress(hostname)
  if (verdict !== undefined) return verdict.allowed ? undefined : `${describeAddress(verdict)}${hint(options)}`
  if (isInternalName(hostname)) return `${hostname} is a local name${hint(options)}`
  return undefined
}

/**
 * Why a name's addresses may not be reached, if one of them may not: the range, never the address
 * (the reason goes back to whoever asked, and "vm resolves to 127.0.0.1" let a token holder map the
 * server's internal names; an outside sweep).
 */
const resolvedRefusal = (
  hostname: string,
  addresses: ReadonlyArray<ResolvedAddress>,
  options: GuardOptions
): string | undefined => {
  if (options.allowPrivate) return undefined
  for (const entry of addresses) {
    const verdict = classifyAddress(entry.address)
    if (verdict === undefined || !verdict.allowed) {
      return `${hostname} resolves to ${verdict === undefined ? "an address that cannot be read" : `an address in ${rangeOf(verdict, false)}`}${hint(options)}`
    }
  }
  return undefined
}

/**
 * The addresses `hostname` (as a URL's `hostname` gives it) may be reached at, or why it may not be:
 * a literal address is itself; a local name is refused at once; any other name is resolved and refused
 * when one of its addresses is refused or it does not resolve (within 3 s). For a transport the guard
 * cannot sit in (the system `git`), which is then told to connect to these addresses only. With
 * `allowPrivate`, every name is allowed unresolved (`addresses` empty: connect as usual).
 */
export type AllowedAddresses = { readonly addresses: ReadonlyArray<string> } | { readonly refusal: string }

export const allowedAddresses = (hostname: string, options: GuardOptions): Effect.Effect<AllowedAddresses> =>
  Effect.suspend((): Effect.Effect<AllowedAddresses> => {
    if (options.allowPrivate) return Effect.succeed({ addresses: [] })
    const literal = literalRefusal(hostname, options)
    if (literal !== undefined) return Effect.succeed({ refusal: literal })
    const verdict = classifyAddress(hostname)
    if (verdict !== undefined) return Effect.succeed({ addresses: [verdict.address] })
    const resolve = options.resolve ?? systemResolve
    return Effect.tryPromise(() => resolve(hostname)).pipe(
      Effect.map((resolved): AllowedAddresses => {
        const why = resolved.length === 0 ? `${hostname} does not resolve` : resolvedRefusal(hostname, resolved, options)
        return why === undefined ? { addresses: resolved.map((entry) => entry.address) } : { refusal: why }
      }),
      Effect.orElseSucceed((): AllowedAddresses => ({ refusal: `${hostname} does not resolve` })),
      Effect.timeoutOrElse({
        duration: "3 seconds",
        orElse: () => Effect.succeed<AllowedAddresses>({ refusal: `${hostname} did not resolve in time` })
      })
    )
  })

/**
 * Why `url` may not be reached, or `undefined` when it may: only http(s), and its host as
 * {@link allowedAddresses} judges it. A check ahead of time (at publish); the request itself is checked again.
 */
export const refusal = (url: string, options: GuardOptions): Effect.Effect<string | undefined> =>
  Effect.suspend(() => {
    let parsed: URL
    try {
      parsed = new URL(url)
    } catch {
      return Effect.succeed(`${JSON.stringify(url.slice(0, 200))} is not a URL`)
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      return Effect.succeed(`${parsed.protocol} URLs are not allowed, only http and https`)
    }
    if (exempt(parsed, options)) return Effect.succeed(undefined)
    return Effect.map(allowedAddresses(parsed.hostname, options), (allowed) => "refusal" in allowed ? allowed.refusal : undefined)
  })

// -----------------------------------------------------------------------------
// Connections
// -----------------------------------------------------------------------------

/**
 * A `lookup` for node's http/https agents and sockets that refuses what the guard refuses: the
 * connection is made to the address checked here. Fails with an `OutboundRefused` (`code: "EPRIVATE"`).
 */
export const lookup = (options: GuardOptions): Net.LookupFunction =>
(hostname, lookupOptions, callback) => {
  const done = callback as (error: Error | null, address?: string | ReadonlyArray<Dns.LookupAddress>, family?: number) => void
  const byName = literalRefusal(hostname, options)
  if (byName !== undefined) return done(new OutboundRefused(byName))
  const family = typeof lookupOptions === "object" ? lookupOptions.family : lookupOptions
  ;(options.resolve ?? systemResolve)(hostname).then(
    (all) => {
      const wanted = family === 4 || family === 6 || family === "IPv4" || family === "IPv6"
        ? all.filter((entry) => entry.family === (family === 4 || family === "IPv4" ? 4 : 6))
        : all
      if (wanted.length === 0) {
        return done(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND", hostname }))
      }
      const why = resolvedRefusal(hostname, wanted, options)
      if (why !== undefined) return done(new OutboundRefused(why))
      if (typeof lookupOptions === "object" && lookupOptions.all === true) {
        return done(null, wanted.map((entry) => ({ address: entry.address, family: entry.family })))
      }
      done(null, wanted[0]!.address, wanted[0]!.family)
    },
    (error: unknown) => done(error instanceof Error ? error : new Error(String(error)))
  )
}

export interface GuardedAgents {
  readonly http: Http.Agent
  readonly https: Https.Agent
  readonly destroy: () => void
}

/**
 * The longest a kept-alive connection waits idle for the next request to its origin (less when the
 * server's `Keep-Alive: timeout=` asks for less). node's agents otherwise keep an idle connection until
 * the server closes it, and a server that never does (a feed's image host, a crawled site) held a
 * socket per origin for the life of the process.
 */
export const IDLE_SOCKET_MS = 10_000

/** Keep-alive http and https agents whose connections go only to addresses the guard allows. */
export const agents = (
  options: GuardOptions & {
    readonly maxSockets?: number | undefined
    /** {@link IDLE_SOCKET_MS} unless given (tests). */
    readonly idleSocketMs?: number | undefined
  }
): GuardedAgents => {
  const agentOptions = {
    keepAlive: true,
    // an idle socket past it is destroyed by the agent; a socket in use is not (its request's own
    // deadline applies: the agent only emits 'timeout', which nothing here listens to)
    timeout: options.idleSocketMs ?? IDLE_SOCKET_MS,
    ...(options.maxSockets === undefined ? {} : { maxSockets: options.maxSockets }),
    ...(options.allowPrivate ? {} : { lookup: lookup(options) })
  }
  const http = new Http.Agent(agentOptions)
  const https = new Https.Agent(agentOptions)
  return { http, https, destroy: () => (http.destroy(), https.destroy()) }
}

/**
 * Why a request to `url` may not even start (no lookup needed): not http(s), a refused IP literal
 * or a local name. Node connects to an IP literal without calling `lookup`, so this check is needed
 * beside the agents'.
 */
export const requestRefusal = (url: URL, options: GuardOptions): string | undefined => {
  if (url.protocol !== "http:" && url.protocol !== "https:") return `${url.protocol} URLs are not allowed, only http and https`
  return exempt(url, options) ? undefined : literalRefusal(url.hostname, options)
}

// -----------------------------------------------------------------------------
// Requests
// -----------------------------------------------------------------------------

/** Headers a hop to another origin still carries: nothing that could be a credential. */
const CROSS_ORIGIN_SAFE: ReadonlySet<string> = new Set(["accept", "accept-encoding", "accept-language", "user-agent"])

const REDIRECTS: ReadonlySet<number> = new Set([301, 302, 303, 307, 308])

export interface FetchOptions extends GuardOptions {
  /** Redirects followed at most (default 5); one more is a failure. */
  readonly maxRedirects?: number | undefined
  /** Connections kept per origin (default: no limit). */
  readonly maxSockets?: number | undefined
  /** How long a connection is kept idle (default {@link IDLE_SOCKET_MS}). */
  readonly idleSocketMs?: number | undefined
}

export interface GuardedFetch {
  /** A `fetch` (what `effect/http`'s `FetchHttpClient` needs) that goes through the guard. */
  readonly fetch: typeof globalThis.fetch
  /** Closes the keep-alive connections. */
  readonly close: () => void
}

const bodyBytes = (body: unknown): Uint8Array | string | undefined => {
  if (body === undefined || body === null) return undefined
  if (typeof body === "string" || body instanceof Uint8Array) return body
  if (body instanceof ArrayBuffer) return new Uint8Array(body)
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength)
  if (body instanceof URLSearchParams) return body.toString()
  throw new TypeError("The guarded fetch sends string or byte bodies only")
}

const sendOnce = (
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: Uint8Array | string | undefined,
  pool: GuardedAgents,
  options: GuardOptions,
  signal: AbortSignal | undefined
): Promise<Http.IncomingMessage> =>
  new Promise((resolve, reject) => {
    const secure = url.protocol === "https:"
    // The lookup is the request's (the pool's agents have none): an exempt origin's own, else the
    // guard's. Pooled connections are per origin, so a reused one was made under the same rule.
    const checking = !(options.allowPrivate || exempt(url, options))
    const checked = checking || options.resolve !== undefined
      ? lookup(checking ? options : { ...options, allowPrivate: true })
      : undefined
    const request = (secure ? Https : Http).request(url, {
      method,
      headers,
      agent: secure ? pool.https : pool.http,
      ...(checked === undefined ? {} : { lookup: checked }),
      ...(signal === undefined ? {} : { signal })
    }, (response) => {
      // Belt and braces: whatever path the connection took, the address it reached is checked too.
      const remote = response.socket?.remoteAddress
      const verdict = remote === undefined || options.allowPrivate || exempt(url, options)
        ? undefined
        : classifyAddress(remote)
      if (verdict !== undefined && !verdict.allowed) {
        response.destroy()
        request.destroy()
        return reject(new OutboundRefused(`${url.hostname} connected to ${describeAddress(verdict)}${hint(options)}`))
      }
      resolve(response)
    })
    request.on("error", reject)
    request.end(body)
  })

const decoded = (response: Http.IncomingMessage): Readable => {
  const encoding = (response.headers["content-encoding"] ?? "").toString().trim().toLowerCase()
  if (encoding === "gzip" || encoding === "x-gzip") return response.pipe(Zlib.createGunzip())
  if (encoding === "deflate") return response.pipe(Zlib.createInflate())
  if (encoding === "br") return response.pipe(Zlib.createBrotliDecompress())
  return response
}

/**
 * A guarded `fetch`: node http(s) on the guard's agents, redirects followed by hand (bounded, every
 * hop checked, credentials kept to their origin; `redirect: "manual"` returns the 3xx instead,
 * `"error"` fails on one). Bodies are strings or bytes. Responses are decompressed (gzip, deflate, br).
 */
export const makeFetch = (options: FetchOptions): GuardedFetch => {
  // keep-alive agents without a lookup of their own: `sendOnce` gives each request the guard's
  const pool = agents({ allowPrivate: true, maxSockets: options.maxSockets, idleSocketMs: options.idleSocketMs })
  const maxRedirects = options.maxRedirects ?? 5
  const fetch = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const base = input instanceof Request ? input : undefined
    let url = new URL(base?.url ?? input.toString())
    let method = (init.method ?? base?.method ?? "GET").toUpperCase()
    const headers: Record<string, string> = {}
    new Headers(init.headers ?? base?.headers).forEach((value, name) => {
      headers[name] = value
    })
    if (base !== undefined && init.body === undefined && base.body !== null) {
      throw new TypeError("The guarded fetch does not read a Request's body: pass it in init")
    }
    let body = bodyBytes(init.body)
    headers["accept-encoding"] ??= "gzip, deflate, br"
    const signal = init.signal ?? base?.signal ?? undefined
    const origin = url.origin
    let credentialsDropped = false
    for (let hop = 0;; hop++) {
      const refused = requestRefusal(url, options)
      if (refused !== undefined) throw new TypeError("fetch failed", { cause: new OutboundRefused(refused) })
      if (url.origin !== origin && !credentialsDropped) {
        credentialsDropped = true
        for (const name of Object.keys(headers)) {
          if (!CROSS_ORIGIN_SAFE.has(name) && !(name === "content-type" && body !== undefined)) delete headers[name]
        }
      }
      const sent = body === undefined ? headers : { ...headers, "content-length": String(Buffer.byteLength(body)) }
      let response: Http.IncomingMessage
      try {
        response = await sendOnce(url, method, sent, body, pool, options, signal)
      } catch (cause) {
        throw new TypeError("fetch failed", { cause })
      }
      const status = response.statusCode ?? 0
      const location = response.headers.location
      if (REDIRECTS.has(status) && location !== undefined && (init.redirect ?? "follow") !== "manual") {
        response.resume()
        if (init.redirect === "error") throw new TypeError("fetch failed", { cause: new Error(`redirected (HTTP ${status})`) })
        if (hop >= maxRedirects) {
          throw new TypeError("fetch failed", { cause: new Error(`more than ${maxRedirects} redirects`) })
        }
        let next: URL
        try {
          next = new URL(location, url)
        } catch {
          throw new TypeError("fetch failed", { cause: new Error("a redirect to an invalid URL") })
        }
        if (status === 303 || ((status === 301 || status === 302) && method === "POST")) {
          if (method !== "HEAD") method = "GET"
          body = undefined
          delete headers["content-type"]
        }
        url = next
        continue
      }
      const responseHeaders = new Headers()
      const raw = response.rawHeaders
      const stream = decoded(response)
      for (let i = 0; i + 1 < raw.length; i += 2) {
        const name = raw[i]!.toLowerCase()
        if (stream !== response && (name === "content-encoding" || name === "content-length")) continue
        try {
          responseHeaders.append(name, raw[i + 1]!)
        } catch {
          // a header value fetch cannot hold: left out
        }
      }
      const empty = method === "HEAD" || status === 204 || status === 205 || status === 304
      if (empty) response.resume()
      const result = new Response(empty ? null : (Readable.toWeb(stream) as ReadableStream<Uint8Array>), {
        status: status < 200 || status > 599 ? 502 : status,
        statusText: response.statusMessage ?? "",
        headers: responseHeaders
      })
      Object.defineProperty(result, "url", { value: url.href })
      Object.defineProperty(result, "redirected", { value: hop > 0 })
      return result
    }
  }
  return {
    fetch: fetch as typeof globalThis.fetch,
    close: () => pool.destroy()
  }
}

/**
 * `effect/http`'s `HttpClient` on the guarded fetch, its connections closed with the layer. A refused
 * request fails with an `HttpClientError` whose cause chain holds an `OutboundRefused` (`isRefusal`).
 */
export const layerHttpClient = (options: FetchOptions): Layer.Layer<HttpClient.HttpClient> =>
  Layer.unwrap(
    Effect.acquireRelease(Effect.sync(() => makeFetch(options)), (guarded) => Effect.sync(guarded.close)).pipe(
      // `Layer.fresh`: layers are memoized by reference in one build, and `FetchHttpClient.layer` is one
      // shared value. Without it, under `svc start all` whichever was built first won: the MCP server's
      // plain client got the guarded fetch (its calls to the docs API on 127.0.0.1 were refused), or
      // this guarded client got the plain fetch (no guard at all).
      // The guarded fetch is provided around each request, innermost: a `FetchHttpClient.Fetch` a caller
      // provides (a test helper, say) would otherwise win over a layer's and switch the guard off.
      Effect.map((guarded) =>
        Layer.effect(
          HttpClient.HttpClient,
          Effect.map(HttpClient.HttpClient, (client) =>
            client.pipe(HttpClient.transformResponse((response) => Effect.provideService(response, FetchHttpClient.Fetch, guarded.fetch))))
        ).pipe(Layer.provide(Layer.fresh(FetchHttpClient.layer)))
      )
    )
  )
