/**
 * The `Messages` contract, written once: `Messages.layerMemory` (test/unit/Stores.test.ts) and
 * `Messages.layer` on Postgres (test/Messages.contract.test.ts) must behave alike. The layer gives
 * the stores built with {@link contractSettings} and a `StoreTime`; each test provides it afresh.
 *
 * Covers: publish and read back; claims (two claimers never get the same message, a claimed
 * message is invisible until its lease expires, then claimable again under a new claim, and the
 * expired claim can no longer complete it); delays and `nextDue`; retries (attempt counts,
 * not-before respected); release; deduplication ids within and after the window; cancel;
 * delivered with a callback.
 */
import { assert, describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Messages } from "../../src/store/Messages.ts"
import { newMessage, storeTest, type StoresLayer } from "./fixtures.ts"
import { DEDUP_WINDOW_MS, LEASE_MARGIN_MS, StoreTime } from "./StoreTime.ts"

const advance = (ms: number) => StoreTime.use((time) => time.advance(ms))

export const messagesContract = (name: string, layer: StoresLayer): void => {
  const test = storeTest(layer)

  describe(`Messages contract (${name})`, () => {
    test(
      "a published message reads back queued with its settings; unknown and malformed ids are not found",
      Effect.gen(function*() {
        const messages = yield* Messages
        const [published] = yield* messages.publish([newMessage({ body: "hi", retries: 5 })], undefined)
        assert.deepStrictEqual(Object.keys(published!), ["messageId"])
        const message = yield* messages.get(published!.messageId)
        assert.strictEqual(message.state, "queued")
        assert.strictEqual(message.kind, "message")
        assert.strictEqual(message.url, "https://example.com/hook")
        assert.strictEqual(message.body, Buffer.from("hi").toString("base64"))
        assert.strictEqual(message.maxRetries, 5)
        assert.strictEqual(message.retried, 0)
        assert.deepStrictEqual(message.header, { "content-type": "text/plain" })
        assert.strictEqual(message.callerIP, "203.0.113.7")
        assert.isUndefined(message.dlqId)
        // A UUIDv7 (time-ordered: index locality), and ids published later sort after earlier ones.
        assert.match(published!.messageId, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 2)))
        const [later] = yield* messages.publish([newMessage({ body: "later" })], undefined)
        assert.isTrue(later!.messageId > published!.messageId)
        for (const id of ["00000000-0000-0000-0000-000000000000", "not-a-uuid"]) {
          const error = yield* Effect.flip(messages.get(id))
          assert.strictEqual(error._tag, "MessageNotFound")
        }
      })
    )

    test(
      "a group's publish answers each endpoint's URL and name",
      Effect.gen(function*() {
        const messages = yield* Messages
        const published = yield* messages.publish([
          newMessage({ url: "https://a.example.com/", topicName: "orders", endpointName: "a" }),
          newMessage({ url: "https://b.example.com/", topicName: "orders" })
        ], undefined)
        assert.deepStrictEqual(published.map(({ messageId: _, ...rest }) => rest), [
          { url: "https://a.example.com/", endpointName: "a" },
          { url: "https://b.example.com/" }
        ])
      })
    )

    test(
      "two claimers never get the same message, and together they get every due one",
      Effect.gen(function*() {
        const messages = yield* Messages
        const published = yield* messages.publish(Array.from({ length: 30 }, (_, i) => newMessage({ body: `m${i}` })), undefined)
        const claims = yield* Effect.all(Array.from({ length: 8 }, () => messages.claim(5)), { concurrency: "unbounded" })
        const ids = claims.flat().map((message) => message.id)
        assert.strictEqual(new Set(ids).size, ids.length, "a message was claimed twice")
        const rest = yield* messages.claim(100)
        assert.deepStrictEqual(
          new Set([...ids, ...rest.map((message) => message.id)]),
          new Set(published.map((p) => p.messageId))
        )
        // Every claim of one call shares its claim id; different calls differ.
        const claimIds = claims.filter((batch) => batch.length > 0).map((batch) => new Set(batch.map((m) => m.claimId)))
        for (const set of claimIds) assert.strictEqual(set.size, 1)
        assert.strictEqual(new Set(claimIds.map((set) => [...set][0])).size, claimIds.length)
      })
    )

    test(
      "a claimed message is invisible until its lease (timeout + margin) expires, then claimable again",
      Effect.gen(function*() {
        const messages = yield* Messages
        const [published] = yield* messages.publish([newMessage({ timeoutMs: 1000 })], undefined)
        const [first] = yield* messages.claim(10)
        assert.strictEqual(first!.id, published!.messageId)
        assert.strictEqual(first!.retried, 0)
        assert.strictEqual((yield* messages.get(first!.id)).state, "delivering")
        assert.deepStrictEqual(yield* messages.claim(10), [])
        yield* advance(1000 + LEASE_MARGIN_MS - 500)
        assert.deepStrictEqual(yield* messages.claim(10), [], "claimable before the lease ran out")
        yield* advance(1000)
        assert.strictEqual((yield* messages.get(first!.id)).state, "queued")
        const [second] = yield* messages.claim(10)
        assert.strictEqual(second!.id, first!.id)
        assert.notStrictEqual(second!.claimId, first!.claimId)
        // The expired claim can no longer complete the message; the live one can.
        yield* messages.markDelivered([{ id: first!.id, claimId: first!.claimId, status: 200 }])
        assert.strictEqual((yield* messages.get(first!.id)).state, "delivering")
        yield* messages.markDelivered([{ id: second!.id, claimId: second!.claimId, status: 204 }])
        const delivered = yield* messages.get(first!.id)
        assert.strictEqual(delivered.state, "delivered")
        assert.strictEqual(delivered.lastStatus, 204)
        assert.isNumber(delivered.deliveredAt)
        assert.deepStrictEqual(yield* messages.claim(10), [])
      })
    )

    test(
      "a delayed message is due after its delay; nextDue says when",
      Effect.gen(function*() {
        const messages = yield* Messages
        assert.isTrue(Option.isNone(yield* messages.nextDue))
        yield* messages.publish([newMessage({ delayMs: 5000 })], undefined)
        assert.deepStrictEqual(yield* messages.claim(10), [])
        const due = Option.getOrThrow(yield* messages.nextDue)
        assert.isTrue(due > 4000 && due <= 5000, `nextDue ${due}`)
        yield* advance(5000)
        assert.strictEqual(Option.getOrThrow(yield* messages.nextDue), 0)
        assert.strictEqual((yield* messages.claim(10)).length, 1)
      })
    )

    test(
      "a retry counts the attempt, records the failure and is not due before its delay",
      Effect.gen(function*() {
        const messages = yield* Messages
        yield* messages.publish([newMessage({ retries: 2 })], undefined)
        const [claimed] = yield* messages.claim(10)
        yield* messages.scheduleRetry(claimed!, 3000, 503, "The destination answered 503")
        const waiting = yield* messages.get(claimed!.id)
        assert.strictEqual(waiting.state, "queued")
        assert.strictEqual(waiting.retried, 1)
        assert.strictEqual(waiting.lastStatus, 503)
        assert.strictEqual(waiting.lastError, "The destination answered 503")
        yield* advance(2500)
        assert.deepStrictEqual(yield* messages.claim(10), [], "claimable before its not-before")
        yield* advance(600)
        const [again] = yield* messages.claim(10)
        assert.strictEqual(again!.id, claimed!.id)
        assert.strictEqual(again!.retried, 1)
        // A stale claim's retry changes nothing.
        yield* messages.scheduleRetry(claimed!, 0, 500, "stale")
        assert.strictEqual((yield* messages.get(claimed!.id)).retried, 1)
        yield* messages.scheduleRetry(again!, 0, undefined, "No answer within 1000 ms")
        const twice = yield* messages.get(claimed!.id)
        assert.strictEqual(twice.retried, 2)
        assert.isUndefined(twice.lastStatus)
        assert.strictEqual((yield* messages.claim(10))[0]!.retried, 2)
      })
    )

    test(
      "released claims are due again at once",
      Effect.gen(function*() {
        const messages = yield* Messages
        yield* messages.publish([newMessage(), newMessage()], undefined)
        const claimed = yield* messages.claim(10)
        assert.strictEqual(claimed.length, 2)
        yield* messages.release(claimed)
        assert.strictEqual((yield* messages.claim(10)).length, 2)
      })
    )

    test(
      "a deduplication id repeated within the window enqueues nothing and answers the first id; after it, a new message",
      Effect.gen(function*() {
        const messages = yield* Messages
        const [first] = yield* messages.publish([newMessage({ dedupId: "order-42" })], "order-42")
        assert.isUndefined(first!.deduplicated)
        yield* advance(DEDUP_WINDOW_MS - 60_000)
        const [repeat] = yield* messages.publish([newMessage({ dedupId: "order-42" })], "order-42")
        assert.deepStrictEqual(repeat, { messageId: first!.messageId, deduplicated: true })
        const [other] = yield* messages.publish([newMessage({ dedupId: "order-43" })], "order-43")
        assert.notStrictEqual(other!.messageId, first!.messageId)
        assert.strictEqual((yield* messages.claim(10)).length, 2)
        assert.strictEqual((yield* messages.get(first!.messageId)).deduplicationId, "order-42")
        yield* advance(120_000)
        const [later] = yield* messages.publish([newMessage({ dedupId: "order-42" })], "order-42")
        assert.notStrictEqual(later!.messageId, first!.messageId)
        assert.isUndefined(later!.deduplicated)
      })
    )

    test(
      "cancel: a queued (even claimed) message is cancelled and never claimed; a finished one is not cancellable",
      Effect.gen(function*() {
        const messages = yield* Messages
        const [a, b] = yield* messages.publish([newMessage(), newMessage({ delayMs: 1000 })], undefined)
        yield* messages.cancel(b!.messageId)
        const [claimed] = yield* messages.claim(10)
        assert.strictEqual(claimed!.id, a!.messageId)
        yield* messages.cancel(a!.messageId)
        assert.strictEqual((yield* messages.get(a!.messageId)).state, "cancelled")
        yield* advance(10_000)
        assert.deepStrictEqual(yield* messages.claim(10), [])
        const error = yield* Effect.flip(messages.cancel(a!.messageId))
        assert.strictEqual(error._tag, "MessageNotCancellable")
        assert.strictEqual(error._tag === "MessageNotCancellable" ? error.state : "", "cancelled")
        assert.strictEqual((yield* Effect.flip(messages.cancel("00000000-0000-0000-0000-000000000001")))._tag, "MessageNotFound")
      })
    )

    test(
      "delivered with a callback: the message is delivered and the callback enqueued, due after its delay",
      Effect.gen(function*() {
        const messages = yield* Messages
        yield* messages.publish([newMessage()], undefined)
        const [claimed] = yield* messages.claim(10)
        yield* messages.deliveredWithCallback(
          { id: claimed!.id, claimId: claimed!.claimId, status: 200 },
          { ...newMessage({ kind: "callback", url: "https://example.com/done", delayMs: 1000 }), sourceMessageId: claimed!.id }
        )
        assert.strictEqual((yield* messages.get(claimed!.id)).state, "delivered")
        assert.deepStrictEqual(yield* messages.claim(10), [])
        yield* advance(1000)
        const [callback] = yield* messages.claim(10)
        assert.strictEqual(callback!.kind, "callback")
        assert.strictEqual(callback!.url, "https://example.com/done")
        // A stale claim's completion enqueues nothing.
        yield* messages.deliveredWithCallback(
          { id: claimed!.id, claimId: claimed!.claimId, status: 200 },
          newMessage({ kind: "callback", url: "https://example.com/twice" })
        )
        yield* messages.markDelivered([{ id: callback!.id, claimId: callback!.claimId, status: 200 }])
        assert.deepStrictEqual(yield* messages.claim(10), [])
      })
    )
  })
}
