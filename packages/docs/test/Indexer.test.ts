/**
 * Indexing on a real database: the committed fixture folder, installed npm packages, what is skipped,
 * failures with their category, refresh, remove and the generation switch.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Result } from "effect"
import { SqlClient } from "effect/sql"
import * as path from "node:path"
import { type IndexProgress, Indexer } from "../src/Indexer.ts"
import { repositoryId } from "../src/sources/Source.ts"
import { Search } from "../src/Search.ts"
import * as Documents from "../src/sources/Documents.ts"
import { docsFolder, fixtures, stack } from "./support.ts"

const greeter = path.join(fixtures, "greeter")

describe("repositoryId", () => {
  it("reads every common form of package.json's repository field", () => {
        assert.strictEqual(repositoryId("github:acme/greeter"), "/acme/greeter")
        assert.strictEqual(repositoryId("acme/greeter"), "/acme/greeter")
        assert.strictEqual(repositoryId({ type: "git", url: "git+https://github.com/Effect-TS/effect.git" }), "/effect-ts/effect")
        assert.strictEqual(repositoryId({ url: "git@github.com:owner/repo.git" }), "/owner/repo")
        assert.strictEqual(repositoryId({ url: "https://github.com/owner/repo/tree/main/docs" }), "/owner/repo")
        assert.strictEqual(repositoryId("https://gitlab.example.org/group/project.git"), "/group/project")
        assert.strictEqual(repositoryId(undefined), undefined)
        assert.strictEqual(repositoryId(42), undefined)
  })
})

// The real clock: two different adds of one version at once take turns on its run lock, and the one
// that waits sleeps between tries (Indexer's BUSY_RETRY), which a test clock would never end.
layer(stack, { excludeTestServices: true })("Indexer", (it) => {
  it.effect("a folder: id and version from package.json, every format read, changelogs skipped, progress reported", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const progress: Array<IndexProgress> = []
      const outcome = yield* indexer.add(greeter, { onProgress: (event) => Effect.sync(() => progress.push(event)) })
      assert.strictEqual(outcome.libraryId, "/acme/greeter")
      assert.strictEqual(outcome.version, "1.2.0")
      assert.strictEqual(outcome.files, 4)
      assert.deepStrictEqual(progress[0], { _tag: "Started", libraryId: "/acme/greeter", version: "1.2.0", root: greeter })
      assert.deepStrictEqual(
        progress.filter((event) => event._tag === "FileRead").map((event) => event.path),
        ["README.md", "docs/faq.txt", "docs/farewells.rst", "docs/languages.md"]
      )
      assert.deepStrictEqual(progress.at(-1), { _tag: "Stored", snippets: outcome.snippets, tokens: outcome.tokens })

      const sql = yield* SqlClient.SqlClient
      const snippets = yield* sql<{ kind: string; title: string; heading_path: Array<string>; language: string | null; source_path: string; description: string }>`
        SELECT s.kind, s.title, s.heading_path, s.language, s.source_path, s.description
        FROM docs.snippets s JOIN docs.versions v ON v.generation_id = s.generation_id
        WHERE v.library_id = '/acme/greeter' ORDER BY s.ordinal`
      assert.strictEqual(snippets.length, outcome.snippets)
      const sources = new Set(snippets.map((snippet) => snippet.source_path))
      assert.deepStrictEqual([...sources].sort(), ["README.md", "docs/faq.txt", "docs/farewells.rst", "docs/languages.md"])
      const switching = snippets.find((snippet) => snippet.title === "Switching the language" && snippet.kind === "code")!
      assert.deepStrictEqual(switching.heading_path, ["Languages", "Switching the language"])
      assert.include(switching.description, "withLanguage")
      assert.strictEqual(switching.language, "ts")
      const python = snippets.find((snippet) => snippet.language === "python")!
      assert.strictEqual(python.source_path, "docs/farewells.rst")

      const [library] = yield* indexer.list
      assert.strictEqual(library!.id, "/acme/greeter")
      assert.strictEqual(library!.title, "greeter")
      assert.strictEqual(library!.defaultVersion, "1.2.0")
      assert.deepStrictEqual(library!.versions.map((version) => [version.version, version.state, version.snippets]), [["1.2.0", "ready", outcome.snippets]])
    }))

  it.effect("skips node_modules, .git, hidden folders and huge files; --id and --version override", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const dir = yield* docsFolder({
        "guide.md": "# Guide\n\nThe one real page of this library, explaining everything it does.\n",
        "node_modules/dep/README.md": "# Dep\n\nA dependency's readme that must never be indexed here at all.\n",
        ".git/description.txt": "Unnamed repository; edit this file to name the repository, please.\n",
        ".github/notes.md": "# Notes\n\nInternal notes for maintainers that are not documentation at all.\n",
        "huge.md": `# Huge\n\n${"generated text ".repeat(80_000)}\n`,
        "src/code.ts": "export const notDocs = 1"
      })
      const outcome = yield* indexer.add(dir, { id: "/me/thing", version: "2.0" })
      assert.deepStrictEqual([outcome.libraryId, outcome.version, outcome.files, outcome.snippets], ["/me/thing", "2.0", 1, 1])
    }))

  it.effect("a binary file named .md is skipped, not indexed as garbage; UTF-16 with a byte order mark is read as text", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const dir = yield* docsFolder({
        "README.md": "# Mixed\n\nA folder whose docs sit beside binary files that carry a documentation extension.\n",
        "docs/latin1.md": "placeholder"
      })
      const random = Buffer.alloc(200_000)
      for (let i = 0; i < random.length; i++) random[i] = (i * 2654435761 + (i >> 3) * 40503) % 251
      yield* Effect.promise(async () => {
        const { writeFile } = await import("node:fs/promises")
        // random bytes (an image, an archive, a build artefact someone named .md): 51 snippets of mojibake before
        await writeFile(path.join(dir, "docs/blob.md"), random)
        await writeFile(path.join(dir, "docs/screenshot.txt"), Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), random.subarray(0, 5000)]))
        // what Windows tools write: UTF-16 with its byte order mark (read before as "\ufffd\ufffd# U T F 1 6", no heading)
        await writeFile(
          path.join(dir, "docs/utf16.md"),
          Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from("# Wide page\n\nThis page was saved as UTF-16 little endian by an editor on Windows.\n", "utf16le")])
        )
        // Latin-1 prose is text with a few bytes that are not UTF-8: still read
        await writeFile(path.join(dir, "docs/latin1.md"), Buffer.from("# Caf\xe9 guide\n\nThis page was saved as Latin-1 and names the caf\xe9 where the team meets.\n", "latin1"))
        // a symbolic link is not followed (it may lead out of the folder)
        const { symlink } = await import("node:fs/promises")
        await symlink(path.join(greeter, "README.md"), path.join(dir, "docs/linked.md"))
      })
      const progress: Array<IndexProgress> = []
      const outcome = yield* indexer.add(dir, { id: "/acme/mixed", onProgress: (event) => Effect.sync(() => progress.push(event)) })
      const sql = yield* SqlClient.SqlClient
      const snippets = yield* sql<{ source_path: string; title: string; body: string }>`
        SELECT s.source_path, s.title, s.body FROM docs.snippets s JOIN docs.versions v ON v.generation_id = s.generation_id
        WHERE v.library_id = '/acme/mixed' ORDER BY s.ordinal`
      assert.deepStrictEqual([...new Set(snippets.map((s) => s.source_path))], ["README.md", "docs/latin1.md", "docs/utf16.md"])
      assert.strictEqual(outcome.files, 3)
      const wide = snippets.find((s) => s.source_path === "docs/utf16.md")!
      assert.strictEqual(wide.title, "Wide page")
      assert.strictEqual(wide.body, "This page was saved as UTF-16 little endian by an editor on Windows.")
      assert.isTrue(snippets.some((s) => s.body.includes("names the caf\ufffd where")))
      assert.deepStrictEqual(
        progress.filter((event) => event._tag === "FileRead").map((event) => event.path),
        ["README.md", "docs/latin1.md", "docs/utf16.md"]
      )
    }))

  it.effect("a source's own title and description are bounded (200 and 1,000 characters), as an operator's are", () =>
    Effect.gen(function*() {
      // a package.json (or an llms.txt, a page's <title>) is the source's text: a 200,000-character name
      // and a 550 kB description were stored whole, and every search listing the library (and
      // resolve-library-id's text) carried them: 750 kB for one result
      const dir = yield* docsFolder({
        "package.json": JSON.stringify({ name: "n".repeat(5000), description: "big description words ".repeat(25_000), version: "1.0.0" }),
        "README.md": "# Big meta\n\nA folder whose package.json carries a huge name and description for the test.\n"
      })
      yield* (yield* Indexer).add(dir, { id: "/acme/bigmeta" })
      const sql = yield* SqlClient.SqlClient
      const [row] = yield* sql<{ title: string; description: string }>`SELECT title, description FROM docs.libraries WHERE id = '/acme/bigmeta'`
      assert.strictEqual(row!.title, `${"n".repeat(199)}…`)
      assert.isAtMost(row!.description.length, 1000)
      assert.match(row!.description, /^big description words big [a-z ]*[a-z]…$/, "cut at a word")
    }))

  it.effect("npm packages: id from the repository field, version from package.json", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const he = yield* indexer.add("npm:he")
      assert.strictEqual(he.libraryId, "/mathiasbynens/he")
      assert.match(he.version, /^\d+\.\d+\.\d+$/)
      assert.isAbove(he.snippets, 5)
      const bytes = yield* indexer.add("npm:bytes")
      assert.strictEqual(bytes.libraryId, "/visionmedia/bytes.js")
      const listed = (yield* indexer.list).find((library) => library.id === "/mathiasbynens/he")!
      assert.strictEqual(listed.source, "npm:he")
    }))

  it.effect("a NUL in a document or its package.json, or a lone surrogate in its metadata, is indexed without it", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const dir = yield* docsFolder({
        "package.json": JSON.stringify({ name: "nul-pkg", description: "Described \u0000 with a NUL and a lone \ud800 half", version: "1.0.0" }),
        "README.md": "# Nul\n\nA document with a stray \u0000 byte in its text, long enough to be a snippet of its own.\n"
      })
      // Postgres text refuses a NUL: this run failed with "unexpected error" before
      const outcome = yield* indexer.add(dir, { id: "/acme/nul" })
      assert.isAbove(outcome.snippets, 0)
      const sql = yield* SqlClient.SqlClient
      const [library] = yield* sql<{ description: string }>`SELECT description FROM docs.libraries WHERE id = '/acme/nul'`
      assert.strictEqual(library!.description, "Described  with a NUL and a lone \ufffd half")
      const bodies = yield* sql<{ body: string }>`
        SELECT s.body FROM docs.snippets s JOIN docs.versions v ON v.generation_id = s.generation_id WHERE v.library_id = '/acme/nul'`
      assert.isTrue(bodies.some((row) => row.body.includes("a stray  byte in its text")), JSON.stringify(bodies))
    }))

  it.effect("failures name their category; a failed first run leaves the version failed", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const failure = (effect: Effect.Effect<unknown, { readonly category: string }>) =>
        Effect.map(Effect.result(effect), (result) => Result.isFailure(result) ? result.failure.category : "succeeded")
      assert.strictEqual(yield* failure(indexer.add("npm:surely-not-installed-pkg")), "source_not_found")
      assert.strictEqual(yield* failure(indexer.add("  ")), "invalid_source")
      const empty0 = yield* Effect.flip(indexer.add(""))
      assert.match(empty0.message, /^the source is empty: give a folder/)
      assert.strictEqual(yield* failure(indexer.add("/nonexistent/folder/for/sure")), "source_not_found")
      // a missing path says so (an OpenAPI file mistyped used to read "is not a folder"); a file is not a folder
      assert.match((yield* Effect.flip(indexer.add("/nonexistent/api/openapi.yaml"))).message, /\/nonexistent\/api\/openapi\.yaml does not exist$/)
      assert.match((yield* Effect.flip(indexer.add(`${greeter}/README.md`))).message, /README\.md is not a folder$/)
      assert.strictEqual(yield* failure(indexer.add(greeter, { id: "not-an-id" })), "invalid_source")
      // ids and versions a user can read and type back: no control characters, no dot parts, bounded
      for (const id of ["/a\u0001/b", "/../..", "/acme/.", `/${"a".repeat(101)}/x`]) {
        assert.strictEqual(yield* failure(indexer.add(greeter, { id })), "invalid_source", id)
      }
      assert.strictEqual(yield* failure(indexer.add(greeter, { id: "/acme/v", version: "1.0\u001b[31m" })), "invalid_source")
      assert.strictEqual(yield* failure(indexer.add(greeter, { id: "/acme/v", version: ".." })), "invalid_source")
      // a version is asked for as /owner/repo/version, which the API, MCP and the RPC take up to 300
      // characters: owner, repo and version at 100 each (303) were stored, then never reachable by that id
      // (400 "must be at most 300 characters long") — outside hostile-input sweep
      const longest = { id: `/${"o".repeat(100)}/${"r".repeat(100)}`, version: "v".repeat(100) }
      const unreachable = yield* Effect.flip(indexer.add(greeter, longest))
      assert.strictEqual(unreachable.category, "invalid_source")
      assert.strictEqual(
        unreachable.message,
        `${longest.id}/${longest.version} is 303 characters long, more than a library id may be (300): give a shorter id or version`
      )
      assert.isUndefined((yield* indexer.list).find((library) => library.id === longest.id))
      const fits = { id: `/${"o".repeat(100)}/${"r".repeat(98)}`, version: "v".repeat(99) }
      assert.strictEqual(yield* failure(indexer.add(greeter, fits)), "succeeded")
      const empty = yield* docsFolder({ "src/index.js": "module.exports = 1" })
      assert.strictEqual(yield* failure(indexer.add(empty, { id: "/me/empty" })), "no_documents")
      const listed = (yield* indexer.list).find((library) => library.id === "/me/empty")!
      assert.deepStrictEqual(listed.versions.map((version) => [version.state, version.errorCategory]), [["failed", "no_documents"]])
      // files read, each section too short: the message says so instead of "no documentation found"
      const terse = yield* docsFolder({ "README.md": "# Terse\n\nShort.\n", "docs/a.md": "## A\n\nAlso short.\n" })
      const message = yield* Effect.map(Effect.result(indexer.add(terse, { id: "/me/terse" })), (result) => Result.isFailure(result) ? result.failure.message : "")
      assert.strictEqual(message, `No documentation found in ${terse}: 2 files read, every section too short to be a snippet (prose under 60 characters and code under 8 are left out)`)
      // an npm package is named as it was asked for: over the RPC the caller is not told the server's folders
      const collect = yield* Documents.make.pipe(Effect.provide(NodeServices.layer))
      const quiet = yield* Effect.flip(collect({
        kind: "npm",
        location: "npm:quiet",
        root: empty,
        libraryId: "/npm/quiet",
        title: "quiet",
        description: "",
        version: "1.0.0"
      }))
      assert.strictEqual(quiet.message, "No documentation found in npm:quiet (.md, .mdx, .rst, .txt outside node_modules and .git)")
    }))

  it.effect("an add of a new version takes over once ready: readers keep the old one while it runs, and after it fails", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const search = yield* Search
      const v1 = yield* docsFolder({ "README.md": "# Takeover\n\nThe first version's text about takeovers, long enough to be a snippet.\n" })
      yield* indexer.add(v1, { id: "/me/takeover", version: "1.0.0", title: "Takeover one" })
      const answer = () => Effect.map(search.context({ libraryId: "/me/takeover", query: "takeovers" }), (found) => found._tag === "Found" ? found.version : found._tag)
      assert.strictEqual(yield* answer(), "1.0.0")
      // a new version whose run fails (no documentation): the library stays as it was, 1.0.0 answering
      const empty = yield* docsFolder({ "src/index.js": "module.exports = 1" })
      const failed = yield* Effect.flip(indexer.add(empty, { id: "/me/takeover", version: "2.0.0", title: "Broken" }))
      assert.strictEqual(failed.category, "no_documents")
      const listed = () => Effect.map(indexer.list, (libraries) => libraries.find((library) => library.id === "/me/takeover")!)
      assert.deepInclude(yield* listed(), { defaultVersion: "1.0.0", title: "Takeover one", source: v1 })
      assert.strictEqual(yield* answer(), "1.0.0")
      // while a new version's run goes on, 1.0.0 answers; once it is ready, it is the default
      const v3 = yield* docsFolder({ "README.md": "# Takeover\n\nThe third version's text about takeovers, long enough to be a snippet.\n" })
      const seen: Array<string> = []
      const added = yield* indexer.add(v3, {
        id: "/me/takeover",
        version: "3.0.0",
        title: "Takeover three",
        onProgress: (progress) => progress._tag === "FileRead" ? Effect.orDie(Effect.map(answer(), (version) => void seen.push(version))) : Effect.void
      })
      assert.strictEqual(added.version, "3.0.0")
      assert.isAbove(seen.length, 0)
      assert.deepStrictEqual([...new Set(seen)], ["1.0.0"])
      assert.deepInclude(yield* listed(), { defaultVersion: "3.0.0", title: "Takeover three", source: v3 })
      assert.strictEqual(yield* answer(), "3.0.0")
      // an add interrupted mid-run leaves its version queued; resumed (as docs-api does), it is read
      // from its own folder, not the library's (3.0.0's): it stored 3.0.0's pages under its label
      const v4 = yield* docsFolder({ "README.md": "# Takeover\n\nThe fourth version's text about takeovers and zeppelins, long enough.\n" })
      const started = yield* Deferred.make<void>()
      const interrupted = yield* Effect.forkChild(indexer.add(v4, {
        id: "/me/takeover",
        version: "4.0.0",
        onProgress: (progress) => progress._tag === "FileRead" ? Effect.andThen(Deferred.succeed(started, undefined), Effect.never) : Effect.void
      }))
      yield* Deferred.await(started)
      yield* Fiber.interrupt(interrupted)
      const queued = (yield* listed()).versions.find((version) => version.version === "4.0.0")
      assert.strictEqual(queued?.state, "queued")
      yield* indexer.refresh("/me/takeover/4.0.0")
      const fourth = yield* search.context({ libraryId: "/me/takeover/4.0.0", query: "zeppelins" })
      assert.strictEqual(fourth._tag, "Found")
      assert.include(JSON.stringify(fourth), "fourth version")
      assert.strictEqual(yield* answer(), "3.0.0", "still the default: that add never finished")
    }))

  it.effect("refresh re-reads the source into a new generation and drops the old one; remove deletes", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const sql = yield* SqlClient.SqlClient
      const dir = yield* docsFolder({ "a.md": "# A\n\nThe first text of this library, long enough to be a snippet.\n" })
      yield* indexer.add(dir, { id: "/me/refreshed", version: "1.0" })
      const generations = () =>
        sql<{ id: string }>`SELECT g.id FROM docs.generations g JOIN docs.versions v ON v.id = g.version_id WHERE v.library_id = '/me/refreshed'`
      const [before] = yield* generations()
      yield* Effect.promise(() => import("node:fs/promises").then((fs) =>
        fs.writeFile(path.join(dir, "b.md"), "# B\n\nA second page added after the first index, also long enough.\n")
      ))
      const refreshed = yield* indexer.refresh("/me/refreshed")
      assert.strictEqual(refreshed.version, "1.0")
      assert.strictEqual(refreshed.snippets, 2)
      const after = yield* generations()
      assert.strictEqual(after.length, 1, "the old generation is gone")
      assert.notStrictEqual(after[0]!.id, before!.id)
      const unknown = yield* Effect.result(indexer.refresh("/me/nothing"))
      assert.isTrue(Result.isFailure(unknown))
      // not an id at all: says what one is (it said only "No library foo")
      const notAnId = yield* Effect.flip(indexer.refresh("foo"))
      assert.strictEqual(notAnId._tag, "UnknownLibrary")
      assert.strictEqual(notAnId.message, "foo is not a library id: give /owner/repo or /owner/repo/version (svc docs list shows them)")
      // a version the library does not have is not made by a refresh (it was: indexed under the new label)
      const missing = yield* Effect.flip(indexer.refresh("/me/refreshed/9.9.9"))
      assert.strictEqual(missing._tag, "UnknownLibrary")
      assert.match(missing.message, /^\/me\/refreshed has no version 9\.9\.9 to refresh/)
      const versions = (yield* indexer.list).find((library) => library.id === "/me/refreshed")!.versions
      assert.deepStrictEqual(versions.map((version) => version.version), ["1.0"])

      assert.isTrue(yield* indexer.remove("/me/refreshed"))
      assert.isFalse(yield* indexer.remove("/me/refreshed"))
      const left = yield* sql`SELECT 1 FROM docs.snippets s JOIN docs.generations g ON g.id = s.generation_id JOIN docs.versions v ON v.id = g.version_id WHERE v.library_id = '/me/refreshed'`
      assert.strictEqual(left.length, 0)
    }))

  it.effect("a run that leaves 10% (and 20) more libraries than the statistics know analyzes docs.libraries", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const sql = yield* SqlClient.SqlClient
      const count = sql<{ n: number }>`SELECT count(*)::int AS n FROM docs.libraries`.pipe(Effect.map((rows) => rows[0]!.n))
      // the planner's row estimate: -1 until the table is first analyzed
      const estimate = sql<{ n: number }>`SELECT reltuples::int AS n FROM pg_class WHERE oid = 'docs.libraries'::regclass`.pipe(
        Effect.map((rows) => rows[0]!.n)
      )
      assert.isAtMost(yield* count, 20)
      assert.strictEqual(yield* estimate, -1)
      for (let n = yield* count; n < 25; n++) {
        const dir = yield* docsFolder({ "guide.md": `# Library ${n}\n\nThe one page of library number ${n}, explaining everything this library does for its users.\n` })
        yield* indexer.add(dir, { id: `/bulk/library-${n}`, version: "1.0" })
      }
      // analyzed once, by the run that made it 21; 22 to 25 are within 10% (and 20) of that
      assert.strictEqual(yield* estimate, 21)
      assert.strictEqual(yield* count, 25)
    }))

  it.effect("trust: set when adding, kept by a re-index without it, ranks libraries whose names match equally", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const search = yield* Search
      const dir = yield* docsFolder({ "guide.md": "# Widget kit\n\nWidgets for every screen of an application, with a guide to each one of them and its options.\n" })
      yield* indexer.add(dir, { id: "/one/widget-kit", version: "1.0" })
      yield* indexer.add(dir, { id: "/two/widget-kit", version: "1.0" })
      const ranked = search.libraries("widget-kit").pipe(
        Effect.map((results) => results.map((result) => [result.id, result.trustScore]))
      )
      // equal names: the default trust, then the id
      assert.deepStrictEqual(yield* ranked, [["/one/widget-kit", 5], ["/two/widget-kit", 5]])
      yield* indexer.add(dir, { id: "/two/widget-kit", version: "1.1", trust: 9 })
      assert.deepStrictEqual(yield* ranked, [["/two/widget-kit", 9], ["/one/widget-kit", 5]])
      yield* indexer.refresh("/two/widget-kit")
      yield* indexer.add(dir, { id: "/two/widget-kit", version: "1.2" })
      assert.deepStrictEqual(yield* ranked, [["/two/widget-kit", 9], ["/one/widget-kit", 5]])
    }))

  it.effect("identical adds at once run once and share its outcome; another option, or a later add, runs apart", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const sql = yield* SqlClient.SqlClient
      const dir = yield* docsFolder({ "guide.md": "# Joined kit\n\nA library three callers add at the same moment, with a guide to its options.\n" })
      let runs = 0
      const adding = (options: { readonly trust?: number } = {}) =>
        indexer.add(dir, {
          id: "/acme/joined-kit",
          version: "1.0",
          ...options,
          onProgress: (event) => Effect.sync(() => event._tag === "Started" && runs++)
        })
      const generations = sql<{ readonly n: number }>`
        SELECT count(*)::int4 AS n FROM docs.generations g JOIN docs.versions v ON v.id = g.version_id
        WHERE v.library_id = '/acme/joined-kit'`.pipe(Effect.map(([row]) => row!.n), Effect.orDie)
      const before = yield* generations
      const outcomes = yield* Effect.all([adding(), adding(), adding()], { concurrency: "unbounded" })
      assert.strictEqual(runs, 1)
      assert.deepStrictEqual(outcomes[1], outcomes[0])
      assert.deepStrictEqual(outcomes[2], outcomes[0])
      assert.strictEqual(outcomes[0].snippets, 1)
      assert.strictEqual(yield* generations, before + 1)
      // once it has ended, the same add reads the source again
      yield* adding()
      assert.strictEqual(runs, 2)
      // another option is another add
      yield* Effect.all([adding(), adding({ trust: 7 })], { concurrency: "unbounded" })
      assert.strictEqual(runs, 4)
      // the caller of the run goes away (interrupted): one that joined it runs on its own
      const first = yield* Effect.forkChild(adding())
      const joined = yield* Effect.forkChild(adding())
      yield* Effect.yieldNow
      yield* Fiber.interrupt(first)
      // (without the rerun, the interruption would reach it and end this test)
      const outcome = yield* Fiber.join(joined)
      assert.strictEqual(outcome.snippets, 1)
    }))
})
