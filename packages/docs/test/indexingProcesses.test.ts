/**
 * Indexing across real process deaths (README, "Nothing is lost when a process stops"): docs-api
 * processes (`src/main.ts`) on the test database, indexing a folder large enough that a run takes
 * seconds, stopped in the middle of storing its snippets:
 * - SIGKILL mid-add: the version stays `indexing`; the next start finishes it, exactly as an
 *   uninterrupted run of the same folder would have (no snippet twice);
 * - SIGKILL mid re-index of a ready library: readers get the old generation while the process is
 *   down and while the next start re-indexes, then the new one; never a mix, never nothing;
 * - SIGTERM mid-add: the run goes back to `queued`, its half-written generation is removed, the
 *   process exits 0, and the next start indexes the version;
 * - SIGKILL mid re-index while another docs-api runs: that one leaves the live run alone (the runner
 *   is frozen with SIGSTOP mid-run for the picker's passes, its connections open, so that no speed of
 *   the machine ends the run first), then takes the version up within its DOCS_RESUME_INTERVAL once
 *   the runner is killed, without a restart (run locks, src/RunLocks.ts);
 * - SIGKILL of a local `svc docs add` (the CLI indexing in its own process): the running docs-api
 *   finishes the version the same way.
 */
import { assert, layer } from "@effect/vitest"
import { Database } from "@svc/platform"
import { tempDir } from "@svc/platform/testing"
import { Effect, Exit, Fiber, Redacted, Ref } from "effect"
import { SqlClient } from "effect/sql"
import { spawn } from "node:child_process"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Indexer } from "../src/Indexer.ts"
import { operations } from "../src/RpcClient.ts"
import { Search } from "../src/Search.ts"
import { type DocsProcess, docsProcess, stack, waitFor } from "./support.ts"

const TOKEN = "indexing-processes-admin-token"
const FILES = 400
/**
 * Sections per file (and a troubleshooting one), each a code snippet (with the paragraph above it as its
 * description) and a prose snippet: 40,800 snippets, a run of a few seconds on an idle machine.
 */
const SECTIONS = 50
/** The words of a folder's first content (`old`) and of its changed content (`new`). */
const MARKERS = { old: "alphamark", new: "omegamark" } as const
/** 10-15 s each on an idle machine; 30 s seen on two cores with four busy processes besides. */
const TEST_TIMEOUT = 90_000
/** What the test asks: two snippets of each file answer it, so that an answer is quick to rank. */
const QUESTION = "troubleshooting"

/**
 * Writes {@link FILES} Markdown guides of `sections` sections into `dir` (replacing what is there); every
 * snippet they give carries `marker`, so an answer tells which content it came from.
 */
const writeGuides = (dir: string, marker: string, sections = SECTIONS) =>
  Effect.promise(() =>
    Promise.all(Array.from({ length: FILES }, (_, file) => {
      const lines = [`# Guide ${file}\n`]
      for (let section = 0; section < sections; section++) {
        lines.push(
          `## Widget setting ${file}-${section}\n`,
          `Setting ${section} of guide ${file} in the ${marker} edition, configured like this:\n`,
          "```ts",
          `const ${marker}_${section} = configureWidget(${file}, ${section})`,
          "```\n",
          `The ${marker} edition explains what widget setting ${section} of guide ${file} configures and when to change it.\n`
        )
      }
      // what the test asks about (QUESTION)
      lines.push(
        "## Troubleshooting\n",
        `When a widget of guide ${file} in the ${marker} edition does not start, read its log:\n`,
        "```sh",
        `widgets log --guide ${file} --edition ${marker}`,
        "```\n",
        `The ${marker} edition keeps the troubleshooting log of guide ${file} for a week.\n`
      )
      return fs.writeFile(path.join(dir, `guide-${String(file).padStart(4, "0")}.md`), lines.join("\n"))
    }))
  )

/** A folder of guides under a new temporary folder (the RPC accepts folders under DOCS_SOURCE_ROOTS only). */
const guidesFolder = (marker: string) =>
  Effect.gen(function*() {
    const root = yield* tempDir("svc-docs-indexing-")
    const dir = path.join(root, "guides")
    yield* Effect.promise(() => fs.mkdir(dir))
    yield* writeGuides(dir, marker)
    return { root, dir }
  })

interface VersionRow {
  readonly state: string
  readonly generation_id: string | null
  readonly snippet_count: number
  /** the snippets of the generation the version points at */
  readonly live: number
  /** the snippets of the version's other generations: runs that have not (or never) gone live */
  readonly pending: number
  readonly pending_generations: number
}

/** The version's state and snippets, in one statement (one snapshot). */
const versionOf = (libraryId: string, version: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<VersionRow>`
      SELECT v.state, v.generation_id::text AS generation_id, v.snippet_count,
        (SELECT count(*)::int FROM docs.snippets s WHERE s.generation_id = v.generation_id) AS live,
        (SELECT count(*)::int FROM docs.snippets s JOIN docs.generations g ON g.id = s.generation_id
          WHERE g.version_id = v.id AND g.id IS DISTINCT FROM v.generation_id) AS pending,
        (SELECT count(*)::int FROM docs.generations g
          WHERE g.version_id = v.id AND g.id IS DISTINCT FROM v.generation_id) AS pending_generations
      FROM docs.versions v WHERE v.library_id = ${libraryId} AND v.version = ${version}`.pipe(Effect.orDie)
    return rows[0]
  })

/** Live snippets of the version that share a source path and ordinal, or a source path, heading and kind. */
const duplicatesOf = (libraryId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ readonly source_path: string; readonly key: string; readonly n: number }>`
      WITH live AS (
        SELECT s.* FROM docs.versions v JOIN docs.snippets s ON s.generation_id = v.generation_id
        WHERE v.library_id = ${libraryId}
      )
      SELECT source_path, ordinal::text AS key, count(*)::int AS n FROM live GROUP BY source_path, ordinal HAVING count(*) > 1
      UNION ALL
      SELECT source_path, heading || ' ' || kind AS key, count(*)::int AS n FROM live GROUP BY source_path, heading, kind HAVING count(*) > 1
      LIMIT 10`.pipe(Effect.orDie)
  })

/**
 * The live snippets of `a` that `b` has not (and the other way round), compared by what they hold
 * and where they stand: the same index gives none.
 */
const differences = (a: string, b: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const live = (libraryId: string) => sql`
      SELECT s.ordinal, s.kind, s.title, s.heading, s.description, s.body, s.source_path, s.tokens
      FROM docs.versions v JOIN docs.snippets s ON s.generation_id = v.generation_id
      WHERE v.library_id = ${libraryId}`
    const rows = yield* sql<{ readonly n: number }>`
      SELECT (SELECT count(*)::int FROM ((${live(a)}) EXCEPT ALL (${live(b)})) x)
           + (SELECT count(*)::int FROM ((${live(b)}) EXCEPT ALL (${live(a)})) y) AS n`.pipe(Effect.orDie)
    return rows[0]!.n
  })

/** What a context answer was made of: `old` or `new` content only, or what went wrong. */
const verdictOf = (snippets: ReadonlyArray<{ readonly title: string; readonly description: string; readonly content: string }>) => {
  if (snippets.length === 0) return "empty"
  const texts = snippets.map((snippet) => `${snippet.title}\n${snippet.description}\n${snippet.content}`)
  if (texts.every((text) => text.includes(MARKERS.old) && !text.includes(MARKERS.new))) return "old"
  if (texts.every((text) => text.includes(MARKERS.new) && !text.includes(MARKERS.old))) return "new"
  return `mixed: ${texts.filter((text) => text.includes(MARKERS.old)).length} old, ${texts.filter((text) => text.includes(MARKERS.new)).length} new of ${texts.length}`
}


/** A context query to a running process: its status and verdict (a 202 says its state). */
const askProcess = (service: DocsProcess, libraryId: string) =>
  Effect.promise(async () => {
    const response = await fetch(`${service.baseUrl}/api/v2/context?libraryId=${encodeURIComponent(libraryId)}&type=json&query=${encodeURIComponent(QUESTION)}`)
    const body = await response.json() as any
    return response.status === 200 ? verdictOf(body.snippets) : `${response.status} ${body.state ?? body.code}`
  })

/** The same question answered in this process (Search on the same database), while no docs-api runs. */
const askHere = (libraryId: string) =>
  Effect.gen(function*() {
    const answer = yield* (yield* Search).context({ libraryId, query: QUESTION }).pipe(Effect.orDie)
    return answer._tag === "Found" ? verdictOf(answer.snippets) : `${answer._tag} ${answer.state}`
  })

/** The process's RPC (what `svc docs` does with DOCS_URL). */
const rpcOf = (service: DocsProcess) => operations({ url: service.baseUrl, token: Redacted.make(TOKEN) })

/** An RPC run followed in the background until it ends (or the process dies); its exit. */
const inBackground = <A, E>(run: Effect.Effect<A, E>) => run.pipe(Effect.exit, Effect.forkScoped)

/** `svc docs add <source>` over the process's RPC, in the background. */
const addOver = (service: DocsProcess, payload: { readonly source: string; readonly id: string; readonly version: string }) =>
  inBackground(rpcOf(service).add(payload, () => Effect.void))

const processEnv = (root: string) => ({ DOCS_ADMIN_TOKEN: TOKEN, DOCS_SOURCE_ROOTS: root })

/** Waits for the process's end; its exit code or signal. */
const exitOf = (service: DocsProcess) => Effect.promise(() => service.exited)

/** The version exists and its run has ended (ready or failed). */
const finished = (row: VersionRow | undefined): row is VersionRow => row !== undefined && row.state !== "indexing" && row.state !== "queued"

/** Waits until a run of the version is storing its snippets: `indexing`, with some of a new generation written. */
const midRun = (libraryId: string, version: string) =>
  waitFor(
    versionOf(libraryId, version),
    (row): row is VersionRow => row?.state === "indexing" && row.pending > 0,
    (row) => `a run of ${libraryId}/${version} storing its snippets (last seen: ${JSON.stringify(row)})`
  )

layer(stack, { excludeTestServices: true, timeout: 120_000 })("a docs-api process killed mid-add", (it) => {
  it.effect("the next start finishes the version: the same snippets as an uninterrupted run, none twice", () =>
    Effect.gen(function*() {
      const url = Redacted.value((yield* Database).url)
      const { root, dir } = yield* guidesFolder(MARKERS.old)

      const first = yield* docsProcess(url, processEnv(root))
      yield* addOver(first, { source: dir, id: "/acme/guides", version: "1.0" })
      const during = yield* midRun("/acme/guides", "1.0")
      first.child.kill("SIGKILL")
      assert.strictEqual(yield* exitOf(first), "SIGKILL")

      // What the kill left: still indexing, nothing live, part of a generation written; no run holds
      // it (its lock went with the process), so readers are told it is queued.
      const left = (yield* versionOf("/acme/guides", "1.0"))!
      assert.strictEqual(left.state, "indexing", first.output())
      assert.isNull(left.generation_id, "the killed run never went live")
      assert.isAtLeast(left.pending, during.pending)
      assert.strictEqual(yield* askHere("/acme/guides"), "Indexing queued")

      // The next start picks the version up in the background and finishes it.
      const second = yield* docsProcess(url, processEnv(root))
      const done = yield* waitFor(
        versionOf("/acme/guides", "1.0"),
        finished,
        (row) => `the next start to finish /acme/guides/1.0 (last seen: ${JSON.stringify(row)})\n${second.output()}`,
        "40 seconds"
      )
      assert.strictEqual(done.state, "ready", second.output())
      assert.strictEqual(done.pending_generations, 0, "the killed run's partial generation was removed by the run that finished")

      // An uninterrupted run of the same folder, for comparison.
      const reference = yield* (yield* Indexer).add(dir, { id: "/acme/reference", version: "1.0" })
      assert.isAbove(reference.snippets, left.pending, "the kill came before the run had stored everything")
      assert.strictEqual(done.snippet_count, reference.snippets)
      assert.strictEqual(done.live, reference.snippets)
      assert.deepStrictEqual(yield* duplicatesOf("/acme/guides"), [])
      assert.strictEqual(yield* differences("/acme/guides", "/acme/reference"), 0)

      assert.strictEqual(yield* askProcess(second, "/acme/guides"), "old")
    }), TEST_TIMEOUT)
})

layer(stack, { excludeTestServices: true, timeout: 120_000 })("a docs-api process killed mid re-index", (it) => {
  it.effect("readers get the old generation until the next start has the new one live; never a mix, never nothing", () =>
    Effect.gen(function*() {
      const url = Redacted.value((yield* Database).url)
      const { root, dir } = yield* guidesFolder(MARKERS.old)
      const indexed = yield* (yield* Indexer).add(dir, { id: "/acme/guides", version: "1.0" })
      const old = (yield* versionOf("/acme/guides", "1.0"))!
      assert.strictEqual(old.state, "ready")

      const first = yield* docsProcess(url, processEnv(root))
      assert.strictEqual(yield* askProcess(first, "/acme/guides"), "old")

      // The folder changes (fewer sections, new words); the library is refreshed over the RPC.
      yield* writeGuides(dir, MARKERS.new, SECTIONS - 5)
      yield* inBackground(rpcOf(first).refresh("/acme/guides", () => Effect.void))
      yield* midRun("/acme/guides", "1.0")
      assert.strictEqual(yield* askProcess(first, "/acme/guides"), "old", "while the re-index runs")
      first.child.kill("SIGKILL")
      assert.strictEqual(yield* exitOf(first), "SIGKILL")

      // Down: the version says indexing, the old generation is still the live one, whole.
      const left = (yield* versionOf("/acme/guides", "1.0"))!
      assert.strictEqual(left.state, "indexing", first.output())
      assert.strictEqual(left.generation_id, old.generation_id)
      assert.strictEqual(left.live, indexed.snippets)
      assert.isAbove(left.pending, 0)
      assert.strictEqual(yield* askHere("/acme/guides"), "old", "while no process runs")

      // The next start re-indexes it; readers, asking all along, see the old content, then the new.
      const second = yield* docsProcess(url, processEnv(root))
      const seen = yield* Ref.make<Array<{ readonly answer: string; readonly row: VersionRow }>>([])
      const observe = Effect.gen(function*() {
        const [answer, row] = yield* Effect.all([askProcess(second, "/acme/guides"), versionOf("/acme/guides", "1.0")], {
          concurrency: 2
        })
        const seeing = { answer, row: row! }
        yield* Ref.update(seen, (list) => [...list, seeing])
        return seeing
      })
      const last = yield* waitFor(
        observe,
        ({ answer, row }) => answer === "new" && row.state === "ready",
        (last) => `the new content after the restart (last seen: ${JSON.stringify(last)})\n${second.output()}`,
        "40 seconds"
      )
      const observed = yield* Ref.get(seen)
      const answers = observed.map(({ answer }) => answer)
      assert.deepStrictEqual(answers.filter((answer) => answer !== "old" && answer !== "new"), [], "every answer is all old or all new")
      assert.isAbove(answers.indexOf("new"), answers.lastIndexOf("old"), `old, then new: ${answers.join(", ")}`)
      // each snapshot (one statement): the live generation is whole (its count is the version's), the old one or the new one
      for (const { row } of observed) {
        assert.strictEqual(row.live, row.snippet_count, `a live generation is whole: ${JSON.stringify(row)}`)
        assert.include([indexed.snippets, last.row.snippet_count], row.live, JSON.stringify(row))
      }

      // The new content won: a whole generation of it, no snippet twice, nothing of the old left live.
      assert.notStrictEqual(last.row.snippet_count, indexed.snippets)
      assert.strictEqual(last.row.live, last.row.snippet_count)
      assert.notStrictEqual(last.row.generation_id, old.generation_id)
      assert.strictEqual(last.row.pending_generations, 0, "the killed run's partial generation was removed by the run that finished")
      assert.deepStrictEqual(yield* duplicatesOf("/acme/guides"), [])
      assert.strictEqual(yield* askHere("/acme/guides"), "new")
      const fresh = yield* (yield* Indexer).add(dir, { id: "/acme/reference", version: "1.0" })
      assert.strictEqual(last.row.snippet_count, fresh.snippets)
      assert.strictEqual(yield* differences("/acme/guides", "/acme/reference"), 0)
    }), TEST_TIMEOUT)
})

layer(stack, { excludeTestServices: true, timeout: 120_000 })("a docs-api process stopped (SIGTERM) mid-add", (it) => {
  it.effect("the run goes back to queued without a half generation, exit code 0; the next start indexes it", () =>
    Effect.gen(function*() {
      const url = Redacted.value((yield* Database).url)
      const { root, dir } = yield* guidesFolder(MARKERS.old)

      // In-flight requests get 100 ms after the signal: the run, seconds from its end, is interrupted.
      const first = yield* docsProcess(url, { ...processEnv(root), SHUTDOWN_TIMEOUT: "100 millis" })
      const adding = yield* addOver(first, { source: dir, id: "/acme/guides", version: "1.0" })
      yield* midRun("/acme/guides", "1.0")
      first.child.kill("SIGTERM")
      assert.strictEqual(yield* exitOf(first), 0, first.output())
      assert.isTrue(Exit.isFailure(yield* Fiber.join(adding)), "the add did not complete")

      const left = (yield* versionOf("/acme/guides", "1.0"))!
      assert.strictEqual(left.state, "queued", first.output())
      assert.isNull(left.generation_id)
      assert.strictEqual(left.pending_generations, 0, "the interrupted run removed what it had written")
      assert.strictEqual(yield* askHere("/acme/guides"), "Indexing queued")

      const second = yield* docsProcess(url, processEnv(root))
      const done = yield* waitFor(
        versionOf("/acme/guides", "1.0"),
        finished,
        (row) => `the next start to index /acme/guides/1.0 (last seen: ${JSON.stringify(row)})\n${second.output()}`,
        "40 seconds"
      )
      assert.strictEqual(done.state, "ready", second.output())
      assert.strictEqual(done.live, done.snippet_count)
      assert.strictEqual(done.snippet_count, 2 * FILES * (SECTIONS + 1), "a prose and a code snippet per section")
      assert.deepStrictEqual(yield* duplicatesOf("/acme/guides"), [])
      assert.strictEqual(yield* askProcess(second, "/acme/guides"), "old")
    }), TEST_TIMEOUT)
})

/** How often the docs-api that takes killed runs up looks for them (DOCS_RESUME_INTERVAL, 30 s by default). */
const RESUME_INTERVAL = "2 seconds"

/** A run, a kill, the picker's run and a reference run: up to four runs of a few seconds each (more on two busy cores). */
const PICKED_UP_TIMEOUT = 170_000

/** How many passes the process's picker has made (LOG_LEVEL=debug logs each). */
const passesOf = (service: DocsProcess) => service.output().split("Versions waiting for a run:").length - 1

/** Waits until the process's picker has made `more` passes beyond those made so far. */
const morePasses = (service: DocsProcess, more: number) =>
  Effect.gen(function*() {
    const from = passesOf(service)
    yield* waitFor(
      Effect.sync(() => passesOf(service)),
      (passes) => passes >= from + more,
      (passes) => `${more} more passes of the picker (${passes} of ${from + more})\n${service.output().slice(-2000)}`,
      "60 seconds"
    )
  })

layer(stack, { excludeTestServices: true, timeout: 180_000 })("a docs-api killed mid re-index while another runs", (it) => {
  it.effect("the other leaves the live run alone, then takes the version up within its interval, no restart; readers get old, then new", () =>
    Effect.gen(function*() {
      const url = Redacted.value((yield* Database).url)
      const { root, dir } = yield* guidesFolder(MARKERS.old)
      const indexed = yield* (yield* Indexer).add(dir, { id: "/acme/guides", version: "1.0" })
      const old = (yield* versionOf("/acme/guides", "1.0"))!

      const picker = yield* docsProcess(url, { ...processEnv(root), DOCS_RESUME_INTERVAL: RESUME_INTERVAL, LOG_LEVEL: "debug" })
      const runner = yield* docsProcess(url, processEnv(root))
      yield* writeGuides(dir, MARKERS.new, SECTIONS - 5)
      yield* inBackground(rpcOf(runner).refresh("/acme/guides", () => Effect.void))
      yield* midRun("/acme/guides", "1.0")

      // Alive (frozen mid-run: its connections, and so its run lock, stay), the run holds its version:
      // the picker's passes go by and leave it alone.
      runner.child.kill("SIGSTOP")
      yield* morePasses(picker, 2)
      const alive = (yield* versionOf("/acme/guides", "1.0"))!
      assert.deepStrictEqual([alive.state, alive.pending_generations], ["indexing", 1], runner.output())
      assert.notInclude(picker.output(), "Indexed /acme/guides", "the picker did not take a live run")
      const listed = Effect.promise(async () => {
        const response = await fetch(`${picker.baseUrl}/api/v2/libs/search?libraryName=guides`)
        return ((await response.json()) as any).results.find((result: any) => result.id === "/acme/guides")?.state
      })
      assert.strictEqual(yield* listed, "indexing")

      runner.child.kill("SIGKILL")
      assert.strictEqual(yield* exitOf(runner), "SIGKILL")

      // No restart: the picker takes it up; readers asking all along see the old content, then the new.
      const seen = yield* Ref.make<Array<{ readonly answer: string; readonly row: VersionRow }>>([])
      const observe = Effect.gen(function*() {
        const [answer, row] = yield* Effect.all([askProcess(picker, "/acme/guides"), versionOf("/acme/guides", "1.0")], { concurrency: 2 })
        const seeing = { answer, row: row! }
        yield* Ref.update(seen, (list) => [...list, seeing])
        return seeing
      })
      const last = yield* waitFor(
        observe,
        ({ answer, row }) => answer === "new" && row.state === "ready",
        (last) => `the picker to finish the killed run (last seen: ${JSON.stringify(last)})\n${picker.output().slice(-3000)}`,
        "90 seconds"
      )
      const answers = (yield* Ref.get(seen)).map(({ answer }) => answer)
      assert.deepStrictEqual(answers.filter((answer) => answer !== "old" && answer !== "new"), [], "every answer is all old or all new")
      assert.isAbove(answers.indexOf("new"), answers.lastIndexOf("old"), `old, then new: ${answers.join(", ")}`)
      for (const { row } of yield* Ref.get(seen)) {
        assert.strictEqual(row.live, row.snippet_count, `a live generation is whole: ${JSON.stringify(row)}`)
        assert.include([indexed.snippets, last.row.snippet_count], row.live, JSON.stringify(row))
      }
      assert.include(picker.output(), "Indexed /acme/guides 1.0")
      assert.strictEqual(yield* listed, "ready")

      // The new content, once: a whole generation, no snippet twice, as an uninterrupted run gives it.
      assert.notStrictEqual(last.row.generation_id, old.generation_id)
      assert.strictEqual(last.row.pending_generations, 0, "the killed run's partial generation was removed by the run that finished")
      assert.deepStrictEqual(yield* duplicatesOf("/acme/guides"), [])
      const fresh = yield* (yield* Indexer).add(dir, { id: "/acme/reference", version: "1.0" })
      assert.strictEqual(last.row.snippet_count, fresh.snippets)
      assert.strictEqual(yield* differences("/acme/guides", "/acme/reference"), 0)
    }), PICKED_UP_TIMEOUT)
})

const CLI = fileURLToPath(new URL("../../cli/src/bin.ts", import.meta.url))

/** `svc docs add <args>` as its own process on `databaseUrl` (indexing here, no DOCS_URL); SIGKILLed when the scope closes if it still runs. */
const cliAdd = (databaseUrl: string, args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(DATABASE_|DOCS_|EMBEDDED_POSTGRES_)/.test(name)))
    const child = yield* Effect.acquireRelease(
      Effect.sync(() =>
        spawn(process.execPath, [CLI, "docs", "add", ...args], { env: { ...env, DATABASE_URL: databaseUrl }, stdio: ["ignore", "pipe", "pipe"] })
      ),
      (child) => Effect.sync(() => child.exitCode === null && child.signalCode === null && child.kill("SIGKILL"))
    )
    let output = ""
    child.stdout!.on("data", (chunk) => (output += chunk))
    child.stderr!.on("data", (chunk) => (output += chunk))
    const exited = new Promise<number | string>((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal ?? "unknown")))
    return { child, output: () => output, exited }
  })

layer(stack, { excludeTestServices: true, timeout: 180_000 })("a local svc docs add killed (SIGKILL) while a docs-api runs", (it) => {
  it.effect("the docs-api finishes the version within its interval, no restart: the same snippets as an uninterrupted run, none twice", () =>
    Effect.gen(function*() {
      const url = Redacted.value((yield* Database).url)
      const { root, dir } = yield* guidesFolder(MARKERS.old)
      const picker = yield* docsProcess(url, { ...processEnv(root), DOCS_RESUME_INTERVAL: RESUME_INTERVAL, LOG_LEVEL: "debug" })

      const add = yield* cliAdd(url, [dir, "--id", "/acme/guides", "--version", "1.0"])
      yield* midRun("/acme/guides", "1.0").pipe(
        Effect.timeoutOrElse({
          duration: "60 seconds",
          orElse: () => Effect.die(new Error(`svc docs add never stored snippets:\n${add.output()}`))
        })
      )
      add.child.kill("SIGSTOP")
      yield* morePasses(picker, 2)
      assert.notInclude(picker.output(), "Indexed /acme/guides", "the picker did not take the live add")
      assert.strictEqual((yield* versionOf("/acme/guides", "1.0"))?.state, "indexing")
      add.child.kill("SIGKILL")
      assert.strictEqual(yield* Effect.promise(() => add.exited), "SIGKILL")

      const done = yield* waitFor(
        versionOf("/acme/guides", "1.0"),
        finished,
        (row) => `the docs-api to finish /acme/guides/1.0 (last seen: ${JSON.stringify(row)})\n${picker.output().slice(-3000)}`,
        "90 seconds"
      )
      assert.strictEqual(done.state, "ready", picker.output())
      assert.include(picker.output(), "Indexed /acme/guides 1.0")
      const reference = yield* (yield* Indexer).add(dir, { id: "/acme/reference", version: "1.0" })
      assert.strictEqual(done.snippet_count, reference.snippets)
      assert.strictEqual(done.live, reference.snippets)
      assert.deepStrictEqual(yield* duplicatesOf("/acme/guides"), [])
      assert.strictEqual(yield* differences("/acme/guides", "/acme/reference"), 0)
      assert.strictEqual(yield* askProcess(picker, "/acme/guides"), "old")
    }), PICKED_UP_TIMEOUT)
})
