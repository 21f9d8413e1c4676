/**
 * SIGTERM of a worker process (one signal, as systemd or Kubernetes sends it) whose deliveries do not
 * finish: the worker's wait for them is bounded by `SHUTDOWN_TIMEOUT` too, so it gives the claims back
 * and exits 0 before the shutdown watchdog (`SHUTDOWN_TIMEOUT` + 5 s) would exit 1 with every claim
 * still held. (SIGKILL of workers: crash.test.ts, fifo.test.ts, flowControl.test.ts.)
 */
import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { spawnablePort, TestDatabase } from "@svc/platform/testing"
import { Effect, Redacted } from "effect"
import { Reactivity } from "effect/reactivity"
import { kill, request, startDestination, startQueue, waitUntil } from "./processes.ts"

describe("graceful shutdown of a worker process", () => {
  it.live("SHUTDOWN_TIMEOUT=0: one SIGTERM gives the claims in flight back and exits 0 at once", () =>
    Effect.gen(function*() {
      const url = Redacted.value(yield* TestDatabase.freshDatabase())
      const sql = yield* PgClient.make({ url: Redacted.make(url), maxConnections: 1 }).pipe(Effect.provide(Reactivity.layer))
      const destination = yield* Effect.acquireRelease(
        Effect.promise(() => startDestination(() => "hang")),
        (d) => Effect.promise(d.close)
      )
      const port = yield* spawnablePort()
      // Claims last a minute (the timeout + the margin): only a release frees them sooner.
      const worker = startQueue(url, port, true, { SHUTDOWN_TIMEOUT: "0 seconds", QUEUE_DEFAULT_TIMEOUT: "60 seconds", LOG_LEVEL: "info" })
      yield* Effect.addFinalizer(() => Effect.promise(() => kill(worker)))
      let log = ""
      worker.stderr?.on("data", (chunk: Buffer) => log += chunk.toString())
      const exited = new Promise<number | null>((resolve) => worker.once("exit", (code) => resolve(code)))
      const base = `http://127.0.0.1:${port}`
      yield* Effect.promise(() =>
        waitUntil(() => fetch(`${base}/health`).then((r) => r.ok, () => false), 60_000, () => "the worker process")
      )
      for (const body of ["a", "b"]) {
        const answer = yield* Effect.promise(() => request(base, `/v2/publish/${destination.base}/hang`, { method: "POST", body }))
        assert.strictEqual(answer.status, 201)
      }
      yield* Effect.promise(() => waitUntil(() => destination.inFlight("/hang") === 2, 30_000, () => "both deliveries in flight"))

      const signalled = Date.now()
      worker.kill("SIGTERM")
      const code = yield* Effect.promise(() => exited)
      const tookMs = Date.now() - signalled
      assert.strictEqual(code, 0, `exit code (the watchdog exits 1); log:\n${log}`)
      assert.isBelow(tookMs, 4_500, "well before the watchdog's 5 s")
      assert.include(log, "released 2 unfinished claims")
      const [row] = yield* sql<{ held: number; queued: number }>`
        SELECT count(*) FILTER (WHERE claim_id IS NOT NULL)::int4 AS held, count(*) FILTER (WHERE state = 'queued')::int4 AS queued
        FROM queue.messages`
      assert.deepStrictEqual(row, { held: 0, queued: 2 })
    }), { timeout: 120_000 })
})
