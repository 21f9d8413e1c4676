/**
 * The scheduled refresh on a real database, with a git repository made here (no network) and an
 * installed npm package: a pass re-indexes only what changed (a new commit, another installed
 * version), the refresh states show it, and of two refreshers on one database (two connection
 * pools, as two docs-api processes have) only one runs a pass.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, layer } from "@effect/vitest"
import { Database } from "@svc/platform"
import { ConfigProvider, Duration, Effect, Exit, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import * as fs from "node:fs/promises"
import { Indexer } from "../src/Indexer.ts"
import * as Refresher from "../src/Refresher.ts"
import { RefreshStore } from "../src/RefreshStore.ts"
import { git, gitRepository, stack } from "./support.ts"


/** A repository published to `<tmp>/acme/<name>.git`, its README long enough to be a snippet. */
const repository = (name: string) =>
  gitRepository("acme", name, { "README.md": `# ${name}\n\nThe first version of these docs, long enough to be a snippet.\n` })

const withRefresh = Effect.provide(Layer.mergeAll(RefreshStore.layer, NodeServices.layer))

const outcomes = (checks: Option.Option<ReadonlyArray<Refresher.LibraryCheck>>) =>
  Option.getOrThrow(checks).map((check) => [check.libraryId, check.outcome] as const)

layer(stack)("scheduled refresh", (it) => {
  it.effect("unset: no refresher; under a minute: the service does not start, naming the setting", () =>
    Effect.gen(function*() {
      const build = (env: Record<string, string>) =>
        Effect.exit(Effect.scoped(Layer.build(Refresher.layer.pipe(
          Layer.provide(Layer.mergeAll(RefreshStore.layer, NodeServices.layer)),
          Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env)))
        ))))
      assert.isTrue(Exit.isSuccess(yield* build({})))
      const short = yield* build({ DOCS_REFRESH_INTERVAL: "10 seconds" })
      assert.isTrue(Exit.isFailure(short))
      assert.include(String(short), "DOCS_REFRESH_INTERVAL is 10s: it must be at least 1 minute")
      assert.isTrue(Exit.isFailure(yield* build({ DOCS_REFRESH_INTERVAL: "often" })))
    }))
  it.effect("re-indexes a git library only after a new commit, an npm library only when another version is installed", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const repo = yield* repository("refreshed")
      const added = yield* indexer.add(repo.bare)
      assert.deepStrictEqual([added.libraryId, added.version], ["/acme/refreshed", repo.head])
      // an npm package indexed under a version that is not the installed one
      yield* indexer.add("npm:he", { id: "/npm/he", version: "0.0.1" })

      const first = yield* Refresher.refreshOnce("a", Duration.zero).pipe(withRefresh)
      assert.deepStrictEqual(outcomes(first), [["/acme/refreshed", "unchanged"], ["/npm/he", "reindexed"]])
      const he = (yield* indexer.list).find((library) => library.id === "/npm/he")!
      assert.notStrictEqual(he.defaultVersion, "0.0.1")
      assert.deepStrictEqual(he.versions.map((v) => [v.version, v.state]), [["0.0.1", "ready"], [he.defaultVersion, "ready"]])

      const second = yield* Refresher.refreshOnce("a", Duration.zero).pipe(withRefresh)
      assert.deepStrictEqual(outcomes(second), [["/acme/refreshed", "unchanged"], ["/npm/he", "unchanged"]])

      const newHead = yield* repo.commit({ "docs/new.md": "# New page\n\nWritten after the first index, found by the scheduled refresh.\n" }, "write docs/new.md")
      const third = yield* Refresher.refreshOnce("a", Duration.zero).pipe(withRefresh)
      assert.deepStrictEqual(outcomes(third), [["/acme/refreshed", "reindexed"], ["/npm/he", "unchanged"]])
      const library = (yield* indexer.list).find((l) => l.id === "/acme/refreshed")!
      assert.strictEqual(library.defaultVersion, newHead)
      assert.deepStrictEqual(library.versions.map((v) => [v.version, v.state]), [[repo.head, "ready"], [newHead, "ready"]])

      const fourth = yield* Refresher.refreshOnce("a", Duration.zero).pipe(withRefresh)
      assert.deepStrictEqual(outcomes(fourth), [["/acme/refreshed", "unchanged"], ["/npm/he", "unchanged"]])
      assert.strictEqual((yield* indexer.list).find((l) => l.id === "/acme/refreshed")!.versions.length, 2)

      // a commit whose docs cannot be indexed: its version fails, the previous one stays the default
      git(repo.work, "rm", "--quiet", "-r", "README.md", "docs")
      yield* repo.commit({}, "no docs")
      const fifth = yield* Refresher.refreshOnce("a", Duration.zero).pipe(withRefresh)
      assert.deepStrictEqual(outcomes(fifth), [["/acme/refreshed", "failed"], ["/npm/he", "unchanged"]])
      const kept = (yield* indexer.list).find((l) => l.id === "/acme/refreshed")!
      assert.strictEqual(kept.defaultVersion, newHead)
      assert.deepStrictEqual(kept.versions.map((v) => v.state), ["ready", "ready", "failed"])
    }))

  it.effect("a commit already the default (a killed pass's add, finished by a resume) is not read again", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const repo = yield* repository("resumed")
      yield* indexer.add(repo.bare)
      const first = yield* Refresher.refreshOnce("a", Duration.zero).pipe(withRefresh)
      assert.deepStrictEqual(outcomes(first).filter(([id]) => id === "/acme/resumed"), [["/acme/resumed", "unchanged"]])
      // the new commit indexed and made the default outside a pass (what the resume of a pass's killed
      // add does): the pass's own check of it was never recorded
      const newHead = yield* repo.commit({ "docs/resumed.md": "# Resumed\n\nIndexed by the run that took up a killed pass's add.\n" }, "write docs/resumed.md")
      yield* indexer.add(repo.bare)
      assert.strictEqual((yield* indexer.list).find((l) => l.id === "/acme/resumed")!.defaultVersion, newHead)
      const second = yield* Refresher.refreshOnce("a", Duration.zero).pipe(withRefresh)
      assert.deepStrictEqual(outcomes(second).filter(([id]) => id === "/acme/resumed"), [["/acme/resumed", "unchanged"]])
      // and a later commit is still found
      const later = yield* repo.commit({ "docs/later.md": "# Later\n\nA commit after that, found by the next pass.\n" }, "write docs/later.md")
      const third = yield* Refresher.refreshOnce("a", Duration.zero).pipe(withRefresh)
      assert.deepStrictEqual(outcomes(third).filter(([id]) => id === "/acme/resumed"), [["/acme/resumed", "reindexed"]])
      assert.strictEqual((yield* indexer.list).find((l) => l.id === "/acme/resumed")!.defaultVersion, later)
    }))

  it.effect("the docs-api's refresher layer runs a pass at start with DOCS_REFRESH_INTERVAL set", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const repo = yield* repository("scheduled")
      yield* indexer.add(repo.bare)
      const newHead = yield* repo.commit({ "docs/next.md": "# Next\n\nA commit the background refresher indexes on its first pass.\n" }, "write docs/next.md")
      yield* Effect.scoped(Effect.gen(function*() {
        yield* Layer.build(Refresher.layer.pipe(
          Layer.provide(Layer.mergeAll(RefreshStore.layer, NodeServices.layer)),
          Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ DOCS_REFRESH_INTERVAL: "1 hour" })))
        ))
        // polled on real time, up to 20 s (the test clock does not move by itself)
        for (let attempt = 0;; attempt++) {
          const library = (yield* indexer.list).find((l) => l.id === "/acme/scheduled")!
          if (library.defaultVersion === newHead && library.versions.find((v) => v.version === newHead)?.state === "ready") break
          if (attempt === 200) assert.fail(`not refreshed: ${JSON.stringify(library.versions)}`)
          yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 100)))
        }
      }))
    }))

  it.effect("two refreshers on one database (separate pools): one pass, by one of them; a source gone fails its check only", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const repo = yield* repository("contested")
      yield* indexer.add(repo.bare)
      yield* repo.commit({ "docs/more.md": "# More\n\nA second commit that both refreshers could re-index, only one does.\n" }, "write docs/more.md")
      // the earlier tests' passes are not due for an hour: this database's schedule starts afresh
      yield* (yield* SqlClient.SqlClient)`DELETE FROM docs.refresher`
      // a second pool on the same database: what another docs-api process has
      const secondPool = Layer.mergeAll(RefreshStore.layer, NodeServices.layer).pipe(Layer.provide(Layer.fresh(Database.layerPool)))
      const [a, b] = yield* Effect.all([
        Refresher.refreshOnce("process-a", Duration.hours(1)).pipe(withRefresh),
        Refresher.refreshOnce("process-b", Duration.hours(1)).pipe(Effect.provide(secondPool))
      ], { concurrency: "unbounded" })
      assert.strictEqual([a, b].filter(Option.isSome).length, 1, "exactly one pass")
      const ran = Option.isSome(a) ? a : b
      assert.deepInclude(outcomes(ran), ["/acme/contested", "reindexed"])
      assert.strictEqual((yield* indexer.list).find((l) => l.id === "/acme/contested")!.versions.length, 2, "indexed once")
      // not due again for an hour, whoever asks
      assert.isTrue(Option.isNone(yield* Refresher.refreshOnce("process-a", Duration.hours(1)).pipe(withRefresh)))

      // a repository that is gone: that library fails its check, the pass goes on, nothing changes
      yield* Effect.promise(() => fs.rm(repo.bare, { recursive: true }))
      yield* (yield* SqlClient.SqlClient)`DELETE FROM docs.refresher`
      const gone = yield* Refresher.refreshOnce("process-b", Duration.hours(1)).pipe(Effect.provide(secondPool))
      assert.deepInclude(outcomes(gone), ["/acme/contested", "failed"])
      assert.strictEqual((yield* indexer.list).find((l) => l.id === "/acme/contested")!.versions.length, 2)
    }))

})
