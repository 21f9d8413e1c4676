/**
 * A website: `https://host/path` (any http or https URL that is not a git repository, see
 * {@link isGitHttpUrl}, nor an OpenAPI document). Fetched through the outbound guard (WebFetch.ts)
 * into a temporary folder of Markdown files, removed when the scope closes, then read like a folder.
 *
 * 1. **llms.txt first**: `llms.txt` under the path, then `llms-full.txt` under the path, then the same
 *    two at the site's root. An `llms.txt` gives the library's title (`# H1`) and description
 *    (`> summary`), and its links to pages of the same origin are fetched (Markdown as it is, HTML
 *    converted), no further. An `llms-full.txt` is the documentation itself.
 * 2. **Else a crawl** of the pages under the path: breadth first from the URL, same origin, links
 *    whose path starts with the URL's folder (`https://host/docs/intro` → `/docs/`; the folder of
 *    where the start page landed when it redirects within the origin), at most
 *    `DOCS_CRAWL_MAX_PAGES` pages (200) and `DOCS_CRAWL_MAX_DEPTH` links away (3), `DOCS_CRAWL_CONCURRENCY`
 *    requests at a time (2). HTML pages are converted to Markdown (Html.ts); Markdown and text
 *    pages are kept as they are; anything else is skipped.
 *
 * Both stop at `DOCS_CRAWL_DEADLINE` (10 minutes from the start, robots.txt and the llms probes
 * included): no page is requested after it, those in flight are abandoned, and the pages read are
 * indexed; none read, the add fails `read_failed`. Each ends with a summary, logged and reported to
 * `onFetch` (`Crawled`): `Read 57 pages; skipped 5 (3 not found, 1 timed out, 1 not HTML or
 * Markdown)`, or `Stopped after 10m (DOCS_CRAWL_DEADLINE): 57 of at most 200 pages read; …`.
 *
 * HTML is converted in a worker thread, a page at a time, each within `DOCS_CRAWL_PAGE_TIME_LIMIT`
 * (PageConverter.ts). A page that gives nothing (a status other than 200, no answer, refused, not
 * HTML or Markdown, or HTML that cannot be converted: nested deeper than `MAX_NESTING` elements, not
 * converted in time, or any error converting it) is skipped, counted by reason and logged at info
 * (`Skipped <url>: <reason>`; not a warning each: a big site with many broken links would flood the
 * log); the rest of the site is read (a page skipped for its nesting still has its links followed;
 * one abandoned in the thread has none).
 *
 * Both honour the origin's robots.txt (a disallowed URL is never requested; an added URL that is
 * disallowed fails `source_not_allowed`). Library id from `--id`, else `/<host>/<last path segment>`
 * (`https://docs.acme.dev/widgets/` → `/docs.acme.dev/widgets`; `docs` at the root); version
 * `--version`, else `latest`; title and description `--title`/`--description`, else the llms.txt's
 * (`# H1`, `> summary`), else the start page's `<title>` and meta description. A snippet's source
 * path is the page's path on the site; its `Source:` line the URL the page was read from.
 */
import { Duration, Effect, FileSystem, Latch, Option, Path } from "effect"
import { looksLikeLlmsTxt, parseLlmsTxt } from "./LlmsTxt.ts"
import { makePageConverter, type PageConverter } from "./PageConverter.ts"
import {
  checkLibraryId,
  checkVersion,
  type CrawlSummary,
  describeCrawl,
  IndexFailed,
  invalidSource,
  SKIP_REASONS,
  type SkipReason,
  type Source,
  type SourceOptions
} from "./Source.ts"
import { CRAWL_DEADLINE_SETTING, type Fetched, type Fetcher, makeFetcher, robotsOf, startFailed, webSettings } from "./WebFetch.ts"

/** A page bigger than this is not read (Documents.ts reads files up to 1 MB). */
const MAX_PAGE_BYTES = 1_000_000
/** An llms-full.txt may be bigger: it is cut into files of about 500 kB at its headings. */
const MAX_FULL_BYTES = 20_000_000
const FULL_PART_BYTES = 500_000

/** Hosts whose two-segment paths are repositories (`https://github.com/acme/widgets`): git sources. */
const GIT_HOSTS = new Set(["github.com", "gitlab.com", "bitbucket.org", "codeberg.org"])

/** An http(s) URL that names a git repository: `.git` at the end, or `owner/repo` on a known git host. */
export const isGitHttpUrl = (url: URL): boolean => {
  if (/\.git\/?$/i.test(url.pathname)) return true
  const segments = url.pathname.split("/").filter((segment) => segment !== "")
  return GIT_HOSTS.has(url.hostname.toLowerCase().replace(/^www\./, "")) && segments.length === 2
}

/** A file extension that is not a page. */
const NOT_A_PAGE = /\.(png|jpe?g|gif|svg|webp|ico|css|js|mjs|map|json|xml|ya?ml|zip|gz|tgz|pdf|woff2?|ttf|eot|mp[34]|webm|wasm)$/i

/** `/owner/repo` for a website: its host (without `www.`) and the last segment of its path. */
export const websiteLibraryId = (url: URL): string => {
  const segments = url.pathname.split("/").filter((segment) => segment !== "")
  const last = (segments.at(-1) ?? "docs").replace(/\.(html?|md|txt)$/i, "").replace(/[^\w.-]+/g, "-") || "docs"
  return `/${url.hostname.toLowerCase().replace(/^www\./, "")}/${last.toLowerCase()}`
}

/** The folder a crawl stays in: the URL's path up to its last `/` (a last segment without a `.` is a folder). */
export const crawlPrefix = (url: URL): string => {
  const path = url.pathname
  if (path.endsWith("/")) return path
  const last = path.slice(path.lastIndexOf("/") + 1)
  return last.includes(".") ? path.slice(0, path.lastIndexOf("/") + 1) : `${path}/`
}

/** A URL's path with its escapes decoded; as it is (escapes kept) when one is malformed (`%E0%A4%A`). */
const decodedPath = (url: URL): string => {
  try {
    return decodeURIComponent(url.pathname)
  } catch {
    return url.pathname
  }
}

/** The relative file a page is stored as: its path on the site, `.md`, `index.md` for a folder, the query kept. */
export const pageFile = (url: URL): string => {
  let path = decodedPath(url).replace(/^\/+/, "")
  if (path === "" || path.endsWith("/")) path += "index"
  path = path.replace(/\.(html?|md|mdx|markdown|txt)$/i, "")
  const safe = path.split("/").map((segment) => segment.replace(/[^\w.@-]+/g, "_").replace(/^\./, "_")).join("/")
  const query = url.search === "" ? "" : `_${url.search.slice(1).replace(/[^\w.-]+/g, "_")}`
  return `${safe}${query}.md`
}

/** A page's URL without its fragment: the key pages are deduplicated by. */
const keyOf = (url: URL) => {
  const copy = new URL(url.href)
  copy.hash = ""
  return copy.href
}

interface Page {
  readonly file: string
  readonly markdown: string
  /** Where it was read from (after redirects): its snippets' `Source:` line. */
  readonly url: string
}

/**
 * A fetched page (answered 200) as Markdown, with its links and metadata; undefined when it is not a
 * page. A page that cannot be converted (nested deeper than `MAX_NESTING`, or any error converting
 * it) has `skipped`, the reason, and no Markdown: it is left out, the rest of the site is read.
 */
const asDocument = (converter: PageConverter, fetched: Fetched): Effect.Effect<Document | undefined> => {
  if (fetched.status !== 200) return Effect.undefined
  const type = fetched.contentType.toLowerCase()
  const isHtml = /html/.test(type) || (type === "" && /^\s*<(!doctype|html)/i.test(fetched.body))
  if (isHtml) return converter.convert(fetched.body, fetched.url.href)
  if (/^text\/(markdown|x-markdown|plain)/.test(type) || (type === "" && /\.(md|mdx|markdown|txt)$/i.test(fetched.url.pathname))) {
    return Effect.succeed({ markdown: fetched.body, title: "", description: "", links: [], skipped: undefined })
  }
  return Effect.undefined
}

interface Document {
  readonly markdown: string
  readonly title: string
  readonly description: string
  readonly links: ReadonlyArray<string>
  readonly skipped?: string | undefined
}

/** One page requested by a crawl or an llms.txt: read (a document, maybe one not converted), or skipped and why. */
type PageRead =
  | { readonly _tag: "Read"; readonly url: URL; readonly document: Document }
  | { readonly _tag: "Skipped"; readonly reason: SkipReason }

/** Why an answer that is not 200 is skipped. */
const statusReason = (status: number): SkipReason => status === 404 || status === 410 ? "not_found" : "http_error"

/** Resolves `href` against `base`, http(s) only, without its fragment; undefined otherwise. */
const linkTarget = (href: string, base: URL): URL | undefined => {
  const url = URL.parse(href, base)
  if (url === null || (url.protocol !== "http:" && url.protocol !== "https:")) return undefined
  url.hash = ""
  return url
}

export const make = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path

  /** The first of `candidates` that is an llms file, with its URL and text. */
  const findLlms = Effect.fnUntraced(function*(fetcher: Fetcher, candidates: ReadonlyArray<URL>, allowed: (url: URL) => boolean) {
    for (const candidate of candidates) {
      if (!allowed(candidate)) continue
      const full = candidate.pathname.endsWith("llms-full.txt")
      const answer = yield* fetcher.get(candidate, full ? MAX_FULL_BYTES : MAX_PAGE_BYTES, allowed)
      if (answer._tag === "Success" && answer.success.status === 200 && looksLikeLlmsTxt(answer.success.contentType, answer.success.body)) {
        return { url: candidate, full, body: answer.success.body }
      }
    }
    return undefined
  })

  /** An llms-full.txt as files of about {@link FULL_PART_BYTES}, cut before a heading. */
  const fullParts = (body: string, url: string): Array<Page> => {
    const parts: Array<Page> = []
    let current: Array<string> = []
    let size = 0
    const flush = () => {
      if (current.length > 0) {
        parts.push({ file: `llms-full/part-${String(parts.length + 1).padStart(3, "0")}.md`, markdown: current.join("\n"), url })
      }
      current = []
      size = 0
    }
    for (const line of body.split("\n")) {
      if (size > FULL_PART_BYTES && /^#{1,2}\s/.test(line)) flush()
      current.push(line)
      size += line.length + 1
    }
    flush()
    return parts
  }

  const resolve = Effect.fnUntraced(function*(source: string, options: SourceOptions) {
    if (!/^https?:\/\//i.test(source)) return undefined
    const start = URL.parse(source)
    if (start === null) return yield* invalidSource(`${source.slice(0, 200)} is not a URL`)
    if (isGitHttpUrl(start)) return undefined
    if (start.username !== "" || start.password !== "") {
      return yield* invalidSource("A website URL with a user name or password is not accepted (it would be stored)")
    }
    start.hash = ""
    const libraryId = yield* checkLibraryId(options.id ?? websiteLibraryId(start))
    const version = yield* checkVersion(options.version ?? "latest")
    const settings = yield* webSettings
    const fetcher = yield* makeFetcher(settings)

    // DOCS_CRAWL_DEADLINE bounds everything fetched below (robots.txt, the llms probes, the pages): it
    // opens `expired`; a page not yet started is then not requested, one in flight (request or
    // conversion) is abandoned, and what was read is indexed (nothing read: the add fails).
    const expired = yield* Latch.make(false)
    yield* Effect.sleep(settings.deadline).pipe(Effect.andThen(expired.open), Effect.forkScoped)
    /** Whether the deadline left something unread (a page, a probe, robots.txt). */
    let stopped = false
    /** `effect`, unless the deadline passes before or while it runs: then none (and {@link stopped}). */
    const beforeDeadline = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<Option.Option<A>, E> =>
      Effect.suspend(() =>
        expired.isOpen() ? Effect.succeedNone : Effect.raceFirst(Effect.asSome(effect), Effect.as(expired.await, Option.none<A>()))
      ).pipe(Effect.tap((result) => Effect.sync(() => stopped ||= Option.isNone(result))))
    const deadline = Duration.format(settings.deadline)
    const readNothing = () =>
      new IndexFailed({
        category: "read_failed",
        message: `No page of ${start.href} read within ${deadline} (${CRAWL_DEADLINE_SETTING}): check that the site answers, or raise ${CRAWL_DEADLINE_SETTING}`
      })

    // each document fetched is reported as it comes (a crawl of DOCS_CRAWL_MAX_PAGES may take minutes)
    let fetched = 0
    const reportFetched = (fetchedFrom: Fetched) =>
      options.onFetch === undefined || fetchedFrom.status !== 200
        ? Effect.void
        : Effect.suspend(() => options.onFetch!({ _tag: "Fetched", url: fetchedFrom.url.href, pages: ++fetched, maxPages: settings.maxPages }))
    const converter = yield* makePageConverter(settings.pageTimeLimit)

    // pages read and skipped (by reason), for the summary at the end; each skipped page is logged at
    // info, not as a warning: a big site with many broken links would flood the log
    let read = 0
    const skipped = new Map<SkipReason, number>()
    const skip = (url: URL, reason: SkipReason, why: string) =>
      Effect.suspend(() => {
        skipped.set(reason, (skipped.get(reason) ?? 0) + 1)
        return Effect.logInfo(`Skipped ${url.href}: ${why}`)
      })
    /** Counts a document read (or skipped: not converted); false when it was not converted. */
    const countDocument = (url: URL, document: Document) =>
      document.skipped === undefined
        ? Effect.sync(() => {
          read++
          return true
        })
        : Effect.as(skip(url, "not_converted", document.skipped), false)
    /** Requests a page and reads it as a document; a page that gives none is skipped (counted and logged). */
    const readPage = (url: URL): Effect.Effect<PageRead> =>
      Effect.gen(function*() {
        const answer = yield* fetcher.get(url, MAX_PAGE_BYTES, allowed)
        if (answer._tag === "Failure") {
          yield* skip(url, answer.failure.reason, answer.failure.message)
          return { _tag: "Skipped", reason: answer.failure.reason } as const
        }
        const page = answer.success
        if (page.status !== 200) {
          yield* skip(url, statusReason(page.status), `HTTP ${page.status}`)
          return { _tag: "Skipped", reason: statusReason(page.status) } as const
        }
        yield* reportFetched(page)
        const document = yield* asDocument(converter, page)
        if (document === undefined) {
          yield* skip(url, "not_a_page", `not HTML, Markdown or text (${page.contentType || "no content type"})`)
          return { _tag: "Skipped", reason: "not_a_page" } as const
        }
        return { _tag: "Read", url: page.url, document } as const
      })
    /** The summary of the pages read, logged and reported (a warning when the deadline stopped the crawl). */
    const summarise = (maxPages: number) =>
      Effect.gen(function*() {
        const summary: CrawlSummary = {
          _tag: "Crawled",
          pages: read,
          maxPages,
          skipped: (Object.keys(SKIP_REASONS) as Array<SkipReason>).flatMap((reason) =>
            skipped.has(reason) ? [{ reason, pages: skipped.get(reason)! }] : []
          ),
          stoppedAfter: stopped ? deadline : null
        }
        const line = `${start.href}: ${describeCrawl(summary)}`
        yield* stopped ? Effect.logWarning(line) : Effect.logInfo(line)
        if (options.onFetch !== undefined) yield* options.onFetch(summary)
      })

    const allowed = Option.getOrElse(yield* beforeDeadline(robotsOf(fetcher, start)), () => (_url: URL) => true)
    if (!allowed(start)) {
      return yield* new IndexFailed({ category: "source_not_allowed", message: `robots.txt of ${start.origin} disallows ${start.href}` })
    }

    const prefix = crawlPrefix(start)
    const llmsCandidates = [
      ...(prefix === "/" ? [] : [new URL(`${prefix}llms.txt`, start), new URL(`${prefix}llms-full.txt`, start)]),
      new URL("/llms.txt", start),
      new URL("/llms-full.txt", start)
    ]
    const pages: Array<Page> = []
    let title = ""
    let description = ""
    const llms = Option.getOrUndefined(yield* beforeDeadline(findLlms(fetcher, llmsCandidates, allowed)))
    if (llms !== undefined) yield* reportFetched({ url: llms.url, status: 200, contentType: "", body: "" })

    if (llms !== undefined && llms.full) {
      pages.push(...fullParts(llms.body, llms.url.href))
      // the same format as an llms.txt at its top: `# Title`, then `> summary` before the next heading
      // (a blockquote further down is one of the pages')
      const head = /^#\s+\S[^\n]*\n((?:(?!#{1,6}\s)[^\n]*\n?)*)/m.exec(llms.body.slice(0, 100_000))
      const parsed = parseLlmsTxt(head?.[0] ?? "")
      title = parseLlmsTxt(llms.body).title
      description = parsed.summary
    } else if (llms !== undefined) {
      const parsed = parseLlmsTxt(llms.body)
      title = parsed.title
      description = parsed.summary
      const seen = new Set<string>()
      const targets = parsed.links.flatMap((href) => {
        const url = linkTarget(href, llms.url)
        if (url === undefined || url.origin !== start.origin || seen.has(url.href) || !allowed(url)) return []
        seen.add(url.href)
        return [url]
      }).slice(0, settings.maxPages)
      const results = yield* Effect.forEach(targets, (url) => beforeDeadline(readPage(url)), { concurrency: settings.concurrency })
      for (const [i, result] of results.entries()) {
        if (Option.isNone(result) || result.value._tag === "Skipped") continue
        const { document, url } = result.value
        if ((yield* countDocument(url, document)) && document.markdown.trim() !== "") {
          pages.push({ file: pageFile(targets[i]!), markdown: document.markdown, url: url.href })
        }
      }
      yield* summarise(targets.length)
      if (pages.length === 0 && stopped) return yield* readNothing()
      // An llms.txt without readable links is documentation of its own.
      if (pages.length === 0) pages.push({ file: "llms.md", markdown: llms.body, url: llms.url.href })
    } else {
      const startRead = yield* beforeDeadline(Effect.gen(function*() {
        const first = yield* fetcher.get(start, MAX_PAGE_BYTES, allowed)
        if (first._tag === "Failure") return yield* startFailed(first.failure)
        if (first.success.status !== 200) {
          return yield* new IndexFailed({ category: "source_not_found", message: `${start.href} answered HTTP ${first.success.status}` })
        }
        yield* reportFetched(first.success)
        const document = yield* asDocument(converter, first.success)
        if (document === undefined) {
          return yield* new IndexFailed({
            category: "unsupported_source",
            message: `${start.href} is not an HTML, Markdown or text page (${first.success.contentType || "no content type"})`
          })
        }
        return { landed: first.success.url, document }
      }))
      if (Option.isNone(startRead)) return yield* readNothing()
      const { document, landed } = startRead.value
      yield* countDocument(landed, document)
      title = document.title
      description = document.description
      // Where the start page landed (`/docs` redirects to `/docs/`): its links are relative to that
      // URL and the crawl stays in its folder. Read against the URL as added, `guide.html` on the page
      // at /docs/ was /guide.html, outside the crawl, and the start page was stored twice.
      const folder = crawlPrefix(landed)
      const seen = new Set<string>([keyOf(start), keyOf(landed)])
      /** The pages read, by the URL each landed at. */
      const landedAt = new Set<string>([keyOf(landed)])
      const inScope = (url: URL) =>
        url.origin === start.origin && url.pathname.startsWith(folder) && !NOT_A_PAGE.test(url.pathname) && allowed(url)
      const enqueueLinks = (links: ReadonlyArray<string>, base: URL, next: Array<URL>) => {
        for (const href of links) {
          const url = linkTarget(href, base)
          if (url === undefined || seen.has(keyOf(url)) || !inScope(url)) continue
          seen.add(keyOf(url))
          next.push(url)
        }
      }
      if (document.markdown.trim() !== "") pages.push({ file: pageFile(landed), markdown: document.markdown, url: landed.href })
      let requested = 1
      let level: Array<URL> = []
      if (settings.maxDepth > 0) enqueueLinks(document.links, landed, level)
      for (let depth = 1; depth <= settings.maxDepth && level.length > 0 && requested < settings.maxPages && !stopped; depth++) {
        const batch = level.sort((a, b) => a.href.localeCompare(b.href)).slice(0, settings.maxPages - requested)
        requested += batch.length
        // each page within the deadline: past it, the pages read are kept, the rest never requested
        const results = yield* Effect.forEach(batch, (url) => beforeDeadline(readPage(url)), { concurrency: settings.concurrency })
        const next: Array<URL> = []
        for (const [i, result] of results.entries()) {
          if (Option.isNone(result) || result.value._tag === "Skipped") continue
          const page = result.value
          // a page reached through a redirect counts where it landed: outside the crawl's folder, or
          // a page already read (linked too, or the target of another redirect), it is not stored again
          const at = keyOf(page.url)
          if (landedAt.has(at)) continue
          if (!inScope(page.url)) {
            yield* skip(batch[i]!, "redirected_away", `redirects to ${page.url.href}, outside the crawl`)
            continue
          }
          landedAt.add(at)
          seen.add(at)
          if ((yield* countDocument(page.url, page.document)) && page.document.markdown.trim() !== "") {
            pages.push({ file: pageFile(page.url), markdown: page.document.markdown, url: page.url.href })
          }
          if (depth < settings.maxDepth) enqueueLinks(page.document.links, page.url, next)
        }
        level = next
      }
      yield* summarise(settings.maxPages)
      if (pages.length === 0 && stopped) return yield* readNothing()
    }

    const dir = yield* fs.makeTempDirectoryScoped({ prefix: "svc-docs-web-" }).pipe(
      Effect.mapError((error) => new IndexFailed({ category: "read_failed", message: `Cannot create a temporary folder for ${start.href}: ${error.message}` }))
    )
    const written = new Map<string, string>()
    for (const page of pages) {
      let file = page.file
      for (let n = 2; written.has(file); n++) file = page.file.replace(/\.md$/, `-${n}.md`)
      written.set(file, page.url)
      yield* fs.makeDirectory(path.dirname(path.join(dir, file)), { recursive: true }).pipe(
        Effect.andThen(fs.writeFileString(path.join(dir, file), page.markdown)),
        Effect.mapError((error) => new IndexFailed({ category: "read_failed", message: `Cannot store a page of ${start.href}: ${error.message}` }))
      )
    }
    return {
      kind: "website" as const,
      location: start.href,
      root: dir,
      libraryId,
      version,
      // the operator's --title / --description first
      title: options.title ?? (title || start.hostname),
      description: options.description ?? description,
      pageUrls: written
    }
  })

  return { kind: "website", resolve } satisfies Source
})
