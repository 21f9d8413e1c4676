/**
 * The FIFO queues contract, written once: `Queues` + `Messages` in memory
 * (test/unit/flowAndFifoStores.test.ts) and on Postgres (test/fifo.contract.test.ts).
 *
 * Covers: an enqueue creating its queue (parallelism 1); claims taking only a queue's first
 * `parallelism` queued messages in publish order, a message waiting for its retry holding its place;
 * upsert, pause/resume, delete (its queued messages cancelled), the view, unknown queues.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import * as Crypto from "node:crypto"
import { Dlq } from "../../src/store/Dlq.ts"
import { Messages } from "../../src/store/Messages.ts"
import { Queues } from "../../src/store/Queues.ts"
import { newMessage } from "./fixtures.ts"
import { StoreTime } from "./StoreTime.ts"

type Services = Messages | Queues | Dlq | StoreTime

const queued = (queueName: string, body: string) => ({ ...newMessage({ body, timeoutMs: 1000 }), queueName })
const bodyOf = (message: { readonly body: Uint8Array }) => new TextDecoder().decode(message.body)
const advance = (ms: number) => StoreTime.use((time) => time.advance(ms))

export const queuesContract = (name: string, layer: Layer.Layer<Services, unknown>): void => {
  const test = (title: string, body: Effect.Effect<void, unknown, Services>) =>
    it.live(title, () => body.pipe(Effect.provide(layer)))

  describe(`Queues contract (${name})`, () => {
    test(
      "parallelism 1: the head only, in publish order; a retry keeps its place; the next after delivery or the DLQ",
      Effect.gen(function*() {
        const messages = yield* Messages
        for (const body of ["q0", "q1", "q2"]) yield* messages.publish([queued("fifo", body)], undefined)
        const created = yield* Queues.use((queues) => queues.get("fifo"))
        assert.strictEqual(created.parallelism, 1)
        assert.strictEqual(created.waiting, 3)
        const [head, ...none] = yield* messages.claim(100)
        assert.strictEqual(bodyOf(head!), "q0")
        assert.deepStrictEqual(none, [])
        assert.deepStrictEqual(yield* messages.claim(100), [])
        // q0 fails: it waits for its retry, and q1 waits behind it.
        yield* messages.scheduleRetry(head!, 2000, 500, "failed")
        assert.deepStrictEqual(yield* messages.claim(100), [])
        yield* advance(2001)
        const [again] = yield* messages.claim(100)
        assert.strictEqual(bodyOf(again!), "q0")
        yield* messages.markDelivered([{ id: again!.id, claimId: again!.claimId, status: 200 }])
        const [second] = yield* messages.claim(100)
        assert.strictEqual(bodyOf(second!), "q1")
        // q1's retries are used up: it moves to the DLQ, and q2 is next.
        yield* messages.exhaust(second!, { dlqId: crypto.randomUUID(), status: 500, headers: undefined, body: undefined, error: "x", callbacks: [] })
        const [third] = yield* messages.claim(100)
        assert.strictEqual(bodyOf(third!), "q2")
      })
    )

    test(
      "parallelism n: the first n queued messages; queues are independent of each other and of other messages",
      Effect.gen(function*() {
        const messages = yield* Messages
        const queues = yield* Queues
        const upserted = yield* queues.upsert("wide", 3)
        assert.strictEqual(upserted.parallelism, 3)
        for (let i = 0; i < 5; i++) yield* messages.publish([queued("wide", `w${i}`)], undefined)
        yield* messages.publish([queued("narrow", "n0"), queued("narrow", "n1")], undefined)
        yield* messages.publish([newMessage({ body: "free" })], undefined)
        const claimed = (yield* messages.claim(100)).map(bodyOf).sort()
        assert.deepStrictEqual(claimed, ["free", "n0", "w0", "w1", "w2"])
        // Upsert without a parallelism keeps it.
        assert.strictEqual((yield* queues.upsert("wide", undefined)).parallelism, 3)
      })
    )

    test(
      "a DLQ retry into a queue deleted since makes the queue again (parallelism 1), and its message is claimed",
      Effect.gen(function*() {
        const messages = yield* Messages
        const queues = yield* Queues
        const [published] = yield* messages.publish([{ ...queued("gone", "g0"), delivery: { ...queued("gone", "g0").delivery, retries: 0 } }], undefined)
        const [claimed] = yield* messages.claim(100)
        const dlqId = Crypto.randomUUID()
        yield* messages.exhaust(claimed!, { dlqId, status: 500, headers: undefined, body: undefined, error: "The destination answered 500", callbacks: [] })
        yield* queues.delete("gone")
        assert.strictEqual((yield* messages.get(published!.messageId)).state, "failed")
        yield* Dlq.use((dlq) => dlq.retry(dlqId))
        // before, the message stayed queued for good: only a claim of its queue takes it
        assert.deepInclude(yield* queues.get("gone"), { parallelism: 1, waiting: 1 })
        const [again] = yield* messages.claim(100)
        assert.strictEqual(again?.id, published!.messageId)
      })
    )

    test(
      "pause keeps accepting and holds; resume releases; delete cancels the queued messages",
      Effect.gen(function*() {
        const messages = yield* Messages
        const queues = yield* Queues
        yield* queues.upsert("held", 1)
        assert.strictEqual((yield* queues.setPaused("held", true)).paused, true)
        const [published] = yield* messages.publish([queued("held", "h0")], undefined)
        assert.deepStrictEqual(yield* messages.claim(100), [])
        assert.strictEqual((yield* queues.get("held")).waiting, 1)
        yield* queues.setPaused("held", false)
        const [claimed] = yield* messages.claim(100)
        assert.strictEqual(claimed!.id, published!.messageId)
        assert.strictEqual((yield* queues.get("held")).inFlight, 1)
        yield* messages.publish([queued("held", "h1")], undefined)
        yield* queues.delete("held")
        assert.strictEqual((yield* messages.get(claimed!.id)).state, "cancelled")
        assert.strictEqual((yield* Effect.flip(queues.get("held")))._tag, "FifoQueueNotFound")
        assert.strictEqual((yield* Effect.flip(queues.delete("held")))._tag, "FifoQueueNotFound")
        assert.strictEqual((yield* Effect.flip(queues.setPaused("held", true)))._tag, "FifoQueueNotFound")
        yield* queues.upsert("b-queue", 2)
        yield* queues.upsert("a-queue", 1)
        yield* queues.upsert("B-queue", 1)
        const names = (after: string | undefined, limit: number) =>
          Effect.map(queues.list({ after, limit }), (page) => page.map((q) => q.name))
        // pages by name in byte order, after a name that need not exist
        assert.deepStrictEqual(yield* names(undefined, 100), ["B-queue", "a-queue", "b-queue"])
        assert.deepStrictEqual(yield* names(undefined, 1), ["B-queue"])
        assert.deepStrictEqual(yield* names("B-queue", 1), ["a-queue"])
        assert.deepStrictEqual(yield* names("a", 5), ["a-queue", "b-queue"])
      })
    )
  })
}
