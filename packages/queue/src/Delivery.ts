/**
 * One HTTP delivery attempt, on undici with a keep-alive pool of HTTP/1.1 connections (one pool per
 * worker). Never fails: the outcome is a response (any status) or a transport error described in words.
 *
 * undici rather than node's http client: in `bench:queue`'s batch run it costs the worker ~15-20 µs
 * less CPU per delivery (84 / 81 against 104 / 92 µs in alternating runs, issue 18), and its dispatch
 * handler takes the response without a stream object per response.
 *
 * The guard is the suite's (`@svc/platform` `OutboundGuard`): unless `QUEUE_ALLOW_PRIVATE=true`, a
 * connection goes only to an address the guard allows (its `lookup`, which undici hands to
 * `net.connect`/`tls.connect`, so it is checked on the address connected to), and an IP literal or
 * local name is refused before connecting. Redirects are not followed (undici's dispatch never
 * does): a 3xx answer is a failed attempt like any other non-2xx, as a signed delivery names its
 * destination URL (`sub`) and must not land elsewhere.
 */
import { OutboundGuard } from "@svc/platform"
import { Effect } from "effect"
import { Agent, type Dispatcher } from "undici"
import { guardOptions } from "./Destinations.ts"
import { connectionOptions, HOP_BY_HOP } from "./HopByHop.ts"

export interface DeliveryRequest {
  readonly url: string
  readonly method: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: Uint8Array
  readonly timeoutMs: number
}

export type DeliveryOutcome =
  | {
    readonly _tag: "Response"
    readonly status: number
    readonly headers: Record<string, Array<string>>
    /** At most `maxResponseBytes` of the body. */
    readonly body: Uint8Array
  }
  | { readonly _tag: "Failed"; readonly error: string }

export interface Sender {
  readonly send: (request: DeliveryRequest) => Effect.Effect<DeliveryOutcome>
  readonly close: () => void
}

/** The answer's headers by lowercase name, without the hop-by-hop ones (they described the connection). */
const responseHeaders = (headers: Record<string, string | Array<string> | undefined>): Record<string, Array<string>> => {
  const out: Record<string, Array<string>> = {}
  const hops = connectionOptions(Object.entries(headers).find(([name]) => name.toLowerCase() === "connection")?.[1])
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase()
    if (value === undefined || HOP_BY_HOP.has(lower) || hops.has(lower)) continue
    ;(out[lower] ??= []).push(...(Array.isArray(value) ? value : [value]))
  }
  return out
}

const describe = (error: Error & { readonly code?: string }): string => {
  if (error.code === "EPRIVATE") return "The destination resolves to a private or loopback address"
  if (error.code === "ECONNREFUSED") return "Connection refused"
  if (error.code === "ENOTFOUND" || error.code === "EAI_AGAIN") return "The destination's host name does not resolve"
  // undici closes the socket on an informational answer a delivery never asks for (`Expect` is never
  // forwarded, nor `Upgrade`), as a socket error or a failed assertion: name what the destination did.
  if (error.code === "UND_ERR_SOCKET" && error.message === "bad response") {
    return "The destination answered 100 Continue, which no delivery asks for"
  }
  if (error.code === "UND_ERR_SOCKET" && error.message === "bad upgrade") {
    return "The destination answered 101 Switching Protocols, which no delivery asks for"
  }
  if (error.code === "ERR_ASSERTION") {
    return "The destination's answer does not follow HTTP/1.1 (a 101 Switching Protocols without Upgrade, say)"
  }
  if (error.code === "ECONNRESET" || error.code === "UND_ERR_SOCKET") return "Connection reset by the destination"
  // undici's own errors say what was wrong in their message (an invalid header, say); a system
  // error's code is its clearest part.
  if (error.code?.startsWith("UND_ERR") === true) return `Request failed (${error.message.split("\n")[0]!.slice(0, 200)})`
  return `Request failed (${error.code ?? error.message})`
}

/** The request headers without `content-length`: undici sets it from the body. */
const withoutLength = (headers: Readonly<Record<string, string>>): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) if (name.toLowerCase() !== "content-length") out[name] = value
  return out
}

/**
 * The longest a connection is kept idle for the next delivery to its origin, whatever the destination's
 * `Keep-Alive: timeout=` asks (undici honours up to 10 minutes). The pool keeps a connection pool per
 * origin for as long as one of its connections is open, so a publisher delivering to many origins
 * (100,000 hosts, or ports, that each ask for 600 seconds) held a socket and a pool for each for ten
 * minutes; now for at most this long. A busy origin's connection is never idle that long.
 */
export const IDLE_CONNECTION_MS = 10_000

export const makeSender = (options: {
  readonly maxSockets: number
  readonly maxResponseBytes: number
  readonly allowPrivate: boolean
  /** How the guard resolves names (default: the system's); tests make a name resolve inward. */
  readonly resolve?: OutboundGuard.Resolve | undefined
  /** {@link IDLE_CONNECTION_MS} unless given (tests). */
  readonly idleConnectionMs?: number | undefined
}): Sender => {
  const guard = guardOptions(options.allowPrivate, options.resolve)
  const idleMs = options.idleConnectionMs ?? IDLE_CONNECTION_MS
  const pool = new Agent({
    connections: options.maxSockets,
    // undici's own default when the destination names no timeout, never longer than idleMs
    keepAliveTimeout: Math.min(4_000, idleMs),
    keepAliveMaxTimeout: idleMs,
    allowH2: false,
    connect: options.allowPrivate ? {} : { lookup: OutboundGuard.lookup(guard) }
  })

  const send = (request: DeliveryRequest): Effect.Effect<DeliveryOutcome> =>
    Effect.callback<DeliveryOutcome>((resume) => {
      const url = new URL(request.url)
      const refused = OutboundGuard.requestRefusal(url, guard)
      if (refused !== undefined) {
        resume(Effect.succeed({ _tag: "Failed", error: `The destination is refused: ${refused}` }))
        return
      }
      let settled = false
      let controller: Dispatcher.DispatchController | undefined
      const done = (outcome: DeliveryOutcome) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        resume(Effect.succeed(outcome))
      }
      // The message's timeout covers the whole exchange (connect, answer, body), whatever undici's own.
      const timer = setTimeout(() => {
        done({ _tag: "Failed", error: `No answer within ${request.timeoutMs} ms` })
        controller?.abort(new Error("timeout"))
      }, request.timeoutMs)
      let status = 0
      let headers: Record<string, Array<string>> = {}
      const chunks: Array<Buffer> = []
      let size = 0
      try {
        pool.dispatch({
          origin: url.origin,
          path: url.pathname + url.search,
          method: request.method as Dispatcher.HttpMethod,
          headers: withoutLength(request.headers),
          body: request.method === "GET" || request.method === "HEAD" ? null : request.body,
          headersTimeout: request.timeoutMs,
          bodyTimeout: request.timeoutMs
        }, {
          onRequestStart: (started) => {
            controller = started
            if (settled) started.abort(new Error("no longer wanted"))
          },
          onResponseStart: (_, statusCode, answered) => {
            status = statusCode
            headers = responseHeaders(answered as Record<string, string | Array<string> | undefined>)
          },
          onResponseData: (_, chunk) => {
            if (size < options.maxResponseBytes) {
              const room = options.maxResponseBytes - size
              chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk)
            }
            size += chunk.length
          },
          onResponseEnd: () =>
            done({ _tag: "Response", status, headers, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks) }),
          onResponseError: (_, error) => done({ _tag: "Failed", error: describe(error) })
        })
      } catch (error) {
        done({ _tag: "Failed", error: describe(error instanceof Error ? error : new Error(String(error))) })
      }
      return Effect.sync(() => {
        settled = true
        clearTimeout(timer)
        controller?.abort(new Error("interrupted"))
      })
    })

  return { send, close: () => void pool.destroy() }
}

const DAY = "(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
const MONTH = "(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
const TIME = "\\d{2}:\\d{2}:\\d{2}"
/** RFC 9110 §5.6.7 HTTP-date: IMF-fixdate, and the obsolete rfc850-date and asctime-date forms. */
const IMF_FIXDATE = new RegExp(`^${DAY}, \\d{2} ${MONTH} \\d{4} ${TIME} GMT$`)
const RFC850_DATE = new RegExp(`^(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day, \\d{2}-${MONTH}-\\d{2} ${TIME} GMT$`)
const ASCTIME_DATE = new RegExp(`^${DAY} ${MONTH} (?:\\d{2}| \\d) ${TIME} \\d{4}$`)

/**
 * `Retry-After` in milliseconds from now, when present and valid: delta-seconds (digits only) or an
 * HTTP-date (a date already past is 0). Anything else is ignored (`undefined`: the normal backoff
 * applies). `Date.parse` alone took far more than dates: `-5` is the year 2001 to it, so a
 * destination answering `Retry-After: -5` was retried at once.
 */
export const retryAfterMs = (headers: Record<string, Array<string>>, now: number): number | undefined => {
  const value = headers["retry-after"]?.[0]?.trim()
  if (value === undefined || value === "") return undefined
  if (/^\d+$/.test(value)) return Number(value) * 1000
  // asctime-date carries no zone: it is GMT, never the server's local time.
  const date = IMF_FIXDATE.test(value) || RFC850_DATE.test(value)
    ? Date.parse(value)
    : ASCTIME_DATE.test(value)
    ? Date.parse(`${value} GMT`)
    : Number.NaN
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}
