/**
 * One HTTP delivery attempt, on node's http/https with keep-alive agents (one pool per worker).
 * Never fails: the outcome is a response (any status) or a transport error described in words.
 *
 * The agents are the suite's outbound guard's (`@svc/platform` `OutboundGuard.agents`): unless
 * `QUEUE_ALLOW_PRIVATE=true`, a connection goes only to an address the guard allows (checked in the
 * agents' `lookup`, so on the address connected to), and an IP literal or local name is refused before
 * connecting. Redirects are not followed: a 3xx answer is a failed attempt like any other non-2xx, as
 * a signed delivery names its destination URL (`sub`) and must not land elsewhere.
 */
import { OutboundGuard } from "@svc/platform"
import { Effect } from "effect"
import * as Http from "node:http"
import * as Https from "node:https"
import { guardOptions } from "./Destinations.ts"

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

const responseHeaders = (raw: ReadonlyArray<string>): Record<string, Array<string>> => {
  const out: Record<string, Array<string>> = {}
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase()
    ;(out[name] ??= []).push(raw[i + 1]!)
  }
  return out
}

const describe = (error: NodeJS.ErrnoException, timedOut: boolean, timeoutMs: number): string => {
  if (timedOut) return `No answer within ${timeoutMs} ms`
  if (error.code === "EPRIVATE") return "The destination resolves to a private or loopback address"
  if (error.code === "ECONNREFUSED") return "Connection refused"
  if (error.code === "ENOTFOUND" || error.code === "EAI_AGAIN") return "The destination's host name does not resolve"
  if (error.code === "ECONNRESET") return "Connection reset by the destination"
  return `Request failed (${error.code ?? error.message})`
}

export const makeSender = (options: {
  readonly maxSockets: number
  readonly maxResponseBytes: number
  readonly allowPrivate: boolean
}): Sender => {
  const guard = guardOptions(options.allowPrivate)
  const { http, https } = OutboundGuard.agents({ ...guard, maxSockets: options.maxSockets })

  const send = (request: DeliveryRequest): Effect.Effect<DeliveryOutcome> =>
    Effect.callback<DeliveryOutcome>((resume) => {
      let settled = false
      const done = (outcome: DeliveryOutcome) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        resume(Effect.succeed(outcome))
      }
      const url = new URL(request.url)
      const refused = OutboundGuard.requestRefusal(url, guard)
      if (refused !== undefined) {
        // not `done`: its timer does not exist yet
        settled = true
        resume(Effect.succeed({ _tag: "Failed", error: `The destination is refused: ${refused}` }))
        return
      }
      const secure = url.protocol === "https:"
      let timedOut = false
      const headers: Record<string, string> = { ...request.headers }
      if (request.method !== "GET" && request.method !== "HEAD") headers["content-length"] = String(request.body.length)
      const req = (secure ? Https : Http).request(url, {
        method: request.method,
        headers,
        agent: secure ? https : http
      }, (res) => {
        const chunks: Array<Buffer> = []
        let size = 0
        res.on("data", (chunk: Buffer) => {
          if (size < options.maxResponseBytes) {
            const room = options.maxResponseBytes - size
            chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk)
          }
          size += chunk.length
        })
        res.on("end", () =>
          done({
            _tag: "Response",
            status: res.statusCode ?? 0,
            headers: responseHeaders(res.rawHeaders),
            body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)
          }))
        res.on("error", (error) => done({ _tag: "Failed", error: describe(error, timedOut, request.timeoutMs) }))
      })
      const timer = setTimeout(() => {
        timedOut = true
        req.destroy(Object.assign(new Error("timeout"), { code: "ETIMEDOUT" }))
      }, request.timeoutMs)
      req.on("error", (error) => done({ _tag: "Failed", error: describe(error, timedOut, request.timeoutMs) }))
      if (request.method !== "GET" && request.method !== "HEAD") req.end(request.body)
      else req.end()
      return Effect.sync(() => {
        clearTimeout(timer)
        req.destroy()
      })
    })

  return {
    send,
    close: () => {
      http.destroy()
      https.destroy()
    }
  }
}

/** `Retry-After` (seconds or an HTTP date) in milliseconds from now, when present and sane. */
export const retryAfterMs = (headers: Record<string, Array<string>>, now: number): number | undefined => {
  const value = headers["retry-after"]?.[0]?.trim()
  if (value === undefined || value === "") return undefined
  if (/^\d+$/.test(value)) return Number(value) * 1000
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}
