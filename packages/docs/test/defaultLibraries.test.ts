/**
 * The default documentation: an empty index gets the installed packages' docs; a package that is not
 * installed is skipped; an index that holds anything is left alone.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Exit } from "effect"
import { TestClock } from "effect/testing"
import * as DefaultLibraries from "../src/DefaultLibraries.ts"
import { DefaultPackages, seed } from "../src/DefaultLibraries.ts"
import { Indexer } from "../src/Indexer.ts"
import { packageLibraryId } from "../src/sources/Source.ts"
import { docsFolder, stack } from "./support.ts"

layer(stack, { timeout: 120_000 })("default libraries", (it) => {
  it.effect("an empty index is seeded from node_modules once; missing packages are skipped", () =>
    Effect.gen(function*() {
      const indexed = yield* seed(["he", "no-such-package-svc-test", "bytes"])
      assert.deepStrictEqual(indexed, ["/mathiasbynens/he", "/visionmedia/bytes.js"])
      const indexer = yield* Indexer
      assert.deepStrictEqual((yield* indexer.list).map((library) => library.id).sort(), ["/mathiasbynens/he", "/visionmedia/bytes.js"])
      // not empty any more: nothing is indexed again, nothing is replaced
      assert.deepStrictEqual(yield* seed(["he"]), [])
    }))

  it.effect("a running docs-api indexes a version found queued (an interrupted run's) within DOCS_RESUME_INTERVAL, not at its next start", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const state = Effect.map(indexer.list, (libraries) => libraries.find((library) => library.id === "/me/queued")?.versions[0]?.state)
      yield* Effect.scoped(Effect.gen(function*() {
        // what the service runs after its start-up pass
        const interval = yield* DefaultLibraries.ResumeInterval
        yield* Effect.forkScoped(DefaultLibraries.watch(interval))
        // a version queued, as an interrupted run leaves it
        const dir = yield* docsFolder({ "README.md": "# Queued\n\nA library whose run was interrupted, long enough to be a snippet.\n" })
        yield* indexer.enqueue([yield* Effect.scoped(indexer.resolve(dir, { id: "/me/queued", version: "1.0.0" }))])
        assert.strictEqual(yield* state, "queued")
        yield* TestClock.adjust(interval)
        const until = Date.now() + 20_000
        while ((yield* state) !== "ready" && Date.now() < until) yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
        assert.strictEqual(yield* state, "ready")
      }))
    }))

  it.effect("DOCS_DEFAULT_LIBRARIES: a list, or none; the suite's dependencies by default", () =>
    Effect.gen(function*() {
      const read = (env: Record<string, string>) =>
        Effect.gen(function*() {
          return yield* DefaultPackages
        }).pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env))))
      assert.deepStrictEqual(yield* read({ DOCS_DEFAULT_LIBRARIES: "he, bytes" }), ["he", "bytes"])
      assert.deepStrictEqual(yield* read({ DOCS_DEFAULT_LIBRARIES: "none" }), [])
      assert.include(yield* read({}), "effect")
    }))

  it.effect("DOCS_RESUME_INTERVAL: 30 seconds by default, at least a second", () =>
    Effect.gen(function*() {
      const read = (env: Record<string, string>) =>
        Effect.gen(function*() {
          return yield* DefaultLibraries.ResumeInterval
        }).pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env))))
      assert.strictEqual(Duration.toMillis(yield* read({})), 30_000)
      assert.strictEqual(Duration.toMillis(yield* read({ DOCS_RESUME_INTERVAL: "2 seconds" })), 2_000)
      assert.isTrue(Exit.isFailure(yield* Effect.exit(read({ DOCS_RESUME_INTERVAL: "10 millis" }))))
    }))
})

describe("packageLibraryId", () => {
  it("a monorepo's packages are distinct libraries; a package alone in its repository is the repository", () => {
    const repository = (directory?: string) => ({ type: "git", url: "https://github.com/Effect-TS/effect.git", ...(directory ? { directory } : {}) })
    assert.strictEqual(packageLibraryId({ name: "effect", repository: repository("packages/effect") }), "/effect-ts/effect")
    assert.strictEqual(packageLibraryId({ name: "@effect/vitest", repository: repository("packages/vitest") }), "/effect-ts/vitest")
    assert.strictEqual(packageLibraryId({ name: "@effect/sql-pg", repository: repository("packages/sql/pg") }), "/effect-ts/sql-pg")
    assert.strictEqual(packageLibraryId({ name: "effect", repository: repository() }), "/effect-ts/effect")
    assert.strictEqual(packageLibraryId({ name: "he", repository: "https://github.com/mathiasbynens/he.git" }), "/mathiasbynens/he")
    assert.strictEqual(packageLibraryId({ name: "x" }), undefined)
  })
})
