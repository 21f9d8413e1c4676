/**
 * Refresh states through the REST API: the default documentation is queued before anything is read
 * (search says `queued`, context answers 202 `queued`), each version then goes queued → indexing →
 * ready | failed; and versions left queued or indexing by a stopped or killed process (listed queued:
 * no run holds them) are indexed on the next start.
 */
import { assert, layer } from "@effect/vitest"
import { ConfigProvider, Deferred, Effect, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import * as DefaultLibraries from "../src/DefaultLibraries.ts"
import { Indexer } from "../src/Indexer.ts"
import { docsFolder, get, socketClient, stack } from "./support.ts"

const HE = "/mathiasbynens/he"
const BYTES = "/visionmedia/bytes.js"

/** The search result for `id` (searched by its repository name), or undefined. */
const searched = (id: string) =>
  Effect.map(
    get(`/api/v2/libs/search?libraryName=${encodeURIComponent(id.split("/")[2]!)}`),
    ({ body }) => (body.results as Array<any>).find((result) => result.id === id)
  )

const stateOf = (id: string) => Effect.map(searched(id), (result) => result?.state)

const context = (libraryId: string, query = "") =>
  get(`/api/v2/context?libraryId=${encodeURIComponent(libraryId)}&type=json${query === "" ? "" : `&query=${encodeURIComponent(query)}`}`)

/**
 * The real indexer, held at two points of the first resume it is asked for (what the start runs for
 * each waiting version): before it starts (`reached`, released by `proceed`), and once its run has
 * registered the version as indexing (`started`, released by `finish`). Later resumes pass straight
 * through.
 */
const gatedIndexer = Effect.gen(function*() {
  const real = yield* Indexer
  const reached = yield* Deferred.make<string>()
  const proceed = yield* Deferred.make<void>()
  const started = yield* Deferred.make<string>()
  const finish = yield* Deferred.make<void>()
  const indexer = Indexer.of({
    ...real,
    resume: (libraryId, options) =>
      Deferred.succeed(reached, libraryId).pipe(
        Effect.andThen(Deferred.await(proceed)),
        Effect.andThen(real.resume(libraryId, {
          ...options,
          onProgress: (progress) =>
            progress._tag === "Started"
              ? Deferred.succeed(started, libraryId).pipe(Effect.andThen(Deferred.await(finish)))
              : Effect.void
        }))
      )
  })
  return { indexer, reached, proceed, started, finish }
})

/** Waits for the gate's `reached`; a seed that ends without reaching it fails the test at once. */
const reachedOrEnded = (gate: { readonly reached: Deferred.Deferred<string> }, seeding: Fiber.Fiber<unknown, unknown>) =>
  Effect.raceFirst(
    Deferred.await(gate.reached),
    Effect.flatMap(Fiber.await(seeding), (exit) => Effect.die(`the seed ended without asking for a refresh: ${String(exit)}`))
  )

const server = socketClient.pipe(Layer.provideMerge(stack))

layer(server, { timeout: 120_000 })("the default documentation while it is indexed", (it) => {
  it.effect("every installed package is queued at once; each goes queued → indexing → ready, visible in search and context", () =>
    Effect.gen(function*() {
      const gate = yield* gatedIndexer
      const seeding = yield* DefaultLibraries.seed(["he", "no-such-package-svc-test", "bytes"]).pipe(
        Effect.provideService(Indexer, gate.indexer),
        Effect.forkChild
      )
      assert.strictEqual(yield* reachedOrEnded(gate, seeding), `${HE}/${(yield* searched(HE)).versions[0]}`)

      // Nothing read yet: both installed packages are listed, queued; the missing one is not.
      const he = yield* searched(HE)
      assert.strictEqual(he.state, "queued")
      assert.strictEqual(he.totalSnippets, 0)
      assert.isNull(he.lastUpdateDate)
      assert.strictEqual(yield* stateOf(BYTES), "queued")
      assert.isUndefined(yield* searched("/npm/no-such-package-svc-test"))
      const version = he.versions[0] as string
      const queued = yield* context(HE, "decode entities")
      assert.strictEqual(queued.status, 202)
      assert.deepStrictEqual(queued.body, {
        code: "library_indexing",
        message: `${HE}/${version} is queued for indexing; try again in a moment`,
        libraryId: `${HE}/${version}`,
        version,
        state: "queued"
      })
      assert.strictEqual((yield* context(`${HE}/${version}`)).body.state, "queued")

      // The first one's run has started: it is indexing, the next one still queued.
      yield* Deferred.succeed(gate.proceed, undefined)
      assert.strictEqual(yield* Deferred.await(gate.started), `${HE}/${version}`)
      assert.strictEqual(yield* stateOf(HE), "indexing")
      const indexing = yield* context(HE)
      assert.strictEqual(indexing.status, 202)
      assert.strictEqual(indexing.body.state, "indexing")
      assert.strictEqual(indexing.body.message, `${HE}/${version} is being indexed; try again in a moment`)
      assert.strictEqual(yield* stateOf(BYTES), "queued")
      assert.strictEqual((yield* context(BYTES)).body.state, "queued")

      yield* Deferred.succeed(gate.finish, undefined)
      assert.deepStrictEqual(yield* Fiber.join(seeding), [HE, BYTES])
      for (const id of [HE, BYTES]) {
        const ready = yield* searched(id)
        assert.strictEqual(ready.state, "ready")
        assert.isAbove(ready.totalSnippets, 0)
        const answer = yield* context(id)
        assert.strictEqual(answer.status, 200)
        assert.isAbove(answer.body.snippets.length, 0)
      }
      assert.deepStrictEqual(yield* (yield* Indexer).unfinished, [])
    }))
})

layer(server, { timeout: 120_000 })("a seed stopped half-way", (it) => {
  it.effect("an interrupted run goes back to queued; the next start indexes what is left and seeds nothing new", () =>
    Effect.gen(function*() {
      const gate = yield* gatedIndexer
      const seeding = yield* DefaultLibraries.seed(["he", "bytes"]).pipe(
        Effect.provideService(Indexer, gate.indexer),
        Effect.forkChild
      )
      yield* Deferred.succeed(gate.proceed, undefined)
      yield* reachedOrEnded({ reached: gate.started }, seeding)
      assert.strictEqual(yield* stateOf(HE), "indexing")
      // Stopped (a shutdown) while `he` was being indexed and `bytes` waited.
      yield* Fiber.interrupt(seeding)
      assert.strictEqual(yield* stateOf(HE), "queued")
      assert.strictEqual(yield* stateOf(BYTES), "queued")
      assert.strictEqual((yield* context(HE)).status, 202)
      const indexer = yield* Indexer
      assert.deepStrictEqual((yield* indexer.unfinished).map((version) => [version.libraryId.split("/").slice(0, 3).join("/"), version.state]), [
        [HE, "queued"],
        [BYTES, "queued"]
      ])

      // The next start: the index is not empty, so `effect` is not seeded; what was left is indexed.
      assert.deepStrictEqual(yield* DefaultLibraries.seed(["effect"]), [HE, BYTES])
      assert.strictEqual(yield* stateOf(HE), "ready")
      assert.strictEqual(yield* stateOf(BYTES), "ready")
      assert.strictEqual((yield* context(HE, "decode")).status, 200)
      assert.deepStrictEqual((yield* indexer.list).map((library) => library.id), [HE, BYTES])
    }))
})

// Live services: the start's background fiber runs on its own, the test waits in real time.
layer(server, { excludeTestServices: true, timeout: 120_000 })("a database left by a killed process", (it) => {
  it.effect("queued and indexing versions are indexed by the service's next start; a vanished source ends failed", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const indexer = yield* Indexer
      const page = (word: string) => ({
        "README.md": `## Configuring widgets\n\nThe ${word} way to configure widgets and their options, every setting in turn.\n`
      })

      // A seed killed after queueing: `he` registered, never read.
      yield* Effect.scoped(Effect.flatMap(indexer.resolve("npm:he"), (source) => indexer.enqueue([source])))
      // A `svc docs add` killed mid-run: the version says indexing, with no snippets.
      const crashed = yield* docsFolder(page("crashed"))
      yield* sql`INSERT INTO docs.libraries (id, title, source_kind, source_location, default_version)
                 VALUES ('/me/crashed', 'crashed', 'folder', ${crashed}, '1.0')`
      yield* sql`INSERT INTO docs.versions (library_id, version, state) VALUES ('/me/crashed', '1.0', 'indexing')`
      // A refresh killed mid-run: indexed once, its source changed since, the version left indexing.
      const refreshing = yield* docsFolder(page("oldword"))
      yield* indexer.add(refreshing, { id: "/me/refreshing", version: "2.0" })
      yield* Effect.promise(() => fs.writeFile(path.join(refreshing, "README.md"), page("newword")["README.md"]))
      yield* sql`UPDATE docs.versions SET state = 'indexing' WHERE library_id = '/me/refreshing'`
      // Queued, but its folder is gone by the next start.
      const gone = yield* docsFolder(page("gone"))
      yield* Effect.promise(() => fs.rm(gone, { recursive: true }))
      yield* sql`INSERT INTO docs.libraries (id, title, source_kind, source_location, default_version)
                 VALUES ('/me/gone', 'gone', 'folder', ${gone}, '1.0')`
      yield* sql`INSERT INTO docs.versions (library_id, version, state) VALUES ('/me/gone', '1.0', 'queued')`

      // Before the start: nothing answers but the live generation of the interrupted refresh. The
      // versions the killed runs left indexing hold no run lock: they are listed queued, waiting.
      assert.strictEqual((yield* context("/me/crashed")).body.state, "queued")
      assert.strictEqual((yield* context(HE)).body.state, "queued")
      const stale = yield* context("/me/refreshing")
      assert.strictEqual(stale.status, 200)
      assert.include(stale.body.snippets[0].content, "oldword")
      assert.strictEqual(yield* stateOf("/me/refreshing"), "queued")

      // The next start: the service's layer, whose background fiber does the work.
      yield* Layer.build(DefaultLibraries.layer).pipe(
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ DOCS_DEFAULT_LIBRARIES: "bytes" })))
      )
      let waited = 0
      while ((yield* indexer.unfinished).length > 0) {
        assert.isBelow(waited, 60_000, "the unfinished versions were not indexed within a minute")
        yield* Effect.sleep("50 millis")
        waited += 50
      }

      const he = yield* context(HE, "decode")
      assert.strictEqual(he.status, 200)
      assert.isAbove(he.body.snippets.length, 0)
      assert.strictEqual(yield* stateOf(HE), "ready")
      const fixed = yield* context("/me/crashed")
      assert.strictEqual(fixed.status, 200)
      assert.include(fixed.body.snippets[0].content, "crashed")
      const fresh = yield* context("/me/refreshing")
      assert.strictEqual(fresh.status, 200)
      assert.include(fresh.body.snippets[0].content, "newword")
      assert.strictEqual(yield* stateOf("/me/refreshing"), "ready")
      const failed = yield* context("/me/gone")
      assert.strictEqual(failed.status, 202)
      assert.strictEqual(failed.body.state, "failed")
      const listed = (yield* indexer.list).find((library) => library.id === "/me/gone")!
      assert.deepStrictEqual(listed.versions.map((version) => [version.state, version.errorCategory]), [["failed", "source_not_found"]])
      // The index was not empty: the configured default (bytes) was not seeded.
      assert.isUndefined(yield* searched(BYTES))
    }))
})
