/**
 * Run locks across processes (src/RunLocks.ts), on Postgres: each "process" here is an Indexer and
 * IndexStore of its own (a fresh build, so a lock session of its own), as two docs-api or `svc docs`
 * processes on one database are.
 *
 * - a run's claim names its process to another's; its lock dies with its session (what a killed
 *   process's connection does), and the version is then listed `queued` and taken by another process;
 * - a live run is left alone by another process's picker, and an add of the same version there waits
 *   for the run's end, then runs;
 * - two pickers racing on one abandoned version: exactly one resumes it.
 *
 * With real processes killed by SIGKILL: test/abandonedRuns.test.ts.
 */
import { assert, layer } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, Layer, Option, Ref, Scope } from "effect"
import { SqlClient } from "effect/sql"
import * as os from "node:os"
import * as DefaultLibraries from "../src/DefaultLibraries.ts"
import { type IndexOptions, Indexer, type IndexProgress } from "../src/Indexer.ts"
import { IndexStore } from "../src/IndexStore.ts"
import { RUN_LOCK_NAMESPACE, runLockKey } from "../src/RunLocks.ts"
import { Search } from "../src/Search.ts"
import { docsFolder, stack, waitFor } from "./support.ts"

/** An Indexer and IndexStore of their own: another process as far as run locks go. */
const otherProcess = Effect.map(Layer.build(Layer.fresh(Indexer.layer)), (context) => ({
  indexer: Context.get(context, Indexer),
  store: Context.get(context, IndexStore)
}))

const page = (word: string) => ({
  "README.md": `# Widgets\n\n## Configuring widgets\n\nThe ${word} way to configure widgets and their options, every setting in turn.\n`
})

/** How another process of this test names this one (from RunLocks' application_name, at most 63 bytes). */
const THIS_PROCESS = `process ${process.pid} on ${`${process.pid}@${os.hostname()}`.slice(0, 54).slice(String(process.pid).length + 1)}`

/** The version's stored state, listed state and live snippets, and how many generations it has. */
const versionOf = (libraryId: string, version: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ state: string; snippet_count: number; live: number; generations: number; location: string }>`
      SELECT v.state, v.snippet_count, v.source_location AS location,
        (SELECT count(*)::int FROM docs.snippets s WHERE s.generation_id = v.generation_id) AS live,
        (SELECT count(*)::int FROM docs.generations g WHERE g.version_id = v.id) AS generations
      FROM docs.versions v WHERE v.library_id = ${libraryId} AND v.version = ${version}`.pipe(Effect.orDie)
    return rows[0]
  })

const listedState = (store: IndexStore["Service"], libraryId: string, version: string) =>
  Effect.map(store.list, (libraries) => libraries.find((library) => library.id === libraryId)?.versions.find((v) => v.version === version)?.state)

/** The folder's source resolved as `id`/`version`, as a record to register. */
const sourceOf = (indexer: Indexer["Service"], dir: string, id: string, version: string) =>
  Effect.scoped(indexer.resolve(dir, { id, version })).pipe(Effect.orDie)

layer(stack, { excludeTestServices: true, timeout: 120_000 })("run locks between processes", (it) => {
  it.effect("a claim names its process to another; its lock dies with its session, and the other process takes the version", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const a = yield* otherProcess
      const b = yield* otherProcess
      const dir = yield* docsFolder(page("first"))
      const source = yield* sourceOf(a.indexer, dir, "/acme/locked", "1.0")

      const scope = yield* Scope.make()
      const versionId = yield* a.store.claim(source, { makeDefault: true }).pipe(Scope.provide(scope))
      assert.strictEqual(yield* listedState(b.store, "/acme/locked", "1.0"), "indexing")
      const busy = yield* Effect.flip(Effect.scoped(b.store.claim({ ...source, location: "/elsewhere" }, { makeDefault: true })))
      assert.strictEqual(busy.holder, THIS_PROCESS)
      assert.match(busy.message, new RegExp(`^/acme/locked/1\\.0 is being indexed by another run \\(${THIS_PROCESS}, started \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\)$`))
      assert.strictEqual((yield* versionOf("/acme/locked", "1.0"))?.location, dir, "the refused claim changed nothing")
      assert.isTrue(Option.isNone(yield* b.indexer.resume("/acme/locked/1.0")))

      // A's lock session ends as a killed process's connection does: the lock goes with it.
      const terminated = yield* sql<{ readonly pid: number }>`
        SELECT pg_terminate_backend(l.pid), l.pid FROM pg_catalog.pg_locks l
        WHERE l.locktype = 'advisory' AND l.classid = ${RUN_LOCK_NAMESPACE}::oid AND l.objid = ${runLockKey(versionId)}::oid
          AND l.objsubid = 2 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`
      assert.strictEqual(terminated.length, 1)
      yield* waitFor(listedState(b.store, "/acme/locked", "1.0"), (state) => state === "queued", (state) => `the version listed queued (last: ${state})`)
      assert.strictEqual((yield* versionOf("/acme/locked", "1.0"))?.state, "indexing", "stored indexing, as its run left it")
      assert.deepStrictEqual(yield* b.indexer.unfinished, [{ libraryId: "/acme/locked/1.0", version: "1.0", state: "queued" }])

      // B takes it up and finishes it; A's scope closing later changes nothing.
      const resumed = yield* b.indexer.resume("/acme/locked/1.0")
      assert.strictEqual(Option.getOrThrow(resumed).libraryId, "/acme/locked")
      yield* Scope.close(scope, Exit.void)
      const done = (yield* versionOf("/acme/locked", "1.0"))!
      assert.deepStrictEqual([done.state, done.live, done.generations], ["ready", done.snippet_count, 1])
      assert.isAbove(done.snippet_count, 0)
    }))

  it.effect("a live run is left alone by another process's picker; an add of its version there waits for its end, then runs", () =>
    Effect.gen(function*() {
      const a = yield* otherProcess
      const b = yield* otherProcess
      const first = yield* docsFolder(page("alphaword"))
      const second = yield* docsFolder(page("betaword"))
      const order = yield* Ref.make<Array<string>>([])
      const started = yield* Deferred.make<void>()
      const finish = yield* Deferred.make<void>()
      const running = yield* a.indexer.add(first, {
        id: "/acme/live",
        version: "1.0",
        onProgress: (progress) =>
          progress._tag === "Started"
            ? Deferred.succeed(started, undefined).pipe(Effect.andThen(Deferred.await(finish)))
            : progress._tag === "Stored"
            ? Ref.update(order, (list) => [...list, "first stored"])
            : Effect.void
      }).pipe(Effect.forkChild)
      yield* Deferred.await(started)

      // B's picker: the version is a live run's, listed indexing; nothing is taken
      assert.deepStrictEqual(yield* b.indexer.unfinished, [{ libraryId: "/acme/live/1.0", version: "1.0", state: "indexing" }])
      assert.deepStrictEqual(yield* DefaultLibraries.resume().pipe(Effect.provideService(Indexer, b.indexer)), [])
      assert.isTrue(Option.isNone(yield* b.indexer.resume("/acme/live/1.0")))

      // B's add of the same version (another folder): it waits, and tells its caller for whom
      const waits: Array<IndexProgress> = []
      const waiting = yield* b.indexer.add(second, {
        id: "/acme/live",
        version: "1.0",
        onProgress: (progress) =>
          progress._tag === "Started"
            ? Ref.update(order, (list) => [...list, "second started"])
            : progress._tag === "Waiting"
            ? Effect.sync(() => waits.push(progress))
            : Effect.void
      }).pipe(Effect.forkChild)
      yield* waitFor(Effect.sync(() => waits.length), (n) => n > 0, () => "the second add to say it waits")
      assert.deepStrictEqual(waits, [{ _tag: "Waiting", libraryId: "/acme/live/1.0", holder: THIS_PROCESS }])
      assert.strictEqual((yield* versionOf("/acme/live", "1.0"))?.location, first, "the waiting add changed nothing")
      assert.deepStrictEqual(yield* Ref.get(order), [])

      yield* Deferred.succeed(finish, undefined)
      const [one, two] = [yield* Fiber.join(running), yield* Fiber.join(waiting)]
      assert.deepStrictEqual(yield* Ref.get(order), ["first stored", "second started"])
      assert.strictEqual(one.snippets, two.snippets)
      assert.strictEqual(waits.length, 1, "told once")
      const done = (yield* versionOf("/acme/live", "1.0"))!
      assert.deepStrictEqual([done.state, done.location, done.live, done.generations], ["ready", second, two.snippets, 1])
      const answer = yield* (yield* Search).context({ libraryId: "/acme/live", query: "configure widgets" }).pipe(Effect.orDie)
      assert.strictEqual(answer._tag, "Found")
      if (answer._tag === "Found") assert.include(answer.snippets[0]!.content, "betaword")
    }))

  it.effect("two pickers racing on one abandoned version: exactly one resumes it, the other leaves it", () =>
    Effect.gen(function*() {
      const a = yield* otherProcess
      const b = yield* otherProcess
      const dir = yield* docsFolder(page("gammaword"))
      // a run whose process died: registered indexing, no lock held
      yield* a.store.register(yield* sourceOf(a.indexer, dir, "/acme/orphan", "1.0"), "indexing", { makeDefault: true })
      assert.strictEqual(yield* listedState(b.store, "/acme/orphan", "1.0"), "queued")

      // each picker, once its run starts, holds there until the other has given up
      const starts = yield* Ref.make<Array<string>>([])
      const outcomes = yield* Ref.make<Array<readonly [string, boolean]>>([])
      const release = yield* Deferred.make<void>()
      const picker = (name: string, indexer: Indexer["Service"]) => {
        const options: IndexOptions = {
          onProgress: (progress) =>
            progress._tag === "Started" ? Ref.update(starts, (list) => [...list, name]).pipe(Effect.andThen(Deferred.await(release))) : Effect.void
        }
        return indexer.resume("/acme/orphan/1.0", options).pipe(
          Effect.tap((outcome) => Ref.update(outcomes, (list) => [...list, [name, Option.isSome(outcome)] as const])),
          Effect.forkChild
        )
      }
      const fibers = [yield* picker("a", a.indexer), yield* picker("b", b.indexer)]
      const first = yield* waitFor(Ref.get(outcomes), (list) => list.length > 0, () => "one picker to give up")
      assert.deepStrictEqual(first.map(([, resumed]) => resumed), [false], "the first to end is the one that found it taken")
      assert.strictEqual((yield* Ref.get(starts)).length, 1)
      yield* Deferred.succeed(release, undefined)
      yield* Effect.forEach(fibers, Fiber.join, { discard: true })

      const all = yield* Ref.get(outcomes)
      assert.deepStrictEqual(all.map(([, resumed]) => resumed), [false, true])
      assert.deepStrictEqual((yield* Ref.get(starts)), [all[1]![0]], "the one that resumed it is the one that started")
      const done = (yield* versionOf("/acme/orphan", "1.0"))!
      assert.deepStrictEqual([done.state, done.live, done.generations], ["ready", done.snippet_count, 1])
      assert.isAbove(done.snippet_count, 0)
    }))
})
