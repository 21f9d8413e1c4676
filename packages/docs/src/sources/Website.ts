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
 * HTML is converted in a worker thread, a page at a time, each within `DOCS_CRAWL_PAGE_TIME_LIMIT`
 * (PageConverter.ts). A page that cannot be converted (nested deeper than `MAX_NESTING` elements, not
 * converted in time, or any error converting it) is skipped with a warning in the log
 * (`Skipped <url>: <reason>`); the rest of the site is read (a page skipped for its nesting still has
 * its links followed; one abandoned in the thread has none).
 *
 * Both honour the origin's robots.txt (a disallowed URL is never requested; an added URL that is
 * disallowed fails `source_not_allowed`). Library id from `--id`, else `/<host>/<last path segment>`
 * (`https://docs.acme.dev/widgets/` → `/docs.acme.dev/widgets`; `docs` at the root); version
 * `--version`, else `latest`; title and description `--title`/`--description`, else the llms.txt's
 * (`# H1`, `> summary`), else the start page's `<title>` and meta description. A snippet's source
 * path is the page's path on the site; its `Source:` line the URL the page was read from.
 */
import { Effect, FileSystem, Path } from "effect"
import { looksLikeLlmsTxt, parseLlmsTxt } from "./LlmsTxt.ts"
import { makePageConverter, type PageConverter } from "./PageConverter.ts"
import { checkLibraryId, checkVersion, IndexFailed, invalidSource, type Source, type SourceOptions } from "./Source.ts"
import { type Fetched, type Fetcher, makeFetcher, robotsOf, startFailed, webSettings } from "./WebFetch.ts"

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
 * A fetched page as Markdown, with its links and metadata; undefined when it is not a page. A page
 * that cannot be converted (nested deeper than `MAX_NESTING`, or any error converting it) has
 * `skipped`, the reason, and no Markdown: it is left out, the rest of the site is read.
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

/** {@link asDocument}, logging a page skipped and why (`Skipped https://host/docs/x.html: nested deeper than 256 elements`). */
const readDocument = (converter: PageConverter, fetched: Fetched) =>
  Effect.tap(asDocument(converter, fetched), (document) =>
    document?.skipped === undefined ? Effect.void : Effect.logWarning(`Skipped ${fetched.url.href}: ${document.skipped}`))

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
    // each document fetched is reported as it comes (a crawl of DOCS_CRAWL_MAX_PAGES may take minutes)
    let fetched = 0
    const reportFetched = (fetchedFrom: Fetched) =>
      options.onFetch === undefined || fetchedFrom.status !== 200
        ? Effect.void
        : Effect.suspend(() => options.onFetch!({ _tag: "Fetched", url: fetchedFrom.url.href, pages: ++fetched, maxPages: settings.maxPages }))
    const converter = yield* makePageConverter(settings.pageTimeLimit)
    const allowed = yield* robotsOf(fetcher, start)
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
    const llms = yield* findLlms(fetcher, llmsCandidates, allowed)
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
      const read = yield* Effect.forEach(targets, (url) =>
        fetcher.get(url, MAX_PAGE_BYTES, allowed).pipe(
          Effect.tap((answer) => answer._tag === "Success" ? reportFetched(answer.success) : Effect.void),
          Effect.flatMap((answer) =>
            answer._tag === "Success"
              ? Effect.map(readDocument(converter, answer.success), (document) =>
                document === undefined || document.markdown.trim() === ""
                  ? undefined
                  : { file: pageFile(url), markdown: document.markdown, url: answer.success.url.href })
              : Effect.undefined
          )
        ), { concurrency: settings.concurrency })
      pages.push(...read.filter((page): page is Page => page !== undefined))
      // An llms.txt without readable links is documentation of its own.
      if (pages.length === 0) pages.push({ file: "llms.md", markdown: llms.body, url: llms.url.href })
    } else {
      const first = yield* fetcher.get(start, MAX_PAGE_BYTES, allowed)
      if (first._tag === "Failure") return yield* startFailed(first.failure)
      if (first.success.status !== 200) {
        return yield* new IndexFailed({ category: "source_not_found", message: `${start.href} answered HTTP ${first.success.status}` })
      }
      yield* reportFetched(first.success)
      const document = yield* readDocument(converter, first.success)
      if (document === undefined) {
        return yield* new IndexFailed({
          category: "unsupported_source",
          message: `${start.href} is not an HTML, Markdown or text page (${first.success.contentType || "no content type"})`
        })
      }
      title = document.title
      description = document.description
      // Where the start page landed (`/docs` redirects to `/docs/`): its links are relative to that
      // URL and the crawl stays in its folder. Read against the URL as added, `guide.html` on the page
      // at /docs/ was /guide.html, outside the crawl, and the start page was stored twice.
      const landed = first.success.url
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
      for (let depth = 1; depth <= settings.maxDepth && level.length > 0 && requested < settings.maxPages; depth++) {
        const batch = level.sort((a, b) => a.href.localeCompare(b.href)).slice(0, settings.maxPages - requested)
        requested += batch.length
        const read = yield* Effect.forEach(batch, (url) =>
          fetcher.get(url, MAX_PAGE_BYTES, allowed).pipe(
            Effect.tap((answer) => answer._tag === "Success" ? reportFetched(answer.success) : Effect.void),
            Effect.flatMap((answer) =>
            answer._tag === "Success"
              ? Effect.map(readDocument(converter, answer.success), (document) => ({ url: answer.success.url, document }))
              : Effect.undefined
          )
          ), { concurrency: settings.concurrency })
        const next: Array<URL> = []
        for (const page of read) {
          if (page === undefined || page.document === undefined) continue
          // a page reached through a redirect counts where it landed: outside the crawl's folder, or
          // a page already read (linked too, or the target of another redirect), it is not stored again
          const at = keyOf(page.url)
          if (landedAt.has(at) || !inScope(page.url)) continue
          landedAt.add(at)
          seen.add(at)
          if (page.document.markdown.trim() !== "") {
            pages.push({ file: pageFile(page.url), markdown: page.document.markdown, url: page.url.href })
          }
          if (depth < settings.maxDepth) enqueueLinks(page.document.links, page.url, next)
        }
        level = next
      }
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
