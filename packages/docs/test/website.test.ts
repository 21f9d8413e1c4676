/**
 * Website and llms.txt sources on a real database, against sites served on 127.0.0.1 (allowed by
 * DOCS_ALLOW_PRIVATE=true, as a developer would): the crawl's scope, robots.txt, caps, redirects to
 * another origin, llms.txt and llms-full.txt, and the outbound guard without the setting.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { IndexEvent } from "@svc/schema"
import { ConfigProvider, Effect, Fiber, Logger, Result, Schema } from "effect"
import { TestClock } from "effect/testing"
import { SqlClient } from "effect/sql"
import { type IndexProgress, Indexer } from "../src/Indexer.ts"
import { htmlToMarkdown, MAX_NESTING } from "../src/sources/Html.ts"
import { looksLikeLlmsTxt, parseLlmsTxt } from "../src/sources/LlmsTxt.ts"
import { describeCrawl, type IndexFailed } from "../src/sources/Source.ts"
import { crawlPrefix, isGitHttpUrl, pageFile, websiteLibraryId } from "../src/sources/Website.ts"
import { stack } from "./support.ts"
import { page, siteServer } from "./web/SiteServer.ts"

const withSettings = (env: Record<string, string>) => Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env)))
const allowed = withSettings({ DOCS_ALLOW_PRIVATE: "true" })

const failureOf = <A>(effect: Effect.Effect<A, IndexFailed>) =>
  Effect.map(Effect.result(effect), (result) => {
    if (Result.isSuccess(result)) throw new Error("expected a failure, the run succeeded")
    return result.failure
  })

const snippetsOf = (libraryId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ source_path: string; title: string; body: string; language: string | null; kind: string }>`
      SELECT s.source_path, s.title, s.body, s.language, s.kind
      FROM docs.snippets s JOIN docs.versions v ON v.generation_id = s.generation_id
      WHERE v.library_id = ${libraryId} ORDER BY s.ordinal`
  })

const libraryRow = (id: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ title: string; description: string; source_kind: string; source_location: string }>`
      SELECT title, description, source_kind, source_location FROM docs.libraries WHERE id = ${id}`
    return rows[0]
  })

/** Every log line of `effect` with its level (`Warn`, `Info`, …). */
const captureLogs = () => {
  const logged: Array<{ readonly level: string; readonly message: string }> = []
  const capture = Effect.provide(Logger.layer([
    Logger.make((options) => logged.push({ level: options.logLevel, message: String((options.message as ReadonlyArray<unknown>)[0]) }))
  ]))
  return { logged, capture }
}

const prose = (words: string) => `<p>${words} This paragraph is long enough to be kept as a snippet of its own page.</p>`

describe("website helpers", () => {
  it("tells git repositories from websites, names the library and the files", () => {
    assert.isTrue(isGitHttpUrl(new URL("https://github.com/acme/widgets")))
    assert.isTrue(isGitHttpUrl(new URL("https://host.example/acme/widgets.git")))
    assert.isFalse(isGitHttpUrl(new URL("https://github.com/acme/widgets/tree/main/docs")))
    assert.isFalse(isGitHttpUrl(new URL("https://docs.acme.dev/widgets/")))
    assert.strictEqual(websiteLibraryId(new URL("https://www.Docs.acme.dev/widgets/")), "/docs.acme.dev/widgets")
    assert.strictEqual(websiteLibraryId(new URL("https://acme.dev/")), "/acme.dev/docs")
    assert.strictEqual(crawlPrefix(new URL("https://a.dev/docs/intro")), "/docs/intro/")
    assert.strictEqual(crawlPrefix(new URL("https://a.dev/docs/intro.html")), "/docs/")
    assert.strictEqual(pageFile(new URL("https://a.dev/docs/")), "docs/index.md")
    assert.strictEqual(pageFile(new URL("https://a.dev/docs/a%20b.html?page=2")), "docs/a_b_page_2.md")
    assert.strictEqual(pageFile(new URL("https://a.dev/.hidden/x.md")), "_hidden/x.md")
  })

  it("converts HTML without its furniture, keeping code fences and their language", () => {
    const converted = htmlToMarkdown(
      page("Guide", "<h1>Intro</h1><p>See <a href='b.html'>b</a>.</p><pre><code class='language-ts'>const x = 1\n</code></pre>", {
        description: "About &amp; more",
        nav: "<a href='/docs/a.html'>A</a>"
      })
    )
    assert.strictEqual(converted.title, "Guide")
    assert.strictEqual(converted.description, "About & more")
    assert.strictEqual(converted.markdown, "# Intro\n\nSee [b](b.html).\n\n```ts\nconst x = 1\n```")
    assert.deepStrictEqual(converted.links, ["/docs/a.html", "b.html"])
  })

  it("does not convert a page nested deeper than MAX_NESTING (turndown recursed per level: 2,000 divs overflowed the stack, 150,000 hung for minutes)", () => {
    const started = performance.now()
    const huge = htmlToMarkdown("<div>".repeat(150_000)) // 750 kB, under the 1 MB page cap
    assert.isBelow(performance.now() - started, 1000, "a linear scan, not a conversion")
    assert.strictEqual(huge.skipped, `nested deeper than ${MAX_NESTING} elements`)
    assert.strictEqual(huge.markdown, "")

    const deep = htmlToMarkdown(`<title>Deep</title><a href="next.html">n</a>${"<div>".repeat(3000)}text${"</div>".repeat(3000)}<a href="after.html">a</a>`)
    assert.strictEqual(deep.skipped, `nested deeper than ${MAX_NESTING} elements`)
    assert.strictEqual(deep.title, "Deep")
    assert.deepStrictEqual(deep.links, ["next.html", "after.html"], "its links are still read")
    // a stray end tag closes nothing: these divs nest 3,000 deep in a browser (and in turndown)
    assert.strictEqual(htmlToMarkdown("<div></span>".repeat(3000)).skipped, `nested deeper than ${MAX_NESTING} elements`)

    // what a real page does is converted: some depth, end tags left out, void and self-closed elements, markup in scripts,
    // an end tag closing the elements left open inside it
    const fine = htmlToMarkdown(
      `${"<div>".repeat(100)}<p>Kept text.${"<br><img src=x.png><span/>".repeat(500)}<ul>${"<li>item".repeat(1000)}</ul>` +
        `<script>${"<div>".repeat(1000)}</script><!-- ${"<div>".repeat(1000)} -->${"<div><span><b>unclosed</div>".repeat(500)}` +
        `${"</div>".repeat(100)}`
    )
    assert.isUndefined(fine.skipped)
    assert.include(fine.markdown, "Kept text.")
    assert.match(fine.markdown, /^- +item$/m)
  })

  it("reads a character reference of no character as U+FFFD; keeps a malformed percent-escape as it is in the file name", () => {
    const converted = htmlToMarkdown(
      `<title>Bad &#x110000; title</title><meta name="description" content="Surrogate &#xD800; null &#0; ok &#x41;">` +
        `<body><a href="/ent2/a&#9999999999;b">x</a></body>`
    )
    assert.strictEqual(converted.title, "Bad \uFFFD title")
    assert.strictEqual(converted.description, "Surrogate \uFFFD null \uFFFD ok A")
    assert.deepStrictEqual(converted.links, ["/ent2/a\uFFFDb"])
    assert.strictEqual(pageFile(new URL("https://a.dev/pct/bad%E0%A4%A")), "pct/bad_E0_A4_A.md")
  })

  it("reads llms.txt's title, summary and links; an HTML answer is not one", () => {
    const parsed = parseLlmsTxt("# Kit\n\n> A kit for things.\n> Second line.\n\n## Docs\n\n- [Start](/kit/start.md): first\n- [API](<api.md> \"t\")\n")
    assert.deepStrictEqual(parsed, { title: "Kit", summary: "A kit for things. Second line.", links: ["/kit/start.md", "api.md"] })
    assert.isFalse(looksLikeLlmsTxt("text/html", "# x"))
    assert.isFalse(looksLikeLlmsTxt("text/plain", "<!doctype html><html>"))
    assert.isTrue(looksLikeLlmsTxt("text/plain; charset=utf-8", "# Kit"))
  })
})

layer(stack)("website sources", (it) => {
  it.effect("crawls same-origin pages under the path: robots.txt, depth, other origins and redirects away never requested", () =>
    Effect.gen(function*() {
      const other = yield* siteServer({ "/x": { body: page("Elsewhere", prose("Another origin.")) } })
      const site = yield* siteServer({
        "/robots.txt": { type: "text/plain", body: "User-agent: *\nDisallow: /docs/private/\n" },
        "/docs/": {
          body: page("Widgets docs", `<h1>Widgets</h1>${prose("Widgets are small reusable parts.")}`, {
            description: "Everything about widgets",
            nav: `<a href="/docs/guide.html">Guide</a> <a href="/docs/private/secret.html">Secret</a> <a href="/about.html">About</a>
              <a href="/docs/away">Away</a> <a href="/docs/moved">Moved</a> <a href="/docs/logo.png">Logo</a> <a href="mailto:a@b.c">Mail</a>
              <a href="${"http://127.0.0.1:" + 1}/docs/other-port.html">Other</a>`
          })
        },
        "/docs/guide.html": {
          body: page("Guide", `<h1>Guide</h1>${prose("Install widgets first.")}<h2>Configure</h2><p>Configure with a layer:</p>` +
            `<pre><code class="language-ts">const widget = Widget.make({ size: 3 })\n</code></pre><a href="deep/1.html#top">deeper</a>`)
        },
        "/docs/deep/1.html": { body: page("One", `<h1>One</h1>${prose("Depth two page.")}<a href="2.html">2</a>`) },
        "/docs/deep/2.html": { body: page("Two", `<h1>Two</h1>${prose("Depth three page.")}<a href="3.html">3</a>`) },
        "/docs/deep/3.html": { body: page("Three", `<h1>Three</h1>${prose("Depth four page, beyond the cap.")}`) },
        "/docs/private/secret.html": { body: page("Secret", prose("Must never be fetched.")) },
        "/about.html": { body: page("About", prose("Outside the path.")) },
        "/docs/moved": { location: "/docs/moved-here.html" },
        "/docs/moved-here.html": { body: page("Moved", `<h1>Moved</h1>${prose("Reached through a same-origin redirect.")}`) },
        "/docs/logo.png": { type: "image/png", body: "PNG" }
      })
      site.set({ "/docs/away": { location: `${other.base}/x` } })

      const indexer = yield* Indexer
      const outcome = yield* indexer.add(`${site.base}/docs/`).pipe(allowed)
      assert.strictEqual(outcome.libraryId, "/127.0.0.1/docs")
      assert.strictEqual(outcome.version, "latest")

      const snippets = yield* snippetsOf(outcome.libraryId)
      const paths = [...new Set(snippets.map((s) => s.source_path))].sort()
      assert.deepStrictEqual(paths, ["docs/deep/1.md", "docs/deep/2.md", "docs/guide.md", "docs/index.md", "docs/moved-here.md"])
      const text = snippets.map((s) => s.body).join("\n")
      for (const furniture of ["NAV-TEXT", "FOOTER-TEXT", "SCRIPT-TEXT", "color: red"]) assert.notInclude(text, furniture)
      const code = snippets.find((s) => s.kind === "code")!
      assert.strictEqual(code.language, "ts")
      assert.include(code.body, "Widget.make")

      assert.notInclude(site.requested, "/docs/private/secret.html", "robots.txt disallows it")
      assert.notInclude(site.requested, "/about.html", "outside the path")
      assert.notInclude(site.requested, "/docs/logo.png", "not a page")
      assert.notInclude(site.requested, "/docs/deep/3.html", "beyond DOCS_CRAWL_MAX_DEPTH (3)")
      assert.include(site.requested, "/docs/away")
      assert.deepStrictEqual(other.requested, [], "a redirect to another origin is not followed")

      const library = yield* libraryRow(outcome.libraryId)
      assert.deepStrictEqual(library, {
        title: "Widgets docs",
        description: "Everything about widgets",
        source_kind: "website",
        source_location: `${site.base}/docs/`
      })

      // refresh fetches the site again into the same version
      site.set({ "/docs/guide.html": { body: page("Guide", `<h1>Guide</h1>${prose("Rewritten guide about gadgets.")}`) } })
      yield* indexer.refresh(outcome.libraryId).pipe(allowed)
      const again = (yield* snippetsOf(outcome.libraryId)).map((s) => s.body).join("\n")
      assert.include(again, "Rewritten guide about gadgets")
      assert.notInclude(again, "Widget.make")
    }))

  it.effect("a start URL that redirects (/docs → /docs/) is crawled from where it landed: its relative links read there, stored once", () =>
    Effect.gen(function*() {
      // what most servers do with a folder's URL without its slash; the page's links are relative to
      // /docs/, and were read against /docs (→ /guide.html, outside the crawl): only the start page was
      // indexed, under docs.md, and again as docs/index.md when a link led back to it
      const site = yield* siteServer({
        "/docs": { location: "/docs/" },
        "/docs/": {
          body: page("Docs", `<h1>Docs</h1>${prose("The start page of a folder that redirects.")}<a href="guide.html">Guide</a> <a href="./">Home</a>`)
        },
        "/docs/guide.html": { body: page("Guide", `<h1>Guide</h1>${prose("Linked relatively from the start page.")}<a href="deep/1.html">1</a>`) },
        "/docs/deep/1.html": { body: page("One", `<h1>One</h1>${prose("Two links away from the start page.")}<a href="2.html">2</a>`) },
        "/docs/deep/2.html": { body: page("Two", `<h1>Two</h1>${prose("Three links away from the start page.")}`) }
      })
      const indexer = yield* Indexer
      const outcome = yield* indexer.add(`${site.base}/docs`).pipe(allowed)
      const paths = [...new Set((yield* snippetsOf(outcome.libraryId)).map((s) => s.source_path))].sort()
      assert.deepStrictEqual(paths, ["docs/deep/1.md", "docs/deep/2.md", "docs/guide.md", "docs/index.md"])
      assert.strictEqual(site.requested.filter((p) => p === "/docs/").length, 1, "the start page is fetched once")
    }))

  it.effect("a redirect is judged where it lands: never to a path robots.txt disallows, nor stored outside the crawl's folder or twice", () =>
    Effect.gen(function*() {
      const site = yield* siteServer({
        "/robots.txt": { type: "text/plain", body: "User-agent: *\nDisallow: /docs/private/\n" },
        "/docs/": {
          body: page(
            "Docs",
            `<h1>Docs</h1>${prose("A site with redirects.")}<a href="moved.html">Moved</a> <a href="out.html">Out</a> ` +
              `<a href="again.html">Again</a> <a href="guide.html">Guide</a>`
          )
        },
        "/docs/moved.html": { location: "/docs/private/secret.html" },
        "/docs/private/secret.html": { body: page("Secret", `<h1>Secret</h1>${prose("Disallowed by robots.txt, never to be fetched.")}`) },
        "/docs/out.html": { location: "/about.html" },
        "/about.html": { body: page("About", `<h1>About</h1>${prose("Outside the crawl's folder.")}`) },
        "/docs/again.html": { location: "/docs/guide.html" },
        "/docs/guide.html": { body: page("Guide", `<h1>Guide</h1>${prose("Reached by a link and by a redirect.")}`) },
        "/llms/": { body: page("Llms", prose("Not used: the llms.txt is.")) },
        "/llms/llms.txt": { type: "text/plain", body: "# Llms\n\n- [Ok](/llms/ok.md)\n- [Hidden](/llms/hop.md)\n" },
        "/llms/ok.md": { type: "text/markdown", body: "# Ok\n\nA page the llms.txt links, fetched and indexed as it is, long enough to be kept." },
        "/llms/hop.md": { location: "/docs/private/llms.md" },
        "/docs/private/llms.md": { type: "text/markdown", body: "# Hidden\n\nDisallowed by robots.txt, reached by a redirect." }
      })
      const indexer = yield* Indexer
      const outcome = yield* indexer.add(`${site.base}/docs/`).pipe(allowed)
      const snippets = yield* snippetsOf(outcome.libraryId)
      assert.deepStrictEqual([...new Set(snippets.map((s) => s.source_path))].sort(), ["docs/guide.md", "docs/index.md"])
      assert.notInclude(site.requested, "/docs/private/secret.html", "robots.txt disallows where the redirect leads")

      const llms = yield* indexer.add(`${site.base}/llms/`).pipe(allowed)
      assert.deepStrictEqual([...new Set((yield* snippetsOf(llms.libraryId)).map((s) => s.source_path))], ["llms/ok.md"])
      assert.notInclude(site.requested, "/docs/private/llms.md")

      // an added URL whose redirect robots.txt disallows fails as the URL itself would
      site.set({ "/start/": { location: "/docs/private/secret.html" } })
      const refused = yield* failureOf(indexer.add(`${site.base}/start/`).pipe(allowed))
      assert.strictEqual(refused.category, "source_not_allowed")
      assert.strictEqual(refused.message, `robots.txt of ${site.base} disallows ${site.base}/docs/private/secret.html (where ${site.base}/start/ redirects)`)
      assert.notInclude(site.requested, "/docs/private/secret.html")
    }))

  it.effect("each page's Source: line is the URL it was read from, an agent can open it (was the stored file's relative path)", () =>
    Effect.gen(function*() {
      const site = yield* siteServer({
        "/site": { location: "/site/" },
        "/site/": { body: page("Site", `<h1>Site</h1>${prose("The start page of the site.")}<a href="a%20b.html?x=1">A</a> <a href="moved">M</a>`) },
        "/site/a%20b.html?x=1": { body: page("A", `<h1>A</h1>${prose("A page with a space and a query in its URL.")}`) },
        "/site/moved": { location: "/site/landed.html" },
        "/site/landed.html": { body: page("Landed", `<h1>Landed</h1>${prose("Reached through a redirect.")}`) },
        "/kit/llms.txt": { type: "text/plain", body: "# Kit\n\n- [Start](start.md)\n" },
        "/kit/start.md": { type: "text/markdown", body: "# Start\n\nStart with the kit by reading this page, long enough to be a snippet." },
        "/full/llms-full.txt": { type: "text/plain", body: "# Full\n\n## All\n\nThe whole documentation in one file, long enough to be a snippet." }
      })
      const sourcesOf = (libraryId: string) =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const rows = yield* sql<{ source_path: string; source_url: string | null }>`
            SELECT s.source_path, s.source_url FROM docs.snippets s JOIN docs.versions v ON v.generation_id = s.generation_id
            WHERE v.library_id = ${libraryId} ORDER BY s.source_path`
          return rows.map((row) => [row.source_path, row.source_url])
        })
      const indexer = yield* Indexer
      const crawled = yield* indexer.add(`${site.base}/site`).pipe(allowed)
      assert.deepStrictEqual(yield* sourcesOf(crawled.libraryId), [
        ["site/a_b_x_1.md", `${site.base}/site/a%20b.html?x=1`],
        ["site/index.md", `${site.base}/site/`],
        ["site/landed.md", `${site.base}/site/landed.html`]
      ])
      const llms = yield* indexer.add(`${site.base}/kit/`).pipe(allowed)
      assert.deepStrictEqual(yield* sourcesOf(llms.libraryId), [["kit/start.md", `${site.base}/kit/start.md`]])
      const full = yield* indexer.add(`${site.base}/full/`).pipe(allowed)
      assert.deepStrictEqual(yield* sourcesOf(full.libraryId), [["llms-full/part-001.md", `${site.base}/full/llms-full.txt`]])

      // the text answer shows it, and counts it in the snippet's tokens
      const sql = yield* SqlClient.SqlClient
      const [row] = yield* sql<{ tokens: number; body: string; title: string }>`
        SELECT s.tokens, s.body, s.title FROM docs.snippets s JOIN docs.versions v ON v.generation_id = s.generation_id
        WHERE v.library_id = ${llms.libraryId}`
      assert.strictEqual(row!.tokens, Math.ceil(`### ${row!.title}\n\nSource: ${site.base}/kit/start.md\n\n${row!.body}\n\n${"-".repeat(40)}\n\n`.length / 4))
    }))

  it.effect("an llms-full.txt gives the library's description from its > summary, as an llms.txt does", () =>
    Effect.gen(function*() {
      const site = yield* siteServer({
        "/guide/llms-full.txt": {
          type: "text/plain",
          body: "# Guide\n\n> Everything about the guide, in one file.\n\n## Start\n\nThe whole documentation of the guide in one single file, all of it.\n"
        }
      })
      const outcome = yield* (yield* Indexer).add(`${site.base}/guide/`).pipe(allowed)
      assert.deepStrictEqual(yield* libraryRow(outcome.libraryId), {
        title: "Guide",
        description: "Everything about the guide, in one file.",
        source_kind: "website",
        source_location: `${site.base}/guide/`
      })
      // a blockquote further down belongs to a page, it is not the summary
      site.set({
        "/quotes/llms-full.txt": {
          type: "text/plain",
          body: "# Quotes\n\n## Warnings\n\n> Never run this in production, a page of the documentation says.\n\nMore text of the page.\n"
        }
      })
      const quotes = yield* (yield* Indexer).add(`${site.base}/quotes/`).pipe(allowed)
      assert.strictEqual((yield* libraryRow(quotes.libraryId))!.description, "")
    }))

  it.effect("a crawl or an llms.txt reports each page as it is fetched, before the files are read (it was silent for the whole crawl)", () =>
    Effect.gen(function*() {
      const site = yield* siteServer({
        "/docs/": { body: page("Docs", `<h1>Docs</h1>${prose("The start page.")}<a href="a.html">A</a> <a href="b.html">B</a> <a href="gone.html">G</a>`) },
        "/docs/a.html": { body: page("A", `<h1>A</h1>${prose("Page A.")}`) },
        "/docs/b.html": { body: page("B", `<h1>B</h1>${prose("Page B.")}`) },
        "/kit/llms.txt": { type: "text/plain", body: "# Kit\n\n- [Start](start.md)\n" },
        "/kit/start.md": { type: "text/markdown", body: "# Start\n\nStart with the kit by reading this page, long enough to be a snippet." }
      })
      const indexer = yield* Indexer
      const progress: Array<IndexProgress> = []
      const onProgress = (event: IndexProgress) => Effect.sync(() => progress.push(event))
      yield* indexer.add(`${site.base}/docs/`, { onProgress }).pipe(withSettings({ DOCS_ALLOW_PRIVATE: "true", DOCS_CRAWL_CONCURRENCY: "1" }))
      const started = progress.findIndex((event) => event._tag === "Started")
      assert.deepStrictEqual(progress.slice(0, started), [
        { _tag: "Fetched", url: `${site.base}/docs/`, pages: 1, maxPages: 200 },
        { _tag: "Fetched", url: `${site.base}/docs/a.html`, pages: 2, maxPages: 200 },
        { _tag: "Fetched", url: `${site.base}/docs/b.html`, pages: 3, maxPages: 200 },
        // then the crawl's summary: the page that is not there is skipped, and said so
        { _tag: "Crawled", pages: 3, maxPages: 200, skipped: [{ reason: "not_found", pages: 1 }], stoppedAfter: null }
      ], "a page that is not there (404) is not counted")

      progress.length = 0
      yield* indexer.add(`${site.base}/kit/`, { onProgress }).pipe(allowed)
      assert.deepStrictEqual(progress.filter((event) => event._tag === "Fetched" || event._tag === "Crawled"), [
        { _tag: "Fetched", url: `${site.base}/kit/llms.txt`, pages: 1, maxPages: 200 },
        { _tag: "Fetched", url: `${site.base}/kit/start.md`, pages: 2, maxPages: 200 },
        { _tag: "Crawled", pages: 1, maxPages: 1, skipped: [], stoppedAfter: null }
      ])
    }))

  it.effect("a page in another character encoding (Content-Type charset, else <meta charset>) is read in it, not as UTF-8", () =>
    Effect.gen(function*() {
      // every byte that is not UTF-8 became U+FFFD: "Caf\ufffd", "\ufffd\ufffd\ufffd\ufffd" for a Japanese title
      const site = yield* siteServer({
        "/enc/": {
          type: "text/html; charset=ISO-8859-1",
          body: Buffer.from(page("Caf\xe9 docs", `<h1>Caf\xe9 cr\xe8me</h1>${prose("Le caf\xe9 cr\xe8me se sert chaud, d\xe8s le matin.")}<a href="sjis.html">J</a>`), "latin1")
        },
        "/enc/sjis.html": {
          type: "text/html",
          body: Buffer.concat([
            Buffer.from(`<!doctype html><html><head><meta charset="shift_jis"><title>SJIS</title></head><body><main><h1>`),
            new Uint8Array([0x93, 0xfa, 0x96, 0x7b, 0x8c, 0xea]), // 日本語
            Buffer.from(`</h1>${prose("A page whose encoding only its meta element names.")}</main></body></html>`)
          ])
        }
      })
      const outcome = yield* (yield* Indexer).add(`${site.base}/enc/`).pipe(allowed)
      assert.strictEqual((yield* libraryRow(outcome.libraryId))!.title, "Caf\u00e9 docs")
      const snippets = yield* snippetsOf(outcome.libraryId)
      assert.isTrue(snippets.some((s) => s.title === "Caf\u00e9 cr\u00e8me" && s.body.includes("Le caf\u00e9 cr\u00e8me se sert chaud, d\u00e8s le matin.")))
      assert.isTrue(snippets.some((s) => s.title === "\u65e5\u672c\u8a9e"), JSON.stringify(snippets.map((s) => s.title)))
      assert.notInclude(JSON.stringify(snippets), "\ufffd")
    }))

  it.effect("a page's links and images are made absolute against its URL: an agent reading a snippet can follow them", () =>
    Effect.gen(function*() {
      // `[Config](config.html)` in an answer pointed nowhere an agent could go (docs-mcp-server makes them absolute too)
      const site = yield* siteServer({
        "/abs/guide/": {
          body: page(
            "Guide",
            `<h1>Guide</h1><p>Read <a href="config.html">the configuration</a>, <a href="../api/#make" title="API">make</a>, ` +
              `<a href="#top">this page's top</a> and <a href="https://example.invalid/x">elsewhere</a>; see ` +
              `<img src="img/flow.png" alt="the flow">. This paragraph is long enough to be kept as a snippet of its own page.</p>`
          )
        }
      })
      const outcome = yield* (yield* Indexer).add(`${site.base}/abs/guide/`).pipe(allowed)
      const body = (yield* snippetsOf(outcome.libraryId)).map((s) => s.body).join("\n")
      assert.include(body, `[the configuration](${site.base}/abs/guide/config.html)`)
      assert.include(body, `[make](${site.base}/abs/api/#make "API")`)
      assert.include(body, `[this page's top](${site.base}/abs/guide/#top)`)
      assert.include(body, "[elsewhere](https://example.invalid/x)")
      assert.include(body, `![the flow](${site.base}/abs/guide/img/flow.png)`)
    }))

  it.effect("a page nested too deep, a bad character reference or percent-escape skip that page or decode safely, never fail the site", () =>
    Effect.gen(function*() {
      const site = yield* siteServer({
        "/odd/": {
          body: page("Odd &#x110000; docs", `<h1>Odd</h1>${prose("The start page of a site with odd pages.")}` +
            `<a href="deep.html">Deep</a> <a href="good.html">Good</a> <a href="/odd/ent2/a&#9999999999;b">Ent</a> <a href="/odd/pct/bad%E0%A4%A">Pct</a>`)
        },
        "/odd/deep.html": { body: page("Deep", `${"<div>".repeat(3000)}${prose("Buried three thousand levels down.")}${"</div>".repeat(3000)}<a href="beyond.html">b</a>`) },
        "/odd/beyond.html": { body: page("Beyond", `<h1>Beyond</h1>${prose("Linked only from the deep page.")}`) },
        "/odd/good.html": { body: page("Good", `<h1>Good</h1>${prose("A good page next to the deep one.")}`) },
        "/odd/ent2/a%EF%BF%BDb": { body: page("Ent", `<h1>Ent</h1>${prose("Reached through a reference of no character.")}`) },
        "/odd/pct/bad%E0%A4%A": { body: page("Pct", `<h1>Pct</h1>${prose("Reached through a malformed percent-escape.")}`) }
      })
      const logged: Array<string> = []
      const capture = Effect.provide(Logger.layer([Logger.make((options) => logged.push(String((options.message as ReadonlyArray<unknown>)[0])))]))
      const indexer = yield* Indexer
      const outcome = yield* indexer.add(`${site.base}/odd/`).pipe(allowed, capture)
      const paths = [...new Set((yield* snippetsOf(outcome.libraryId)).map((s) => s.source_path))].sort()
      assert.deepStrictEqual(paths, ["odd/beyond.md", "odd/ent2/a_b.md", "odd/good.md", "odd/index.md", "odd/pct/bad_E0_A4_A.md"])
      assert.include(logged, `Skipped ${site.base}/odd/deep.html: nested deeper than ${MAX_NESTING} elements`)
      assert.include(logged, `${site.base}/odd/: Read 5 pages; skipped 1 (1 not converted)`)
      assert.strictEqual((yield* libraryRow(outcome.libraryId))!.title, "Odd \uFFFD docs")

      // a refresh of the ready site stays ready
      yield* indexer.refresh(outcome.libraryId).pipe(allowed)
      const library = (yield* indexer.list).find((library) => library.id === outcome.libraryId)
      assert.deepStrictEqual(library!.versions.map((v) => [v.version, v.state]), [["latest", "ready"]])
    }))

  it.effect("a page whose conversion would take minutes is abandoned at DOCS_CRAWL_PAGE_TIME_LIMIT; the rest of the site is indexed", () =>
    Effect.gen(function*() {
      // Every block reopens each <b> left open before it: 700 blocks (15 kB) take many seconds and then
      // more memory than the thread's heap; before the converting thread, docs-api froze meanwhile.
      const reopening = Array.from({ length: 700 }, (_, i) => `<div><b id=${i}>x</div>`).join("")
      const site = yield* siteServer({
        "/slow/": { body: page("Slow", `<h1>Slow</h1>${prose("A site with one crafted page.")}<a href="crafted.html">C</a> <a href="good.html">G</a>`) },
        "/slow/crafted.html": { body: page("Crafted", reopening) },
        "/slow/good.html": { body: page("Good", `<h1>Good</h1>${prose("Converted after the crafted page.")}`) }
      })
      const logged: Array<string> = []
      const capture = Effect.provide(Logger.layer([Logger.make((options) => logged.push(String((options.message as ReadonlyArray<unknown>)[0])))]))
      const indexer = yield* Indexer
      const started = performance.now()
      const outcome = yield* indexer.add(`${site.base}/slow/`).pipe(
        withSettings({ DOCS_ALLOW_PRIVATE: "true", DOCS_CRAWL_PAGE_TIME_LIMIT: "1 second" }),
        capture
      )
      assert.isBelow(performance.now() - started, 20_000)
      const paths = [...new Set((yield* snippetsOf(outcome.libraryId)).map((s) => s.source_path))].sort()
      assert.deepStrictEqual(paths, ["slow/good.md", "slow/index.md"])
      assert.include(logged, `Skipped ${site.base}/slow/crafted.html: not converted within 1s`)

      const refused = yield* failureOf(indexer.add(`${site.base}/slow/`, { id: "/slow/zero" }).pipe(
        withSettings({ DOCS_ALLOW_PRIVATE: "true", DOCS_CRAWL_PAGE_TIME_LIMIT: "0 millis" })
      ))
      assert.strictEqual(refused.category, "invalid_source")
      assert.include(refused.message, `must be longer than 0 at ["DOCS_CRAWL_PAGE_TIME_LIMIT"]`)
    }).pipe(TestClock.withLive))

  it.effect("a crawl sums up the pages it skipped, by reason, in the log and the progress (they were skipped without a word)", () =>
    Effect.gen(function*() {
      const other = yield* siteServer({ "/x": { body: page("Elsewhere", prose("Another origin.")) } })
      const site = yield* siteServer({
        "/sk/": {
          body: page(
            "Skips",
            `<h1>Skips</h1>${prose("A site with every kind of page that gives nothing.")}` +
              ["a.html", "away", "broken.html", "data.bin", "gone.html", "missing.html", "moved", "zz-slow.html"]
                .map((href) => `<a href="${href}">${href}</a>`).join(" ")
          )
        },
        "/sk/a.html": { body: page("A", `<h1>A</h1>${prose("The one good page.")}`) },
        "/sk/broken.html": { status: 500, body: "oops" },
        "/sk/data.bin": { type: "application/octet-stream", body: "0101" },
        "/sk/gone.html": { status: 410, body: "gone" },
        "/sk/moved": { location: "/outside.html" },
        "/outside.html": { body: page("Outside", prose("Outside the crawl's folder.")) },
        "/sk/zz-slow.html": { hold: true }
      })
      site.set({ "/sk/away": { location: `${other.base}/x` } })
      const progress: Array<IndexProgress> = []
      const { capture, logged } = captureLogs()
      const fiber = yield* (yield* Indexer).add(`${site.base}/sk/`, { onProgress: (event) => Effect.sync(() => progress.push(event)) }).pipe(
        // one page at a time: when the held page is asked for, every other one is done
        withSettings({ DOCS_ALLOW_PRIVATE: "true", DOCS_CRAWL_CONCURRENCY: "1", DOCS_CRAWL_DEADLINE: "1 hour" }),
        capture,
        Effect.forkChild
      )
      // the held page's DOCS_CRAWL_TIMEOUT (30 s of the test clock) runs from its request: the clock is
      // moved on until the crawl gives it up (the server sees its connection closed)
      yield* site.requestOf("/sk/zz-slow.html")
      while (!site.abandoned("/sk/zz-slow.html")) {
        yield* TestClock.adjust("30 seconds")
        yield* TestClock.withLive(Effect.sleep("10 millis"))
      }
      const outcome = yield* Fiber.join(fiber)
      assert.strictEqual(outcome.files, 2)

      const summary = progress.find((event) => event._tag === "Crawled")
      assert.deepStrictEqual(summary, {
        _tag: "Crawled",
        pages: 2,
        maxPages: 200,
        skipped: [
          { reason: "not_found", pages: 2 },
          { reason: "http_error", pages: 1 },
          { reason: "timed_out", pages: 1 },
          { reason: "redirected_away", pages: 2 },
          { reason: "not_a_page", pages: 1 }
        ],
        stoppedAfter: null
      })
      const line = "Read 2 pages; skipped 7 (2 not found, 1 HTTP error, 1 timed out, 2 redirected away, 1 not HTML or Markdown)"
      assert.strictEqual(describeCrawl(summary!), line)
      assert.deepInclude(logged, { level: "Info", message: `${site.base}/sk/: ${line}` })
      // each page skipped is logged at info with its reason, never as a warning
      for (
        const [path, why] of [
          ["missing.html", "HTTP 404"],
          ["gone.html", "HTTP 410"],
          ["broken.html", "HTTP 500"],
          ["data.bin", "not HTML, Markdown or text (application/octet-stream)"],
          ["moved", `redirects to ${site.base}/outside.html, outside the crawl`],
          ["zz-slow.html", `Cannot fetch ${site.base}/sk/zz-slow.html: no answer within 30s (DOCS_CRAWL_TIMEOUT)`]
        ]
      ) {
        assert.deepInclude(logged, { level: "Info", message: `Skipped ${site.base}/sk/${path}: ${why}` })
      }
      assert.isTrue(logged.some((entry) => entry.level === "Info" && entry.message.startsWith(`Skipped ${site.base}/sk/away: `)))
      assert.deepStrictEqual(logged.filter((entry) => entry.level === "Warn"), [])
    }))

  it.effect("DOCS_CRAWL_DEADLINE stops a crawl or an llms.txt's pages: what was read is indexed, nothing more is requested, and it says so", () =>
    Effect.gen(function*() {
      const site = yield* siteServer({
        "/dl/": {
          body: page("Deadline", `<h1>Deadline</h1>${prose("The start page of a slow site.")}<a href="a.html">A</a> <a href="b.html">B</a> <a href="c.html">C</a>`)
        },
        "/dl/a.html": { body: page("A", `<h1>A</h1>${prose("Read before the deadline.")}`) },
        // held until the deadline has passed: the test clock is moved on only once it is asked for
        "/dl/b.html": { hold: true },
        "/dl/c.html": { body: page("C", `<h1>C</h1>${prose("Never requested: its turn comes after the deadline.")}`) },
        "/kit/llms.txt": { type: "text/plain", body: "# Kit\n\n- [One](one.md)\n- [Two](two.md)\n- [Three](three.md)\n" },
        "/kit/one.md": { type: "text/markdown", body: "# One\n\nThe first page of the kit, read before the deadline, long enough." },
        "/kit/two.md": { hold: true },
        "/kit/three.md": { type: "text/markdown", body: "# Three\n\nNever requested: its turn comes after the deadline passed." }
      })
      const indexer = yield* Indexer
      const progress: Array<IndexProgress> = []
      const onProgress = (event: IndexProgress) => Effect.sync(() => progress.push(event))
      const { capture, logged } = captureLogs()
      // one page at a time, and a request timeout longer than the deadline: only the deadline stops the held page
      const settings = withSettings({
        DOCS_ALLOW_PRIVATE: "true",
        DOCS_CRAWL_CONCURRENCY: "1",
        DOCS_CRAWL_DEADLINE: "1 minute",
        DOCS_CRAWL_TIMEOUT: "1 hour"
      })

      const crawl = yield* indexer.add(`${site.base}/dl/`, { onProgress }).pipe(settings, capture, Effect.forkChild)
      yield* site.requestOf("/dl/b.html")
      yield* TestClock.adjust("1 minute")
      const crawled = yield* Fiber.join(crawl)
      assert.deepStrictEqual([...new Set((yield* snippetsOf(crawled.libraryId)).map((s) => s.source_path))].sort(), ["dl/a.md", "dl/index.md"])
      assert.notInclude(site.requested, "/dl/c.html")
      const summary = progress.find((event) => event._tag === "Crawled")
      assert.deepStrictEqual(summary, { _tag: "Crawled", pages: 2, maxPages: 200, skipped: [], stoppedAfter: "1m" })
      const line = "Stopped after 1m (DOCS_CRAWL_DEADLINE): 2 of at most 200 pages read; raise DOCS_CRAWL_DEADLINE to read more"
      assert.strictEqual(describeCrawl(summary!), line)
      assert.deepInclude(logged, { level: "Warn", message: `${site.base}/dl/: ${line}` })
      // the event as the docs RPC carries it to `svc docs add` with DOCS_URL
      assert.deepStrictEqual(Schema.decodeUnknownSync(IndexEvent)(Schema.encodeSync(IndexEvent)(summary!)), summary)
      assert.isTrue(progress.findIndex((event) => event._tag === "Crawled") < progress.findIndex((event) => event._tag === "Started"))

      progress.length = 0
      const llms = yield* indexer.add(`${site.base}/kit/`, { onProgress }).pipe(settings, capture, Effect.forkChild)
      yield* site.requestOf("/kit/two.md")
      yield* TestClock.adjust("1 minute")
      const read = yield* Fiber.join(llms)
      assert.deepStrictEqual([...new Set((yield* snippetsOf(read.libraryId)).map((s) => s.source_path))], ["kit/one.md"])
      assert.notInclude(site.requested, "/kit/three.md")
      assert.deepStrictEqual(progress.find((event) => event._tag === "Crawled"), {
        _tag: "Crawled",
        pages: 1,
        maxPages: 3,
        skipped: [],
        stoppedAfter: "1m"
      })
    }))

  it.effect("DOCS_CRAWL_DEADLINE with nothing read fails the add read_failed, naming the setting; nothing is stored", () =>
    Effect.gen(function*() {
      const site = yield* siteServer({
        "/never/": { hold: true },
        "/toc/llms.txt": { type: "text/plain", body: "# Toc\n\n- [Only](only.md)\n" },
        "/toc/only.md": { hold: true }
      })
      const indexer = yield* Indexer
      const settings = withSettings({ DOCS_ALLOW_PRIVATE: "true", DOCS_CRAWL_DEADLINE: "1 minute", DOCS_CRAWL_TIMEOUT: "1 hour" })

      const never = yield* failureOf(indexer.add(`${site.base}/never/`)).pipe(settings, Effect.forkChild)
      yield* site.requestOf("/never/")
      yield* TestClock.adjust("1 minute")
      const failure = yield* Fiber.join(never)
      assert.strictEqual(failure.category, "read_failed")
      assert.strictEqual(
        failure.message,
        `No page of ${site.base}/never/ read within 1m (DOCS_CRAWL_DEADLINE): check that the site answers, or raise DOCS_CRAWL_DEADLINE`
      )

      // an llms.txt whose pages were all cut is not indexed as documentation of its own
      const toc = yield* failureOf(indexer.add(`${site.base}/toc/`)).pipe(settings, Effect.forkChild)
      yield* site.requestOf("/toc/only.md")
      yield* TestClock.adjust("1 minute")
      assert.strictEqual((yield* Fiber.join(toc)).category, "read_failed")

      const ids = (yield* indexer.list).map((library) => library.id)
      assert.notInclude(ids, "/127.0.0.1/never")
      assert.notInclude(ids, "/127.0.0.1/toc")
    }))

  it.effect("DOCS_CRAWL_MAX_PAGES and DOCS_CRAWL_MAX_DEPTH bound the crawl", () =>
    Effect.gen(function*() {
      const links = Array.from({ length: 6 }, (_, i) => `<a href="p${i}.html">p${i}</a>`).join(" ")
      const routes: Record<string, { body: string }> = {
        "/site/": { body: page("Site", `<h1>Site</h1>${prose("The start.")}${links}`) }
      }
      for (let i = 0; i < 6; i++) routes[`/site/p${i}.html`] = { body: page(`P${i}`, `<h1>P${i}</h1>${prose(`Page ${i}.`)}<a href="q${i}.html">q</a>`) }
      for (let i = 0; i < 6; i++) routes[`/site/q${i}.html`] = { body: page(`Q${i}`, `<h1>Q${i}</h1>${prose(`Second level ${i}.`)}`) }
      const site = yield* siteServer(routes)
      const indexer = yield* Indexer

      const capped = yield* indexer.add(`${site.base}/site/`, { id: "/caps/pages" }).pipe(
        withSettings({ DOCS_ALLOW_PRIVATE: "true", DOCS_CRAWL_MAX_PAGES: "3" })
      )
      assert.strictEqual(capped.files, 3)
      const pages = site.requested.filter((p) => p.startsWith("/site/") && !p.includes("llms"))
      assert.deepStrictEqual(pages, ["/site/", "/site/p0.html", "/site/p1.html"])

      site.requested.length = 0
      const shallow = yield* indexer.add(`${site.base}/site/`, { id: "/caps/depth" }).pipe(
        withSettings({ DOCS_ALLOW_PRIVATE: "true", DOCS_CRAWL_MAX_DEPTH: "1" })
      )
      assert.strictEqual(shallow.files, 7)
      assert.isFalse(site.requested.some((p) => p.includes("/q")), "second-level pages are two links away")

      const bad = yield* failureOf(indexer.add(`${site.base}/site/`).pipe(withSettings({ DOCS_ALLOW_PRIVATE: "true", DOCS_CRAWL_CONCURRENCY: "0" })))
      assert.strictEqual(bad.category, "invalid_source")
      assert.include(bad.message, "DOCS_CRAWL_CONCURRENCY")
    }))

  it.effect("llms.txt under the path: its title and summary, the same-origin Markdown it links; llms-full.txt at the root", () =>
    Effect.gen(function*() {
      const other = yield* siteServer({ "/c.md": { type: "text/markdown", body: "# C\n\nFrom another origin, never fetched here at all." } })
      const site = yield* siteServer({
        "/kit/llms.txt": {
          type: "text/plain; charset=utf-8",
          body: `# Kit\n\n> A toolkit for building kits.\n\n## Docs\n\n- [Start](/kit/start.md): first steps\n` +
            `- [API](api.html)\n- [Elsewhere](${other.base}/c.md)\n`
        },
        "/kit/start.md": { type: "text/markdown", body: "# Start\n\n## Install\n\nInstall the kit with your package manager before anything else.\n\n```sh\nnpm install kit\n```\n" },
        "/kit/api.html": { body: page("API", `<h1>API</h1>${prose("The kit's functions, one by one.")}`) }
      })
      const indexer = yield* Indexer
      const outcome = yield* indexer.add(`${site.base}/kit/`).pipe(allowed)
      assert.strictEqual(outcome.libraryId, "/127.0.0.1/kit")
      const snippets = yield* snippetsOf(outcome.libraryId)
      assert.deepStrictEqual([...new Set(snippets.map((s) => s.source_path))].sort(), ["kit/api.md", "kit/start.md"])
      assert.isTrue(snippets.some((s) => s.language === "sh" && s.body.includes("npm install kit")))
      assert.deepStrictEqual(other.requested, [])
      assert.notInclude(site.requested, "/kit/", "no crawl when an llms.txt is there")
      const library = yield* libraryRow(outcome.libraryId)
      assert.strictEqual(library!.title, "Kit")
      assert.strictEqual(library!.description, "A toolkit for building kits.")

      site.set({
        "/llms-full.txt": {
          type: "text/plain",
          body: "# Full\n\n## Everything\n\nThe whole documentation of the product in one single file, all of it.\n"
        }
      })
      const full = yield* indexer.add(`${site.base}/product/`).pipe(allowed)
      const fullSnippets = yield* snippetsOf(full.libraryId)
      assert.deepStrictEqual([...new Set(fullSnippets.map((s) => s.source_path))], ["llms-full/part-001.md"])
      assert.strictEqual((yield* libraryRow(full.libraryId))!.title, "Full")
    }))

  it.effect("the outbound guard: 127.0.0.1 refused without DOCS_ALLOW_PRIVATE, nothing requested or stored", () =>
    Effect.gen(function*() {
      const site = yield* siteServer({ "/docs/": { body: page("Docs", prose("Private docs.")) } })
      const indexer = yield* Indexer
      const refused = yield* failureOf(indexer.add(`${site.base}/docs/`, { id: "/guard/refused" }))
      assert.strictEqual(refused.category, "source_not_allowed")
      assert.include(refused.message, "127.0.0.1 is in the loopback range (set DOCS_ALLOW_PRIVATE=true to allow it)")
      assert.deepStrictEqual(site.requested, [])
      assert.isFalse((yield* indexer.list).some((library) => library.id === "/guard/refused"))

      const local = yield* failureOf(indexer.add("http://docs.localhost/guide/"))
      assert.strictEqual(local.category, "source_not_allowed")
    }))

  it.effect("a start URL robots.txt disallows, a missing page, a redirect away and a non-page fail with their category", () =>
    Effect.gen(function*() {
      const site = yield* siteServer({
        "/robots.txt": { type: "text/plain", body: "User-agent: svc-docs\nDisallow: /closed/\n" },
        "/closed/": { body: page("Closed", prose("Closed to crawlers.")) },
        "/away/": { location: "http://127.0.0.1:1/elsewhere/" },
        "/spec.bin": { type: "application/octet-stream", body: "0101" }
      })
      const indexer = yield* Indexer
      const closed = yield* failureOf(indexer.add(`${site.base}/closed/`).pipe(allowed))
      assert.strictEqual(closed.category, "source_not_allowed")
      assert.strictEqual(closed.message, `robots.txt of ${site.base} disallows ${site.base}/closed/`)
      assert.notInclude(site.requested, "/closed/")

      const missing = yield* failureOf(indexer.add(`${site.base}/nothing/`).pipe(allowed))
      assert.strictEqual(missing.category, "source_not_found")
      assert.strictEqual(missing.message, `${site.base}/nothing/ answered HTTP 404`)

      const away = yield* failureOf(indexer.add(`${site.base}/away/`).pipe(allowed))
      assert.strictEqual(away.category, "source_not_found")
      assert.include(away.message, "redirects to another origin (http://127.0.0.1:1), not followed")

      const binary = yield* failureOf(indexer.add(`${site.base}/spec.bin`).pipe(allowed))
      assert.strictEqual(binary.category, "unsupported_source")

      const credentials = yield* failureOf(indexer.add(`http://user:pw@127.0.0.1:${site.port}/docs/`).pipe(allowed))
      assert.strictEqual(credentials.category, "invalid_source")
      const ids = (yield* indexer.list).map((library) => library.id)
      for (const id of ["/127.0.0.1/closed", "/127.0.0.1/nothing", "/127.0.0.1/away", "/127.0.0.1/spec"]) assert.notInclude(ids, id)
    }))
})
