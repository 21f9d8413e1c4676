/**
 * The bulk operations' contract (`Messages.cancelMany`, `Dlq.retryMany`, `Dlq.deleteMany`), written
 * once: memory (test/unit/Stores.test.ts) and Postgres (test/Bulk.contract.test.ts).
 *
 * Covers: by ids (ids that are not ids, or unknown, name nothing), by each filter field, ids and a
 * filter together (the ids that match), the limit and `more` (a caller repeating until `more` is
 * false gets everything, each once), idempotence (a repeat changes nothing more), only queued
 * messages are cancelled, and retried entries' messages are queued again with retries starting over.
 */
import { assert, describe } from "@effect/vitest"
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import { Dlq } from "../../src/store/Dlq.ts"
import { Messages } from "../../src/store/Messages.ts"
import type { NewMessage } from "../../src/store/Model.ts"
import { newMessage, storeTest, type StoresLayer } from "./fixtures.ts"
import { StoreTime } from "./StoreTime.ts"

const advance = (ms: number) => StoreTime.use((time) => time.advance(ms))

/** Publishes `messages` (an hour ahead, so they stay queued and unclaimed); their ids in order. */
const publish = (messages: ReadonlyArray<NewMessage>) =>
  Effect.map(
    Messages.use((store) => store.publish(messages.map((m) => ({ ...m, delivery: { ...m.delivery, delayMs: 3_600_000 } })), undefined)),
    (published) => published.map((p) => p.messageId)
  )

const stateOf = (id: string) => Effect.map(Messages.use((store) => store.get(id)), (message) => message.state)

/** Fails every message of `urls` into the DLQ with `status`; the DLQ ids in order. */
const failAll = (urls: ReadonlyArray<string>, status: number) =>
  Effect.gen(function*() {
    const messages = yield* Messages
    const published = yield* messages.publish(urls.map((url) => newMessage({ url, retries: 0 })), undefined)
    const claimed = yield* messages.claim(100)
    const dlqIds: Array<string> = []
    for (const { messageId } of published) {
      const dlqId = Crypto.randomUUID()
      dlqIds.push(dlqId)
      yield* messages.exhaust(claimed.find((m) => m.id === messageId)!, {
        dlqId,
        status,
        headers: undefined,
        body: undefined,
        error: `The destination answered ${status}`,
        callbacks: []
      })
    }
    return { dlqIds, messageIds: published.map((p) => p.messageId) }
  })

export const bulkContract = (name: string, layer: StoresLayer): void => {
  const test = storeTest(layer)

  describe(`Bulk operations contract (${name})`, () => {
    test(
      "cancel by ids: only the queued messages named; ids that are not ids or unknown name nothing; a repeat cancels nothing",
      Effect.gen(function*() {
        const messages = yield* Messages
        const [a, b, c] = yield* publish([newMessage(), newMessage(), newMessage()])
        const ids = [a!, b!, "not-a-uuid", Crypto.randomUUID()]
        assert.deepStrictEqual(yield* messages.cancelMany({ ids }, 1000), { count: 2, more: false })
        assert.deepStrictEqual(yield* messages.cancelMany({ ids }, 1000), { count: 0, more: false })
        assert.deepStrictEqual([yield* stateOf(a!), yield* stateOf(b!), yield* stateOf(c!)], ["cancelled", "cancelled", "queued"])
      })
    )

    test(
      "cancel by each filter field, and ids with a filter (the ids that match it)",
      Effect.gen(function*() {
        const messages = yield* Messages
        const [byUrl, byTopic, byQueue, bySchedule, byKey, other] = yield* publish([
          newMessage({ url: "https://a.example.com/orders" }),
          newMessage({ topicName: "billing" }),
          { ...newMessage(), queueName: "fifo" },
          { ...newMessage(), scheduleId: "nightly" },
          { ...newMessage(), flowControl: { key: "openai", parallelism: 2, rate: undefined, periodMs: 1000 } },
          newMessage()
        ])
        const cancel = (filter: Parameters<typeof messages.cancelMany>[0]["filter"]) =>
          Effect.map(messages.cancelMany({ filter }, 1000), ({ count }) => count)
        assert.strictEqual(yield* cancel({ url: "https://a.example.com/orders" }), 1)
        assert.strictEqual(yield* stateOf(byUrl!), "cancelled")
        assert.strictEqual(yield* cancel({ topicName: "billing" }), 1)
        assert.strictEqual(yield* stateOf(byTopic!), "cancelled")
        assert.strictEqual(yield* cancel({ queue: "fifo" }), 1)
        assert.strictEqual(yield* stateOf(byQueue!), "cancelled")
        assert.strictEqual(yield* cancel({ scheduleId: "nightly" }), 1)
        assert.strictEqual(yield* stateOf(bySchedule!), "cancelled")
        assert.strictEqual(yield* cancel({ flowControlKey: "openai" }), 1)
        assert.strictEqual(yield* stateOf(byKey!), "cancelled")
        assert.strictEqual(yield* stateOf(other!), "queued")

        // ids and a filter: only the named messages that match.
        const [x, y] = yield* publish([newMessage({ url: "https://x.example.com/" }), newMessage({ url: "https://y.example.com/" })])
        assert.deepStrictEqual(
          yield* messages.cancelMany({ ids: [x!, y!], filter: { url: "https://x.example.com/" } }, 1000),
          { count: 1, more: false }
        )
        assert.deepStrictEqual([yield* stateOf(x!), yield* stateOf(y!)], ["cancelled", "queued"])
      })
    )

    test(
      "cancel by dates of creation (inclusive range); finished messages are not counted",
      Effect.gen(function*() {
        const messages = yield* Messages
        const [old] = yield* publish([newMessage()])
        yield* advance(60_000)
        const [recent] = yield* publish([newMessage()])
        const createdAt = (yield* messages.get(recent!)).createdAt
        // A delivered message matching the filter is not cancelled and not counted.
        yield* messages.publish([newMessage({ url: "https://example.com/done" })], undefined)
        const claimed = yield* messages.claim(10)
        yield* messages.markDelivered(claimed.map((m) => ({ id: m.id, claimId: m.claimId, status: 200 })))
        assert.deepStrictEqual(
          yield* messages.cancelMany({ filter: { fromDate: createdAt - 1000, toDate: createdAt + 1000 } }, 1000),
          { count: 1, more: false }
        )
        assert.deepStrictEqual([yield* stateOf(old!), yield* stateOf(recent!)], ["queued", "cancelled"])
        assert.deepStrictEqual(yield* messages.cancelMany({ filter: { toDate: createdAt - 1000 } }, 1000), { count: 1, more: false })
        assert.strictEqual(yield* stateOf(old!), "cancelled")
      })
    )

    test(
      "at most `limit` per call; `more` until every match is cancelled, each once",
      Effect.gen(function*() {
        const messages = yield* Messages
        const ids = yield* publish(Array.from({ length: 5 }, () => newMessage({ url: "https://example.com/many" })))
        const filter = { url: "https://example.com/many" }
        assert.deepStrictEqual(yield* messages.cancelMany({ filter }, 2), { count: 2, more: true })
        assert.deepStrictEqual(yield* messages.cancelMany({ filter }, 2), { count: 2, more: true })
        assert.deepStrictEqual(yield* messages.cancelMany({ filter }, 2), { count: 1, more: false })
        assert.deepStrictEqual(yield* messages.cancelMany({ filter }, 2), { count: 0, more: false })
        for (const id of ids) assert.strictEqual(yield* stateOf(id), "cancelled")
        // Exactly `limit` matches: no more.
        yield* publish([newMessage({ url: "https://example.com/two" }), newMessage({ url: "https://example.com/two" })])
        assert.deepStrictEqual(yield* messages.cancelMany({ filter: { url: "https://example.com/two" } }, 2), { count: 2, more: false })
      })
    )

    test(
      "the limit takes the earliest published first, whether free, under flow control or in a queue",
      Effect.gen(function*() {
        const messages = yield* Messages
        const url = "https://example.com/mixed"
        const flowControl = { key: "mixed", parallelism: 1, rate: undefined, periodMs: 1000 }
        const ids = yield* publish([
          { ...newMessage({ url }), flowControl },
          newMessage({ url }),
          { ...newMessage({ url }), queueName: "mixed" },
          { ...newMessage({ url }), queueName: "mixed", flowControl },
          newMessage({ url })
        ])
        assert.deepStrictEqual(yield* messages.cancelMany({ filter: { url } }, 4), { count: 4, more: true })
        assert.deepStrictEqual(
          yield* Effect.forEach(ids, stateOf),
          ["cancelled", "cancelled", "cancelled", "cancelled", "queued"]
        )
      })
    )

    test(
      "DLQ retry by filter: the entries go, their messages are queued again with retries starting over; a repeat retries nothing",
      Effect.gen(function*() {
        const dlq = yield* Dlq
        const failed500 = yield* failAll(["https://example.com/a", "https://example.com/b"], 500)
        const failed404 = yield* failAll(["https://example.com/c"], 404)
        assert.deepStrictEqual(yield* dlq.retryMany({ filter: { responseStatus: 500 } }, 1000), { count: 2, more: false })
        assert.deepStrictEqual(yield* dlq.retryMany({ filter: { responseStatus: 500 } }, 1000), { count: 0, more: false })
        for (const id of failed500.messageIds) {
          const message = yield* Messages.use((store) => store.get(id))
          assert.deepStrictEqual([message.state, message.retried, message.dlqId], ["queued", 0, undefined])
        }
        const left = yield* dlq.list({})
        assert.deepStrictEqual(left.messages.map((m) => m.dlqId), failed404.dlqIds)
        // By url and topic: nothing matches.
        assert.deepStrictEqual(yield* dlq.retryMany({ filter: { url: "https://example.com/a" } }, 1000), { count: 0, more: false })
        assert.deepStrictEqual(yield* dlq.retryMany({ filter: { topicName: "none" } }, 1000), { count: 0, more: false })
      })
    )

    test(
      "DLQ delete by ids and by dates, with the limit and `more`; messages stay failed",
      Effect.gen(function*() {
        const dlq = yield* Dlq
        const first = yield* failAll(["https://example.com/1", "https://example.com/2", "https://example.com/3"], 500)
        assert.deepStrictEqual(
          yield* dlq.deleteMany({ ids: [first.dlqIds[0]!, "not-a-uuid", Crypto.randomUUID()] }, 1000),
          { count: 1, more: false }
        )
        assert.strictEqual((yield* Messages.use((store) => store.get(first.messageIds[0]!))).state, "failed")
        assert.deepStrictEqual(yield* dlq.deleteMany({ ids: [first.dlqIds[0]!] }, 1000), { count: 0, more: false })
        yield* advance(60_000)
        const second = yield* failAll(["https://example.com/4"], 500)
        const failedAt = (yield* dlq.get(second.dlqIds[0]!)).failedAt
        assert.deepStrictEqual(yield* dlq.deleteMany({ filter: { toDate: failedAt - 1000 } }, 1), { count: 1, more: true })
        assert.deepStrictEqual(yield* dlq.deleteMany({ filter: { toDate: failedAt - 1000 } }, 1), { count: 1, more: false })
        assert.deepStrictEqual((yield* dlq.list({})).messages.map((m) => m.dlqId), second.dlqIds)
        assert.deepStrictEqual(yield* dlq.deleteMany({ filter: { fromDate: failedAt } }, 1000), { count: 1, more: false })
        assert.deepStrictEqual((yield* dlq.list({})).messages, [])
      })
    )
  })
}
