/**
 * The scheduled refresh with real processes: two docs-api processes (`src/main.ts`) started at once
 * on one database with DOCS_REFRESH_INTERVAL set; a git library with a new commit is re-indexed by
 * one of them, once, and the other finds the pass taken.
 */
import { assert, layer } from "@effect/vitest"
import { Database } from "@svc/platform"
import { tempDir } from "@svc/platform/testing"
import { Effect, Redacted } from "effect"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Indexer } from "../src/Indexer.ts"
import { docsProcess, git, stack, waitFor } from "./support.ts"

layer(stack, { excludeTestServices: true, timeout: 120_000 })("scheduled refresh, two docs-api processes", (it) => {
  it.effect("one pass between them: the changed library is re-indexed once", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("svc-docs-procs-")
      const work = path.join(dir, "work")
      const bare = path.join(dir, "acme", "procs.git")
      git(dir, "init", "--quiet", "--initial-branch", "main", work)
      yield* Effect.promise(() => fs.writeFile(path.join(work, "README.md"), "# Procs\n\nThe first version of these docs, long enough to be kept as a snippet.\n"))
      git(work, "add", ".")
      git(work, "commit", "--quiet", "-m", "first")
      git(dir, "clone", "--quiet", "--bare", work, bare)
      const indexer = yield* Indexer
      yield* indexer.add(bare)
      yield* Effect.promise(() => fs.writeFile(path.join(work, "guide.md"), "# Guide\n\nA second commit that one of the two processes indexes.\n"))
      git(work, "add", ".")
      git(work, "commit", "--quiet", "-m", "second")
      git(work, "push", "--quiet", bare, "main")
      const newHead = git(work, "rev-parse", "--short", "HEAD")

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
