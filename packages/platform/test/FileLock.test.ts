import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Ref, Scope } from "effect"
import { spawn } from "node:child_process"
import * as path from "node:path"
import * as FileLock from "../src/FileLock.ts"
import { tempDir } from "../src/testing/tempDir.ts"
import { withFakeFlock } from "./fixtures/fakeFlock.ts"

const lockFile = tempDir("svc-lock-").pipe(Effect.map((dir) => path.join(dir, "folder.lock")))

describe("FileLock", () => {
  it.live("a second holder waits (saying so), fails past its wait naming the work, and gets the lock once it is released", () =>
    Effect.gen(function*() {
      const file = yield* lockFile
      const first = yield* Scope.make()
      yield* FileLock.lock(file, { what: "testing", waitSeconds: 1, onWait: Effect.void }).pipe(Scope.provide(first))
      const waited = yield* Ref.make(0)
      const second = FileLock.lock(file, { what: "starting a test cluster", waitSeconds: 1, onWait: Ref.update(waited, (n) => n + 1) })
      const refused = yield* Effect.flip(Effect.scoped(second))
      assert.strictEqual(refused.message, `Another process has been starting a test cluster for 1 s (it holds ${file}); try again once it is done`)
      assert.strictEqual(yield* Ref.get(waited), 1)
      yield* Scope.close(first, Exit.void)
      yield* Effect.scoped(second)
      assert.strictEqual(yield* Ref.get(waited), 1, "a free lock is taken without waiting")
    }).pipe(Effect.scoped))

  it.live("a lock whose holding process was killed (kill -9) is free at once: the file left behind blocks nothing", () =>
    Effect.gen(function*() {
      const file = yield* lockFile
      const holder = spawn(process.execPath, [new URL("./fixtures/hold-lock.ts", import.meta.url).pathname, file], {
        stdio: ["ignore", "pipe", "inherit"]
      })
      yield* Effect.addFinalizer(() => Effect.sync(() => holder.exitCode === null && holder.kill("SIGKILL")))
      yield* Effect.promise(() =>
        new Promise<void>((resolve, reject) => {
          holder.stdout.on("data", (chunk) => String(chunk).includes("held") && resolve())
          holder.once("exit", (code) => reject(new Error(`holder exited early (${code})`)))
        })
      )
      const held = yield* Effect.scoped(FileLock.lock(file, { what: "testing", waitSeconds: 0, onWait: Effect.void })).pipe(Effect.exit)
      assert.isTrue(Exit.isFailure(held), "held while its process lives")
      holder.kill("SIGKILL")
      yield* Effect.scoped(FileLock.lock(file, { what: "testing", waitSeconds: 5, onWait: Effect.void }))
    }).pipe(Effect.scoped), { timeout: 30_000 })

  it.live("a flock that is not util-linux's (busybox's lacks its options) is 'unavailable', not 'busy'", () =>
    Effect.gen(function*() {
      const file = yield* lockFile
      yield* withFakeFlock
      const error = yield* Effect.flip(Effect.scoped(FileLock.lock(file, { what: "testing", waitSeconds: 1, onWait: Effect.void })))
      assert.strictEqual(error.reason, "unavailable")
      assert.include(error.message, "unrecognized option")
    }).pipe(Effect.scoped))
})
