/**
 * Fetching a feed URL with the source's credentials, with errors the run can categorize.
 *
 * The credential belongs to the origin of the source's `url`: it is sent only to that origin (a page
 * elsewhere, see JsonFeed's `pageOrigins`, is asked without it), and the client (the outbound guard)
 * drops it when a redirect leaves the origin.
 */
import { OutboundGuard, Settings } from "@svc/platform"
import { Config, Duration, Effect, Option, Redacted, Stream } from "effect"
import { HttpClient, HttpClientRequest, type HttpClientResponse } from "effect/http"
import type { SourceConfig } from "../Sources.ts"
import { FeedError } from "./SourceAdapter.ts"

/**
 * `FEED_TIMEOUT` (default 60 seconds): until a feed page's response headers arrive, and then between
 * two pieces of its body (a feed that stops sending fails instead of holding its source's lease).
 */
export const FeedTimeout = Settings.durationSetting("FEED_TIMEOUT", "60 seconds")

/**
 * `FEED_MAX_BYTES` (default 256 MiB): the most one feed page (a JSON page, a whole CSV) may hold once
 * decompressed. Without it a feed that never ends, or a gzip bomb, grew the process until it died
 * (an outside test: 4.3 GB in 40 s, then out of memory, the API gone with it). A JSON page is parsed
 * whole, so this is also about the memory one page may take (V8 holds no string over 512 MiB anyway).
 */
export const FeedMaxBytes = Settings.intSetting("FEED_MAX_BYTES", 256 * 1024 * 1024)

/**
 * A page's body as it arrives: failing once it holds more than `FEED_MAX_BYTES`, or when nothing
 * arrives for `FEED_TIMEOUT`.
 */
export const feedBody = (
  response: HttpClientResponse.HttpClientResponse,
  url: string
): Stream.Stream<Uint8Array, FeedError> =>
  Stream.unwrap(Effect.gen(function*() {
    // both checked when the service starts (ListingsConfig.ts): a bad value cannot reach here
    const maxBytes = yield* FeedMaxBytes.pipe(Effect.orDie)
    const idle = yield* FeedTimeout.pipe(Effect.orDie)
    const where = safeUrl(url)
    let bytes = 0
    return response.stream.pipe(
      Stream.mapError((error) =>
        new FeedError({ kind: "unreachable", message: `${where}: the body broke off: ${withoutQueries(error.message)}` })
      ),
      Stream.mapEffect((chunk) => {
        bytes += chunk.length
        return bytes > maxBytes
          ? Effect.fail(new FeedError({ kind: "malformed", message: `${where} is larger than FEED_MAX_BYTES (${maxBytes} bytes)` }))
          : Effect.succeed(chunk)
      }),
      Stream.timeoutOrElse({
        duration: idle,
        orElse: () =>
          Stream.fail(new FeedError({ kind: "timeout", message: `${where} sent nothing for ${Duration.format(idle)}` }))
      })
    )
  }))

const credential = (config: SourceConfig) =>
  Effect.gen(function*() {
    if (config.auth === undefined) return Option.none<readonly [string, string]>()
    const value = yield* Config.Redacted(config.auth.env).pipe(
      Effect.mapError(() =>
        new FeedError({ kind: "credentials", message: `source ${config.id}: ${config.auth?.env} is not set` })
      )
    )
    const header = config.auth.header ?? "Authorization"
    const scheme = config.auth.scheme ?? (header.toLowerCase() === "authorization" ? "Bearer" : "")
    return Option.some([header, scheme === "" ? Redacted.value(value) : `${scheme} ${Redacted.value(value)}`] as const)
  })

/** GET a feed URL; non-2xx, network errors and timeouts are `FeedError`s (the URL's query is not logged). */
export const feedGet = (
  client: HttpClient.HttpClient,
  url: string,
  config: SourceConfig
): Effect.Effect<HttpClientResponse.HttpClientResponse, FeedError> =>
  Effect.gen(function*() {
    const timeout = yield* FeedTimeout.pipe(Effect.orDie)
    const auth = sameOrigin(url, config.url) ? yield* credential(config) : Option.none<readonly [string, string]>()
    const where = safeUrl(url)
    let request = HttpClientRequest.get(url).pipe(HttpClientRequest.acceptJson)
    if (Option.isSome(auth)) request = HttpClientRequest.setHeader(request, auth.value[0], auth.value[1])
    const response = yield* client.execute(request).pipe(
      Effect.timeoutOrElse({
        duration: timeout,
        orElse: () => Effect.fail(new FeedError({ kind: "timeout", message: `${where} did not answer in time` }))
      }),
      Effect.catchTag("HttpClientError", (error) => {
        const refused = OutboundGuard.refusalOf(error)
        return Effect.fail(
          new FeedError({
            kind: "unreachable",
            message: refused === undefined ? `${where}: ${withoutQueries(error.message)}` : `${where}: refused: ${refused}`
          })
        )
      })
    )
    if (response.status < 200 || response.status >= 300) {
      return yield* new FeedError({ kind: "http_status", message: `${where} answered HTTP ${response.status}` })
    }
    return response
  })

/** Whether two URLs have one origin (scheme, host, port). */
export const sameOrigin = (url: string, other: string | undefined): boolean => {
  try {
    return other !== undefined && new URL(url).origin === new URL(other).origin
  } catch {
    return false
  }
}

/**
 * `text` with the query and fragment of every http(s) URL in it cut: an HTTP client's error message
 * names the URL it asked (`Transport error (GET https://feed.example/x?api_key=…)`), and a feed's key
 * in the query went to the log with it.
 */
export const withoutQueries = (text: string): string => text.replace(/(\bhttps?:\/\/[^\s?#)]*)[?#][^\s)]*/gi, "$1")

/** The URL without query and credentials, for log lines. */
export const safeUrl = (url: string): string => {
  try {
    const parsed = new URL(url)
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`
  } catch {
    return "(invalid URL)"
  }
}
