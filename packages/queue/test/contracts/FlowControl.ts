/**
 * The flow-control contract, written once: `FlowControls` + `Messages` in memory
 * (test/unit/flowAndFifoStores.test.ts) and on Postgres (test/flowControl.contract.test.ts).
 *
 * Covers: a publish creating its key; claims honouring parallelism (unexpired claims) and rate
 * (starts within the period), keys independent; a dead claim's slot coming back at its expiry;
 * pause and resume; the rule for differing limits; the key's view; unknown keys.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import * as Crypto from "node:crypto"
import type { FlowControlSettings } from "../../src/Publish.ts"
import { Dlq } from "../../src/store/Dlq.ts"
import { FlowControls } from "../../src/store/FlowControl.ts"
import { Messages } from "../../src/store/Messages.ts"
import { newMessage } from "./fixtures.ts"
import { LEASE_MARGIN_MS, StoreTime } from "./StoreTime.ts"

type Services = Messages | FlowControls | Dlq | StoreTime

const flowMessage = (flow: Partial<FlowControlSettings> & { readonly key: string }, body = "m") => ({
  ...newMessage({ body, timeoutMs: 1000 }),
  flowControl: { parallelism: undefined, rate: undefined, periodMs: 1000, ...flow }
})

const advance = (ms: number) => StoreTime.use((time) => time.advance(ms))

export const flowControlContract = (name: string, layer: Layer.Layer<Services, unknown>): void => {
  const test = (title: string, body: Effect.Effect<void, unknown, Services>) =>
    it.live(title, () => body.pipe(Effect.provide(layer)))

  describe(`FlowControl contract (${name})`, () => {
    test(
      "parallelism: at most n claimed and unexpired at once, keys independent; a finished or expired claim frees its slot",
      Effect.gen(function*() {
        const messages = yield* Messages
        yield* messages.publish(Array.from({ length: 5 }, (_, i) => flowMessage({ key: "a", parallelism: 2 }, `a${i}`)), undefined)
        yield* messages.publish(Array.from({ length: 3 }, (_, i) => flowMessage({ key: "b", parallelism: 1 }, `b${i}`)), undefined)
        yield* messages.publish([newMessage({ body: "free" })], undefined)
        const first = yield* messages.claim(100)
        const byKey = (batch: ReadonlyArray<{ readonly flowKey: string | null }>, key: string | null) =>
          batch.filter((m) => m.flowKey === key).length
        assert.strictEqual(byKey(first, "a"), 2)
        assert.strictEqual(byKey(first, "b"), 1)
        assert.strictEqual(byKey(first, null), 1)
        assert.deepStrictEqual(yield* messages.claim(100), [])
        const view = yield* FlowControls.use((flows) => flows.get("a"))
        assert.deepStrictEqual(view, {
          flowControlKey: "a",
          parallelism: 2,
          periodMs: 1000,
          waiting: 3,
          inFlight: 2,
          startedInPeriod: 0,
          paused: false
        })
        // One of a's finishes: one more of a's.
        const done = first.find((m) => m.flowKey === "a")!
        yield* messages.markDelivered([{ id: done.id, claimId: done.claimId, status: 200 }])
        const next = yield* messages.claim(100)
        assert.deepStrictEqual(next.map((m) => m.flowKey), ["a"])
        // The holders die: their claims expire (timeout + margin) and the slots come back.
        yield* advance(1000 + LEASE_MARGIN_MS + 100)
        const after = yield* messages.claim(100)
        assert.strictEqual(byKey(after, "a"), 2)
        assert.strictEqual(byKey(after, "b"), 1)
        // Waiting for a slot never counts as an attempt.
        for (const message of after) assert.strictEqual(message.retried, 0)
      })
    )

    test(
      "keys are served in turns, in byte order from after the last key served, each up to its room",
      Effect.gen(function*() {
        const messages = yield* Messages
        for (const key of ["k3", "k1", "k2"]) {
          yield* messages.publish(Array.from({ length: 4 }, (_, i) => flowMessage({ key, parallelism: 2 }, `${key}.${i}`)), undefined)
        }
        const keysOf = (batch: ReadonlyArray<{ readonly flowKey: string | null }>) => batch.map((m) => m.flowKey).sort()
        const first = yield* messages.claim(2)
        assert.deepStrictEqual(keysOf(first), ["k1", "k1"])
        assert.deepStrictEqual(keysOf(yield* messages.claim(3)), ["k2", "k2", "k3"])
        // k3 has room for one more; k1 and k2 are full: the turn goes on at k3.
        assert.deepStrictEqual(keysOf(yield* messages.claim(3)), ["k3"])
        // One of k1's finishes: the turn wraps around to k1.
        yield* messages.markDelivered([{ id: first[0]!.id, claimId: first[0]!.claimId, status: 200 }])
        assert.deepStrictEqual(keysOf(yield* messages.claim(10)), ["k1"])
      })
    )

    test(
      "parallelism holds against concurrent claimers",
      Effect.gen(function*() {
        const messages = yield* Messages
        yield* messages.publish(Array.from({ length: 20 }, (_, i) => flowMessage({ key: "c", parallelism: 3 }, `c${i}`)), undefined)
        const claims = yield* Effect.all(Array.from({ length: 8 }, () => messages.claim(5)), { concurrency: "unbounded" })
        assert.strictEqual(claims.flat().length, 3)
      })
    )

    test(
      "rate: at most n started per period, the period sliding; retries count as starts",
      Effect.gen(function*() {
        const messages = yield* Messages
        yield* messages.publish(Array.from({ length: 7 }, (_, i) => flowMessage({ key: "r", rate: 3, periodMs: 1000 }, `r${i}`)), undefined)
        const first = yield* messages.claim(100)
        assert.strictEqual(first.length, 3)
        assert.strictEqual((yield* FlowControls.use((flows) => flows.get("r"))).startedInPeriod, 3)
        for (const message of first) yield* messages.markDelivered([{ id: message.id, claimId: message.claimId, status: 200 }])
        assert.deepStrictEqual(yield* messages.claim(100), [], "a fourth start within the period")
        yield* advance(1001)
        const second = yield* messages.claim(100)
        assert.strictEqual(second.length, 3)
        yield* messages.scheduleRetry(second[0]!, 0, 500, "failed")
        yield* advance(1001)
        // The retry and the last message: both are starts of this period.
        const third = yield* messages.claim(100)
        assert.strictEqual(third.length, 2)
      })
    )

    test(
      "pause holds a key's due messages (in-flight ones finish); resume releases them",
      Effect.gen(function*() {
        const messages = yield* Messages
        const flows = yield* FlowControls
        yield* messages.publish([flowMessage({ key: "p", parallelism: 5 }, "p0"), flowMessage({ key: "p", parallelism: 5 }, "p1")], undefined)
        assert.strictEqual((yield* flows.setPaused("p", true)).paused, true)
        assert.deepStrictEqual(yield* messages.claim(100), [])
        assert.strictEqual((yield* flows.get("p")).waiting, 2)
        assert.strictEqual((yield* flows.setPaused("p", false)).paused, false)
        assert.strictEqual((yield* messages.claim(100)).length, 2)
      })
    )

    test(
      "differing limits: the highest wins while the key has queued messages; once drained, the next publish's",
      Effect.gen(function*() {
        const messages = yield* Messages
        const flows = yield* FlowControls
        const limits = Effect.map(flows.get("d"), (f) => [f.parallelism, f.rate, f.periodMs])
        const [one] = yield* messages.publish([flowMessage({ key: "d", parallelism: 2, rate: 10 })], undefined)
        const [two] = yield* messages.publish([flowMessage({ key: "d", parallelism: 4, rate: 100, periodMs: 60_000 })], undefined)
        assert.deepStrictEqual(yield* limits, [4, 10, 1000])
        const [three] = yield* messages.publish([flowMessage({ key: "d", parallelism: 1 })], undefined)
        assert.deepStrictEqual(yield* limits, [4, undefined, 1000])
        for (const published of [one, two, three]) yield* messages.cancel(published!.messageId)
        yield* messages.publish([flowMessage({ key: "d", rate: 5, periodMs: 2000 })], undefined)
        assert.deepStrictEqual(yield* limits, [undefined, 5, 2000])
      })
    )

    test(
      "unknown keys are not found; list pages by key, with the counts",
      Effect.gen(function*() {
        const messages = yield* Messages
        const flows = yield* FlowControls
        assert.strictEqual((yield* Effect.flip(flows.get("none")))._tag, "FlowControlNotFound")
        assert.strictEqual((yield* Effect.flip(flows.setPaused("none", true)))._tag, "FlowControlNotFound")
        yield* messages.publish([flowMessage({ key: "zeta", rate: 1 }), flowMessage({ key: "alpha", parallelism: 1 })], undefined)
        const keys = (after: string | undefined, limit: number) =>
          Effect.map(flows.list({ after, limit }), (page) => page.map((f) => f.flowControlKey))
        assert.deepStrictEqual(yield* keys(undefined, 10), ["alpha", "zeta"])
        // pages by key in byte order (COLLATE "C" in Postgres), after a key that need not exist
        yield* messages.publish(["B", "a-b", "aB", "_z"].map((key) => flowMessage({ key, parallelism: 1 })), undefined)
        assert.deepStrictEqual(yield* keys(undefined, 10), ["B", "_z", "a-b", "aB", "alpha", "zeta"])
        assert.deepStrictEqual(yield* keys(undefined, 2), ["B", "_z"])
        assert.deepStrictEqual(yield* keys("_z", 2), ["a-b", "aB"])
        assert.deepStrictEqual(yield* keys("al", 10), ["alpha", "zeta"])
        const [page] = yield* flows.list({ after: "aB", limit: 1 })
        assert.deepInclude(page, { flowControlKey: "alpha", waiting: 1, inFlight: 0 })
      })
    )

    test(
      "a DLQ retry (one or in bulk) under a key deleted as idle makes the key again (parallelism 1), and its message is claimed",
      Effect.gen(function*() {
        const messages = yield* Messages
        const flows = yield* FlowControls
        const dlq = yield* Dlq
        const failed = (key: string) =>
          Effect.gen(function*() {
            const message = flowMessage({ key, parallelism: 3 })
            const [published] = yield* messages.publish([{ ...message, delivery: { ...message.delivery, retries: 0 } }], undefined)
            const claimed = (yield* messages.claim(100)).find((m) => m.id === published!.messageId)!
            const dlqId = Crypto.randomUUID()
            yield* messages.exhaust(claimed, { dlqId, status: 500, headers: undefined, body: undefined, error: "The destination answered 500", callbacks: [] })
            return { dlqId, messageId: published!.messageId }
          })
        const one = yield* failed("idle-one")
        const many = yield* failed("idle-many")
        yield* advance(60_000 + 1000)
        assert.strictEqual(yield* flows.pruneIdle(60_000, 100), 2)
        yield* dlq.retry(one.dlqId)
        assert.deepStrictEqual(yield* dlq.retryMany({ ids: [many.dlqId] }, 10), { count: 1, more: false })
        // before, both stayed queued for good: only a claim serving its key takes a message that names one
        for (const key of ["idle-one", "idle-many"]) {
          const view = yield* flows.get(key)
          assert.deepInclude(view, { parallelism: 1, waiting: 1 })
          assert.isUndefined(view.rate)
        }
        const claimed = (yield* messages.claim(100)).map((m) => m.id).sort()
        assert.deepStrictEqual(claimed, [one.messageId, many.messageId].sort())
      })
    )

    test(
      "idle keys are pruned with their starts, never one a queued message names, a paused one or one started this period",
      Effect.gen(function*() {
        const messages = yield* Messages
        const flows = yield* FlowControls
        const idleMs = 60_000
        const keys = Effect.map(flows.list({ after: undefined, limit: 100 }), (page) => page.map((f) => f.flowControlKey))
        // done: delivered (one start, rate 5 per 10 minutes); busy: claimed, still queued; held: delivered, then paused
        yield* messages.publish([
          flowMessage({ key: "done", rate: 5, periodMs: 600_000 }),
          flowMessage({ key: "busy", parallelism: 1 }),
          flowMessage({ key: "held", parallelism: 1 })
        ], undefined)
        const claimed = yield* messages.claim(10)
        assert.strictEqual(claimed.length, 3)
        const finished = claimed.filter((m) => m.flowKey !== "busy").map((m) => ({ id: m.id, claimId: m.claimId, status: 200 }))
        yield* messages.markDelivered(finished)
        yield* flows.setPaused("held", true)
        // just used: nothing pruned
        assert.strictEqual(yield* flows.pruneIdle(idleMs, 100), 0)
        // idle long enough, but done's start is still within its 10-minute period
        yield* advance(idleMs + 1000)
        assert.strictEqual(yield* flows.pruneIdle(idleMs, 100), 0)
        yield* advance(600_000)
        assert.strictEqual(yield* flows.pruneIdle(idleMs, 100), 1)
        assert.deepStrictEqual(yield* keys, ["busy", "held"])
        assert.strictEqual((yield* Effect.flip(flows.get("done")))._tag, "FlowControlNotFound")
        // a publish naming it again brings it back with its own limits and no start counted
        yield* messages.publish([flowMessage({ key: "done", parallelism: 3 })], undefined)
        assert.deepInclude(yield* flows.get("done"), { parallelism: 3, startedInPeriod: 0, waiting: 1 })
        // at most `limit` a call
        yield* messages.publish(["x1", "x2", "x3"].map((key) => flowMessage({ key, parallelism: 1 })), undefined)
        const xs = (yield* messages.claim(10)).filter((m) => m.flowKey?.startsWith("x"))
        yield* messages.markDelivered(xs.map((m) => ({ id: m.id, claimId: m.claimId, status: 200 })))
        yield* advance(idleMs + 1000)
        assert.strictEqual(yield* flows.pruneIdle(idleMs, 2), 2)
        assert.strictEqual(yield* flows.pruneIdle(idleMs, 2), 1)
        // busy is still queued (its claim long expired), held still paused, done still waiting
        assert.deepStrictEqual(yield* keys, ["busy", "done", "held"])
      })
    )

    test(
      "a publish racing the pruning of its idle key: the key is there whenever a queued message names it",
      Effect.gen(function*() {
        const messages = yield* Messages
        const flows = yield* FlowControls
        const raced = Array.from({ length: 20 }, (_, i) => `race-${i}`)
        yield* messages.publish(raced.map((key) => flowMessage({ key, parallelism: 1 })), undefined)
        const claimed = yield* messages.claim(100)
        yield* messages.markDelivered(claimed.map((m) => ({ id: m.id, claimId: m.claimId, status: 200 })))
        yield* advance(120_000)
        // each key published again while a pruning pass runs, in both orders
        yield* Effect.forEach(raced, (key, i) =>
          Effect.all(
            i % 2 === 0
              ? [messages.publish([flowMessage({ key, rate: 7 })], undefined), flows.pruneIdle(60_000, 1)]
              : [flows.pruneIdle(60_000, 1), messages.publish([flowMessage({ key, rate: 7 })], undefined)],
            { concurrency: "unbounded" }
          ), { concurrency: 4, discard: true })
        yield* flows.pruneIdle(60_000, 100)
        for (const key of raced) assert.deepInclude(yield* flows.get(key), { rate: 7, waiting: 1 }, key)
      })
    )
  })
}
