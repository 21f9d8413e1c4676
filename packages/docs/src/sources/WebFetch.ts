/**
 * Fetching for the web sources (Website.ts, OpenApi.ts): every request goes through the suite's
 * outbound guard (`OutboundGuard.makeFetch` from @svc/platform: private, loopback and link-local
 * addresses refused on the address actually connected to, unless `DOCS_ALLOW_PRIVATE=true`).
 *
 * - **Redirects** are followed only within the first request's origin (at most 5); a redirect to
 *   another origin, or to a URL robots.txt disallows, is not followed (the page is skipped; for the
 *   URL that was added, the add fails).
 * - **Bodies** are read up to a cap (a bigger one is not read at all); a request that takes longer
 *   than `DOCS_CRAWL_TIMEOUT` (default 30 seconds) is abandoned. (The whole crawl's bound,
 *   `DOCS_CRAWL_DEADLINE`, is Website.ts's.)
 * - **robots.txt** of the origin is read once (`robots-parser`); a path it disallows for the
 *   `svc-docs` user agent (or `*`) is never requested. No robots.txt (or an unreadable one): all allowed.
 */
import { OutboundGuard, Settings } from "@svc/platform"
import { Config, Duration, Effect } from "effect"
import robotsParserModule from "robots-parser"
import { IndexFailed } from "./Source.ts"

/**
 * robots-parser is CommonJS (`module.exports = function`) and its types declare an ES default export:
 * node's default import is the function itself.
 */
const robotsParser = robotsParserModule as unknown as typeof robotsParserModule.default

export const USER_AGENT = "svc-docs"
export const ALLOW_PRIVATE_SETTING = "DOCS_ALLOW_PRIVATE"
export const CRAWL_DEADLINE_SETTING = "DOCS_CRAWL_DEADLINE"

/** The web sources' settings (documented in the package README, "Websites and llms.txt"). */
export const WebSettings = Config.all({
  allowPrivate: Config.Boolean(ALLOW_PRIVATE_SETTING).pipe(Config.withDefault(false)),
  maxPages: Settings.intSetting("DOCS_CRAWL_MAX_PAGES", 200, { max: 100_000 }),
  maxDepth: Settings.intSetting("DOCS_CRAWL_MAX_DEPTH", 3, { min: 0, max: 100 }),
  // a polite crawl: a few requests at a time to one site
  concurrency: Settings.intSetting("DOCS_CRAWL_CONCURRENCY", 2, { max: 16 }),
  timeout: Settings.durationSetting("DOCS_CRAWL_TIMEOUT", "30 seconds"),
  pageTimeLimit: Settings.durationSetting("DOCS_CRAWL_PAGE_TIME_LIMIT", "10 seconds"),
  // The whole fetch of a website, llms.txt and its pages or a crawl: past it no new page is fetched
  // and what was read is indexed. 200 pages that each take up to DOCS_CRAWL_TIMEOUT, two at a time,
  // were ~50 minutes of one add; a real site of 200 pages reads in one or two. Ten minutes leaves a
  // slow site five times that, and keeps an add (or a refresh over the RPC) from running for an hour.
  deadline: Settings.durationSetting(CRAWL_DEADLINE_SETTING, "10 minutes")
})
export type WebSettings = typeof WebSettings extends Config.Config<infer A> ? A : never

const REDIRECTS = new Set([301, 302, 303, 307, 308])
const MAX_REDIRECTS = 5

/** A response read: the URL it came from (after same-origin redirects), its status, type and text. */
export interface Fetched {
  readonly url: URL
  readonly status: number
  readonly contentType: string
  readonly body: string
}

/** Why a request gave nothing usable: refused by the guard, redirected away, too big, no answer in time, failed. */
export interface NotFetched {
  readonly _tag: "NotFetched"
  readonly reason: "refused" | "redirected_away" | "disallowed" | "too_big" | "timed_out" | "failed"
  readonly message: string
}

const notFetched = (reason: NotFetched["reason"], message: string): NotFetched => ({ _tag: "NotFetched", reason, message })

/** A TextDecoder for `label` (a charset name), or undefined when there is no such encoding. */
const decoderFor = (label: string | undefined): TextDecoder | undefined => {
  if (label === undefined) return undefined
  try {
    return new TextDecoder(label.trim().replace(/^["']|["']$/g, ""))
  } catch {
    return undefined
  }
}

/**
 * A body's text in its character encoding: the Content-Type's `charset`, else for HTML a `<meta
 * charset>` (or `http-equiv` Content-Type) in its first 1,024 bytes, as a browser's prescan finds it;
 * else UTF-8. A byte order mark wins, as in a browser. Read as UTF-8 whatever it was, a Latin-1 or
 * Shift_JIS page came out with U+FFFD for every letter that is not ASCII.
 */
export const decodeBody = (bytes: Uint8Array, contentType: string): string => {
  const bom = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf
    ? "utf-8"
    : bytes[0] === 0xff && bytes[1] === 0xfe
    ? "utf-16le"
    : bytes[0] === 0xfe && bytes[1] === 0xff
    ? "utf-16be"
    : undefined
  const declared = /;\s*charset\s*=\s*("[^"]*"|[^;\s]+)/i.exec(contentType)?.[1]
  const sniffed = declared === undefined && /html/i.test(contentType || "html")
    ? /<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)/i.exec(Buffer.from(bytes.subarray(0, 1024)).toString("latin1"))?.[1]
    : undefined
  const decoder = decoderFor(bom) ?? decoderFor(declared) ?? decoderFor(sniffed) ?? new TextDecoder("utf-8")
  return decoder.decode(bytes)
}

const readCapped = async (response: Response, cap: number): Promise<string | undefined> => {
  const declared = Number(response.headers.get("content-length") ?? "NaN")
  if (declared > cap) {
    await response.body?.cancel()
    return undefined
  }
  const reader = response.body?.getReader()
  if (reader === undefined) return ""
  const chunks: Array<Uint8Array> = []
  let total = 0
  while (true) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > cap) {
      await reader.cancel()
      return undefined
    }
    chunks.push(value)
  }
  return decodeBody(Buffer.concat(chunks), response.headers.get("content-type") ?? "")
}

/** Settings read, failing as the source's failure when one is malformed. */
export const webSettings = WebSettings.pipe(
  Effect.mapError((error) =>
    new IndexFailed({
      category: "invalid_source",
      message: `web source settings (DOCS_ALLOW_PRIVATE, DOCS_CRAWL_*): ${error.message.replace(/\s+/g, " ")}`
    })
  )
)

/**
 * A guarded fetcher living as long as the scope (its keep-alive connections are closed with it).
 * `get` never fails: a request that gives nothing usable answers {@link NotFetched}.
 */
export const makeFetcher = Effect.fnUntraced(function*(settings: WebSettings) {
  const guarded = yield* Effect.acquireRelease(
    Effect.sync(() =>
      OutboundGuard.makeFetch({ allowPrivate: settings.allowPrivate, setting: ALLOW_PRIVATE_SETTING, maxRedirects: 0, maxSockets: settings.concurrency })
    ),
    (fetcher) => Effect.sync(fetcher.close)
  )

  const once = (url: URL, cap: number) =>
    Effect.tryPromise({
      try: async (signal): Promise<Fetched | { readonly redirect: URL; readonly status: number }> => {
        const response = await guarded.fetch(url, {
          redirect: "manual",
          signal,
          headers: { "user-agent": USER_AGENT, accept: "text/html, text/markdown;q=0.9, text/plain;q=0.8, */*;q=0.5" }
        })
        const location = response.headers.get("location")
        if (REDIRECTS.has(response.status) && location !== null) {
          await response.body?.cancel()
          return { redirect: new URL(location, url), status: response.status }
        }
        const body = await readCapped(response, cap)
        if (body === undefined) throw notFetched("too_big", `${url.href} is bigger than ${Math.round(cap / 1_000_000)} MB`)
        return { url, status: response.status, contentType: response.headers.get("content-type") ?? "", body }
      },
      catch: (error): NotFetched => {
        if ((error as NotFetched)._tag === "NotFetched") return error as NotFetched
        const refused = OutboundGuard.refusalOf(error)
        if (refused !== undefined) return notFetched("refused", `Refused outbound request: ${refused}`)
        const cause = (error as { cause?: { message?: string; code?: string } }).cause
        return notFetched("failed", `Cannot fetch ${url.href}: ${cause?.code ?? cause?.message ?? (error as Error).message}`)
      }
    }).pipe(
      Effect.timeoutOrElse({
        duration: settings.timeout,
        orElse: () => Effect.fail(notFetched("timed_out", `Cannot fetch ${url.href}: no answer within ${Duration.format(settings.timeout)} (DOCS_CRAWL_TIMEOUT)`))
      })
    )

  /**
   * GET `url`, following redirects within its origin; `cap` bytes at most. `allowed` (the origin's
   * robots.txt) is asked of every URL a redirect leads to: a hop it disallows is never requested.
   */
  const get = Effect.fnUntraced(function*(url: URL, cap: number, allowed?: (url: URL) => boolean) {
    let current = url
    for (let hop = 0;; hop++) {
      const answer = yield* once(current, cap)
      if (!("redirect" in answer)) return answer
      if (answer.redirect.origin !== url.origin) {
        return yield* Effect.fail(
          notFetched("redirected_away", `${current.href} redirects to another origin (${answer.redirect.origin}), not followed`)
        )
      }
      if (allowed !== undefined && !allowed(answer.redirect)) {
        return yield* Effect.fail(
          notFetched("disallowed", `robots.txt of ${url.origin} disallows ${answer.redirect.href} (where ${url.href} redirects)`)
        )
      }
      if (hop >= MAX_REDIRECTS) return yield* Effect.fail(notFetched("failed", `${url.href}: more than ${MAX_REDIRECTS} redirects`))
      current = answer.redirect
    }
  }, (effect) => Effect.result(effect))

  return { get }
})

export type Fetcher = Effect.Success<ReturnType<typeof makeFetcher>>

/**
 * The origin's robots.txt as a test of URLs (`svc-docs`, else `*`); everything allowed when it has
 * none. Read once per source.
 */
export const robotsOf = Effect.fnUntraced(function*(fetcher: Fetcher, origin: URL) {
  const robotsUrl = new URL("/robots.txt", origin)
  const answer = yield* fetcher.get(robotsUrl, 500_000)
  if (answer._tag === "Failure" || answer.success.status !== 200 || /html/i.test(answer.success.contentType)) {
    return (_url: URL) => true
  }
  const robots = robotsParser(robotsUrl.href, answer.success.body)
  return (url: URL) => robots.isAllowed(url.href, USER_AGENT) !== false
})

/** The source's failure for a URL the source was given and that could not be read. */
export const startFailed = (notFetchedReason: NotFetched): IndexFailed =>
  new IndexFailed({
    category: notFetchedReason.reason === "refused" || notFetchedReason.reason === "disallowed"
      ? "source_not_allowed"
      : notFetchedReason.reason === "too_big"
      ? "read_failed"
      : "source_not_found",
    message: notFetchedReason.message
  })

