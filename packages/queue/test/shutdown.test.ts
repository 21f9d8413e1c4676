/**
 * SIGTERM of a worker process (one signal, as systemd or Kubernetes sends it) whose deliveries do not
 * finish: the worker's wait for them is bounded by `SHUTDOWN_TIMEOUT` too, so it gives the claims back
 * and exits 0 before the shutdown watchdog (`SHUTDOWN_TIMEOUT` + 5 s) would exit 1 with every claim
 * still held. (SIGKILL of workers: crash.test.ts, fifo.test.ts, flowControl.test.ts.)
 *
 * SIGTERM while the worker's batch of finished deliveries waits for a pooled connection: the
 * recording loop is interrupted before the graceful stop runs, and the batch it had taken was dropped,
 * so those messages stayed claimed and were sent again a lease later (an outside kill sweep: 132 of
 * 5,000 messages delivered twice across one SIGTERM). The stop records that batch too.
 */
import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { spawnablePort, TestDatabase } from "@svc/platform/testing"
import { Effect, Redacted, Schedule } from "effect"
import { Reactivity } from "effect/reactivity"
import * as Http from "node:http"
import type * as Net from "node:net"
import { kill, request, startDestination, startQueue, TOKEN, waitUntil } from "./processes.ts"

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

  it.live("SIGTERM while finished deliveries wait for a connection to be recorded: the stop records them", () =>
    Effect.gen(function*() {
      const url = Redacted.value(yield* TestDatabase.freshDatabase())
      const sql = yield* PgClient.make({ url: Redacted.make(url), maxConnections: 1 }).pipe(Effect.provide(Reactivity.layer))
      // A destination that answers 200 once told to.
      let answer!: () => void
      const told = new Promise<void>((resolve) => answer = resolve)
      let arrived = 0
      const destination = Http.createServer((req, res) => {
        req.resume()
        req.on("end", () => {
          arrived++
          void told.then(() => res.end("ok"))
        })
      })
      yield* Effect.acquireRelease(
        Effect.promise(() => new Promise<void>((resolve) => destination.listen(0, "127.0.0.1", resolve))),
        () => Effect.sync(() => {
          destination.closeAllConnections()
          destination.close()
        })
      )
      const destinationUrl = `http://127.0.0.1:${(destination.address() as Net.AddressInfo).port}/hold`
      const port = yield* spawnablePort()
      // One pooled connection: a request stuck on a lock holds it, so the recording waits for it.
      // Claims last a minute: nothing is sent again during the test unless by a lease running out.
      const worker = startQueue(url, port, true, {
        DATABASE_POOL_SIZE: "1",
        SHUTDOWN_TIMEOUT: "2 seconds",
        QUEUE_DEFAULT_TIMEOUT: "60 seconds",
        LOG_LEVEL: "info"
      })
      yield* Effect.addFinalizer(() => Effect.promise(() => kill(worker)))
      let log = ""
      worker.stderr?.on("data", (chunk: Buffer) => log += chunk.toString())
      let exited = false
      const exit = new Promise<number | null>((resolve) =>
        worker.once("exit", (code) => {
          exited = true
          resolve(code)
        })
      )
      const base = `http://127.0.0.1:${port}`
      yield* Effect.promise(() =>
        waitUntil(() => fetch(`${base}/health`).then((r) => r.ok, () => false), 60_000, () => "the worker process")
      )
      const published = yield* Effect.promise(() => request(base, `/v2/publish/${destinationUrl}`, { method: "POST", body: "a" }))
      assert.strictEqual(published.status, 201)
      const messageId: string = published.body.messageId
      yield* Effect.promise(() => waitUntil(() => arrived === 1, 30_000, () => "the delivery"))

      yield* sql.withTransaction(Effect.gen(function*() {
        // A read of the dead-letter queue waits for this lock, holding the worker's one connection.
        yield* sql`LOCK TABLE queue.dlq IN ACCESS EXCLUSIVE MODE`
        // A read answered before it reached the lock (its wait for the one pooled connection ran out on a
        // busy machine) is sent again, until one waits on the lock.
        let answered = false
        const read = () =>
          fetch(`${base}/v2/dlq`, { headers: { authorization: `Bearer ${TOKEN}` } }).then((r) => r.text(), () => "").finally(() => answered = true)
        let reading = read()
        // (polled on the transaction's own connection, in this fiber). Within a transaction Postgres
        // answers pg_stat_activity from the snapshot its first read took (only the wait event is read
        // live): without clearing it, a first poll made before the read reached the worker kept the
        // worker's previous query text, and the read never matched (a CI failure, 30 s of polling).
        const waiters = sql`SELECT pg_stat_clear_snapshot()`.pipe(Effect.andThen(sql<{ n: number }>`
          SELECT count(*)::int4 AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%queue.dlq%'`))
        yield* Effect.sync(() => {
          if (answered) {
            answered = false
            reading = read()
          }
        }).pipe(
          Effect.andThen(waiters),
          Effect.repeat({ until: ([row]) => row!.n === 1, schedule: Schedule.spaced("25 millis") }),
          Effect.timeoutOrElse({
            duration: "30 seconds",
            orElse: () => Effect.die(new Error("the read of the dead-letter queue never waited for the lock"))
          })
        )
        // The destination answers; the delivery is finished, its recording has no connection.
        answer()
        worker.kill("SIGTERM")
        yield* Effect.promise(() =>
          waitUntil(() => exited || log.includes("recording 1 finished deliveries"), 30_000, () => `the stop; log:\n${log}`)
        )
        // Committed: the read goes on, then the stop's recording.
        void reading
      }))
      const code = yield* Effect.promise(() => exit)
      // Before, the batch was dropped: the message stayed claimed, to be sent again a lease later.
      const [row] = yield* sql<{ state: string; claimed: boolean }>`
        SELECT state, claim_id IS NOT NULL AS claimed FROM queue.messages WHERE id = ${messageId}`
      assert.deepStrictEqual(row, { state: "delivered", claimed: false }, log)
      assert.strictEqual(code, 0, `exit code; log:\n${log}`)
      assert.strictEqual(arrived, 1)
    }), { timeout: 120_000 })
})
