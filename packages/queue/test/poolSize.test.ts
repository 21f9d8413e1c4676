/**
 * DATABASE_POOL_SIZE=1 (allowed: 1 to 1,000) on a worker process. The worker's LISTEN held a pooled
 * connection for good, so with one connection nothing else ever got one: a publish never answered,
 * `/ready` said the database was down, no message was claimed. The LISTEN has a connection of its own.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawnablePort, TestDatabase } from "@svc/platform/testing"
import { Effect, Redacted } from "effect"
import { kill, request, startDestination, startQueue, waitUntil } from "./processes.ts"

describe("a worker process with DATABASE_POOL_SIZE=1", () => {
  it.live("publishes, delivers and is ready", () =>
    Effect.gen(function*() {
      const url = Redacted.value(yield* TestDatabase.freshDatabase())
      const destination = yield* Effect.acquireRelease(
        Effect.promise(() => startDestination(() => ({ status: 200, delayMs: 0 }))),
        (d) => Effect.promise(d.close)
      )
      const port = yield* spawnablePort()
      const worker = startQueue(url, port, true, { DATABASE_POOL_SIZE: "1" })
      yield* Effect.addFinalizer(() => Effect.promise(() => kill(worker)))
      const base = `http://127.0.0.1:${port}`
      yield* Effect.promise(() =>
        waitUntil(() => fetch(`${base}/health`).then((r) => r.ok, () => false), 60_000, () => "the worker process")
      )
      // Bounded, so that a publish that never answers fails the test rather than its timeout.
      const published = yield* Effect.promise(() =>
        request(base, `/v2/publish/${destination.base}/in`, { method: "POST", body: "one", signal: AbortSignal.timeout(30_000) })
      )
      assert.strictEqual(published.status, 201)
      yield* Effect.promise(() => waitUntil(() => destination.arrivals.length === 1, 30_000, () => "the delivery"))
      assert.strictEqual(destination.arrivals[0]!.body, "one")
      const ready = yield* Effect.promise(() => fetch(`${base}/ready`, { signal: AbortSignal.timeout(30_000) }))
      assert.strictEqual(ready.status, 200)
      yield* Effect.promise(() =>
        waitUntil(async () => {
          const answer = await request(base, `/v2/messages/${published.body.messageId}`, { signal: AbortSignal.timeout(30_000) })
          return answer.body.state === "delivered"
        }, 30_000, () => "the message recorded as delivered")
      )
    }), { timeout: 120_000 })
})
