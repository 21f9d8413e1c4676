/**
 * The scheduled refresh killed mid-run, with real processes: a docs-api (`src/main.ts`) with
 * DOCS_REFRESH_INTERVAL finds a new commit of a git library and starts indexing it under its new
 * version; it is SIGKILLed while it stores the snippets. A docs-api started after it (the interval is
 * an hour: no second pass comes in the test's time) takes the version up within DOCS_RESUME_INTERVAL
 * and, since the killed run was an add, makes it the library's default once it is ready: the new
 * commit lands, nothing is left `indexing`.
 */
import { assert, layer } from "@effect/vitest"
import { Database } from "@svc/platform"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { Indexer } from "../src/Indexer.ts"
import { docsProcess, gitRepository, stack, waitFor } from "./support.ts"

/** Enough guides that storing the new commit's snippets takes seconds (the kill lands mid-run). */
const FILES = 300
const SECTIONS = 40

/** The guides, each of SECTIONS settings in the `marker` edition (relative path → content). */
const guides = (marker: string) =>
  Object.fromEntries(Array.from({ length: FILES }, (_, file) => {
    const lines = [`# Guide ${file}\n`]
    for (let section = 0; section < SECTIONS; section++) {
      lines.push(
        `## Setting ${file}-${section}\n`,
        `Setting ${section} of guide ${file}, ${marker} edition:\n`,
        "```ts",
        `const ${marker}_${section} = configure(${file}, ${section})`,
        "```\n",
        `What setting ${section} of guide ${file} does in the ${marker} edition.\n`
      )
    }
    return [`guide-${String(file).padStart(4, "0")}.md`, lines.join("\n")]
  }))

interface VersionRow {
  readonly version: string
  readonly state: string
  readonly pending: number
}

const versionsOf = (libraryId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<VersionRow>`
      SELECT v.version, v.state,
        (SELECT count(*)::int FROM docs.snippets s JOIN docs.generations g ON g.id = s.generation_id
          WHERE g.version_id = v.id AND g.id IS DISTINCT FROM v.generation_id) AS pending
      FROM docs.versions v WHERE v.library_id = ${libraryId} ORDER BY v.id`.pipe(Effect.orDie)
  })

layer(stack, { excludeTestServices: true, timeout: 180_000 })("a scheduled refresh killed mid-run", (it) => {
  it.effect("the next docs-api finishes the new commit's version and makes it the default", () =>
    Effect.gen(function*() {
      const repo = yield* gitRepository("acme", "killed", guides("alphamark"))
      const indexer = yield* Indexer
      const first = yield* indexer.add(repo.bare)
      assert.strictEqual(first.libraryId, "/acme/killed")
      const newHead = yield* repo.commit(guides("omegamark"), "second")

      const url = Redacted.value((yield* Database).url)
      const env = { DOCS_REFRESH_INTERVAL: "1 hour", DOCS_RESUME_INTERVAL: "1 second", LOG_LEVEL: "debug" }
      const killed = yield* docsProcess(url, env)
      yield* waitFor(
        versionsOf("/acme/killed"),
        (rows) => rows.some((row) => row.version === newHead && row.state === "indexing" && row.pending > 0),
        (rows) => `the refresh storing ${newHead} (last seen ${JSON.stringify(rows)})\n${killed.output().slice(-2000)}`,
        "60 seconds"
      )
      killed.child.kill("SIGKILL")
      assert.strictEqual(yield* Effect.promise(() => killed.exited), "SIGKILL")
      assert.strictEqual((yield* indexer.list).find((l) => l.id === "/acme/killed")!.defaultVersion, first.version, "the kill came before the new version went live")

      const next = yield* docsProcess(url, env)
      const library = yield* waitFor(
        Effect.map(indexer.list, (libraries) => libraries.find((l) => l.id === "/acme/killed")!),
        (library) => library.defaultVersion === newHead && library.versions.every((v) => v.state === "ready"),
        (library) => `${newHead} ready and the default (last seen ${JSON.stringify(library)})\n${next.output().slice(-3000)}`,
        "90 seconds"
      )
      assert.deepStrictEqual(library.versions.map((v) => v.version).sort(), [first.version, newHead].sort())
      const response = yield* Effect.promise(() =>
        fetch(`${next.baseUrl}/api/v2/context?libraryId=/acme/killed&type=json&query=setting`).then(async (r) => ({ status: r.status, text: await r.text() }))
      )
      assert.strictEqual(response.status, 200, response.text)
      assert.include(response.text, "omegamark")
      assert.notInclude(response.text, "alphamark")
    }), 170_000)
})
