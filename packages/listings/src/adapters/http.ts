/**
 * Fetching a feed URL with the source's credentials, with errors the run can categorize.
 *
 * The credential belongs to the origin of the source's `url`: it is sent only to that origin (a page
 * elsewhere, see JsonFeed's `pageOrigins`, is asked without it), and the client (the outbound guard)
 * drops it when a redirect leaves the origin.
 */
import { OutboundGuard } from "@svc/platform"
import { Config, Duration, Effect, Option, Redacted } from "effect"
import { HttpClient, HttpClientRequest, type HttpClientResponse } from "effect/http"
import type { SourceConfig } from "../Sources.ts"
import { FeedError } from "./SourceAdapter.ts"

/** `FEED_TIMEOUT` (default 60 seconds): until a feed page's response headers arrive. */
export const FeedTimeout = Config.Duration("FEED_TIMEOUT").pipe(Config.withDefault(Duration.seconds(60)))

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
    const timeout = yield* FeedTimeout.pipe(Effect.orElseSucceed(() => Duration.seconds(60)))
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
            message: refused === undefined ? `${where}: ${error.message}` : `${where}: refused: ${refused}`
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

/** The URL without query and credentials, for log lines. */
export const safeUrl = (url: string): string => {
  try {
    const parsed = new URL(url)
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`
  } catch {
    return "(invalid URL)"
  }
}
