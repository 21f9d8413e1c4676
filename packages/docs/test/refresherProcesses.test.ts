/**
 * The scheduled refresh with real processes: two docs-api processes (`src/main.ts`) started at once
 * on one database with DOCS_REFRESH_INTERVAL set; a git library with a new commit is re-indexed by
 * one of them, once, and the other finds the pass taken.
 */
import { assert, layer } from "@effect/vitest"
import { Database } from "@svc/platform"
import { spawnablePort, tempDir } from "@svc/platform/testing"
import { Effect, Redacted } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Indexer } from "../src/Indexer.ts"
import { git, stack } from "./support.ts"

const entry = fileURLToPath(new URL("../src/main.ts", import.meta.url))

const sleep = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

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
      const logs: Array<string> = []
      const start = Effect.acquireRelease(
        Effect.promise(async () => {
          const port = await Effect.runPromise(spawnablePort())
          const child = spawn(process.execPath, [entry], {
            env: {
              ...process.env,
              DATABASE_URL: url,
              DOCS_PORT: String(port),
              HOST: "127.0.0.1",
              DOCS_DEFAULT_LIBRARIES: "none",
              DOCS_REFRESH_INTERVAL: "1 hour",
              LOG_LEVEL: "debug"
            },
            stdio: ["ignore", "pipe", "pipe"]
          })
          const index = logs.push("") - 1
          const collect = (chunk: Buffer) => (logs[index] += chunk.toString())
          child.stdout?.on("data", collect)
          child.stderr?.on("data", collect)
          return child
        }),
        (child: ChildProcess) =>
          Effect.promise(() =>
            new Promise<void>((resolve) => {
              if (child.exitCode !== null || child.signalCode !== null) return resolve()
              child.once("exit", () => resolve())
              child.kill("SIGKILL")
            })
          )
      )
      yield* Effect.scoped(Effect.gen(function*() {
        yield* Effect.all([start, start], { concurrency: "unbounded" })
        // both have tried: one ran the pass, the other found it taken (or not due)
        for (let attempt = 0;; attempt++) {
          const refreshed = logs.filter((log) => log.includes("Refreshed /acme/procs")).length
          const declined = logs.filter((log) => log.includes("another process has the pass")).length
          if (refreshed > 1) assert.fail("both processes ran a pass")
          if (refreshed === 1 && declined === 1) break
          if (attempt === 450) assert.fail(`no single pass in 45 s: ${logs.map((log) => log.slice(-2000)).join("\n----\n")}`)
          yield* sleep(100)
        }
      }))
      const library = (yield* indexer.list).find((l) => l.id === "/acme/procs")!
      assert.strictEqual(library.defaultVersion, newHead)
      assert.deepStrictEqual(library.versions.map((v) => v.state), ["ready", "ready"], "the old commit and the new one, once")
      assert.strictEqual(logs.filter((log) => log.includes("Refreshed /acme/procs")).length, 1)
    }))
})
