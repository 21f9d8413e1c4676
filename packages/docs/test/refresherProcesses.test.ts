/**
 * The scheduled refresh with real processes: two docs-api processes (`src/main.ts`) started at once
 * on one database with DOCS_REFRESH_INTERVAL set; a git library with a new commit is re-indexed by
 * one of them, once, and the other finds the pass taken.
 */
import { assert, layer } from "@effect/vitest"
import { Database } from "@svc/platform"
import { Effect, Redacted } from "effect"
import { Indexer } from "../src/Indexer.ts"
import { docsProcess, gitRepository, stack, waitFor } from "./support.ts"

layer(stack, { excludeTestServices: true, timeout: 120_000 })("scheduled refresh, two docs-api processes", (it) => {
  it.effect("one pass between them: the changed library is re-indexed once", () =>
    Effect.gen(function*() {
      const repo = yield* gitRepository("acme", "procs", {
        "README.md": "# Procs\n\nThe first version of these docs, long enough to be kept as a snippet.\n"
      })
      const indexer = yield* Indexer
      yield* indexer.add(repo.bare)
      const newHead = yield* repo.commit({ "guide.md": "# Guide\n\nA second commit that one of the two processes indexes.\n" }, "second")

      const url = Redacted.value((yield* Database).url)
      const env = { DOCS_REFRESH_INTERVAL: "1 hour", LOG_LEVEL: "debug" }
      const logs = yield* Effect.scoped(Effect.gen(function*() {
        const processes = yield* Effect.all([docsProcess(url, env), docsProcess(url, env)], { concurrency: "unbounded" })
        const logs = () => processes.map((service) => service.output())
        // both have tried: one ran the pass, the other found it taken (or not due)
        yield* waitFor(
          Effect.sync(() => {
            const refreshed = logs().filter((log) => log.includes("Refreshed /acme/procs")).length
            if (refreshed > 1) assert.fail("both processes ran a pass")
            return { refreshed, declined: logs().filter((log) => log.includes("another process has the pass")).length }
          }),
          ({ declined, refreshed }) => refreshed === 1 && declined === 1,
          () => `a single pass:\n${logs().map((log) => log.slice(-2000)).join("\n----\n")}`,
          "45 seconds"
        )
        return logs
      }))
      const library = (yield* indexer.list).find((l) => l.id === "/acme/procs")!
      assert.strictEqual(library.defaultVersion, newHead)
      assert.deepStrictEqual(library.versions.map((v) => v.state), ["ready", "ready"], "the old commit and the new one, once")
      assert.strictEqual(logs().filter((log) => log.includes("Refreshed /acme/procs")).length, 1)
    }))
})
