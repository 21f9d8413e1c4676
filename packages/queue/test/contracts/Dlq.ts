/**
 * The `Dlq` contract, written once: `Dlq.layerMemory` (test/unit/Stores.test.ts) and `Dlq.layer` on
 * Postgres (test/Dlq.contract.test.ts). Entries come from `Messages.exhaust` (the move on final
 * failure), so the layer gives both stores on shared tables, as `Stores.layer(Memory)` does.
 *
 * Covers: the move (message failed, its DLQ entry with the last answer, the callbacks enqueued in
 * the same step, a stale claim moving nothing), list filters and pages, retry (the entry goes, the
 * message is due again with its retries starting over), delete.
 */
import { assert, describe } from "@effect/vitest"
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import { Dlq } from "../../src/store/Dlq.ts"
import { Messages } from "../../src/store/Messages.ts"
import { newMessage, storeTest, type StoresLayer } from "./fixtures.ts"

/** Publishes and claims one message per URL, then exhausts each with `status` (undefined: no answer). */
const failAll = (urls: ReadonlyArray<string>, status: number | undefined, topicName?: string) =>
  Effect.gen(function*() {
    const messages = yield* Messages
    const published = yield* messages.publish(
      urls.map((url) => newMessage({ url, ...(topicName === undefined ? {} : { topicName }) })),
      undefined
    )
    const claimed = yield* messages.claim(100)
    const dlqIds: Array<string> = []
    // In publish order, so the DLQ order is known.
    for (const { messageId } of published) {
      const message = claimed.find((m) => m.id === messageId)!
      const dlqId = Crypto.randomUUID()
      dlqIds.push(dlqId)
      yield* messages.exhaust(message, {
        dlqId,
        status,
        headers: status === undefined ? undefined : { "content-type": ["text/plain"] },
        body: status === undefined ? undefined : new TextEncoder().encode("nope"),
        error: status === undefined ? "No answer within 1000 ms" : `The destination answered ${status}`,
        callbacks: []
      })
    }
    return dlqIds
  })

export const dlqContract = (name: string, layer: StoresLayer): void => {
  const test = storeTest(layer)

  describe(`Dlq contract (${name})`, () => {
    test(
      "the final failure moves the message: state failed, the entry with the last answer, callbacks enqueued",
      Effect.gen(function*() {
        const messages = yield* Messages
        const dlq = yield* Dlq
        yield* messages.publish([newMessage({ retries: 0 })], undefined)
        const [claimed] = yield* messages.claim(10)
        const dlqId = Crypto.randomUUID()
        const exhausted = {
          dlqId,
          status: 500,
          headers: { "x-reason": ["a", "b"] },
          body: new TextEncoder().encode("broken"),
          error: "The destination answered 500",
          callbacks: [{
            ...newMessage({ kind: "failure_callback", url: "https://example.com/failed", body: `{"dlqId":"${dlqId}"}` }),
            sourceMessageId: claimed!.id
          }]
        }
        yield* messages.exhaust(claimed!, exhausted)
        const message = yield* messages.get(claimed!.id)
        assert.strictEqual(message.state, "failed")
        assert.strictEqual(message.dlqId, dlqId)
        assert.strictEqual(message.lastStatus, 500)
        const entry = yield* dlq.get(dlqId)
        assert.strictEqual(entry.messageId, claimed!.id)
        assert.strictEqual(entry.responseStatus, 500)
        assert.deepStrictEqual(entry.responseHeader, { "x-reason": ["a", "b"] })
        assert.strictEqual(entry.responseBody, Buffer.from("broken").toString("base64"))
        assert.strictEqual(entry.lastError, "The destination answered 500")
        assert.strictEqual(entry.body, Buffer.from("hello").toString("base64"))
        assert.strictEqual(entry.callerIP, "203.0.113.7")
        const [callback] = yield* messages.claim(10)
        assert.strictEqual(callback!.kind, "failure_callback")
        assert.strictEqual(new TextDecoder().decode(callback!.body), `{"dlqId":"${dlqId}"}`)
        // A stale claim moves nothing.
        const again = { ...exhausted, dlqId: Crypto.randomUUID() }
        yield* messages.exhaust(claimed!, again)
        assert.strictEqual((yield* Effect.flip(dlq.get(again.dlqId)))._tag, "DlqMessageNotFound")
      })
    )

    test(
      "a message that never got an answer moves with its error only",
      Effect.gen(function*() {
        const dlq = yield* Dlq
        const [dlqId] = yield* failAll(["https://example.com/slow"], undefined)
        const entry = yield* dlq.get(dlqId!)
        assert.isUndefined(entry.responseStatus)
        assert.isUndefined(entry.responseHeader)
        assert.isUndefined(entry.responseBody)
        assert.strictEqual(entry.lastError, "No answer within 1000 ms")
      })
    )

    test(
      "list: in failure order, filtered by url, status, message id and group, paged by cursor",
      Effect.gen(function*() {
        const dlq = yield* Dlq
        const urls = ["https://a.example.com/1", "https://b.example.com/2", "https://a.example.com/1", "https://c.example.com/3"]
        const ids = yield* failAll(urls, 503)
        const [grouped] = yield* failAll(["https://d.example.com/4"], 404, "orders")
        const all = yield* dlq.list({})
        assert.deepStrictEqual(all.messages.map((m) => m.dlqId), [...ids, grouped])
        assert.isUndefined(all.cursor)
        const first = yield* dlq.list({ limit: 2 })
        assert.deepStrictEqual(first.messages.map((m) => m.dlqId), ids.slice(0, 2))
        const second = yield* dlq.list({ limit: 2, cursor: first.cursor! })
        assert.deepStrictEqual(second.messages.map((m) => m.dlqId), ids.slice(2, 4))
        const third = yield* dlq.list({ limit: 2, cursor: second.cursor! })
        assert.deepStrictEqual(third.messages.map((m) => m.dlqId), [grouped])
        assert.isUndefined(third.cursor)
        assert.deepStrictEqual((yield* dlq.list({ url: "https://a.example.com/1" })).messages.map((m) => m.dlqId), [ids[0], ids[2]])
        assert.deepStrictEqual((yield* dlq.list({ responseStatus: 404 })).messages.map((m) => m.dlqId), [grouped])
        assert.deepStrictEqual((yield* dlq.list({ topicName: "orders" })).messages.map((m) => m.topicName), ["orders"])
        const one = all.messages[1]!
        assert.deepStrictEqual((yield* dlq.list({ messageId: one.messageId })).messages.map((m) => m.dlqId), [one.dlqId])
        assert.deepStrictEqual((yield* dlq.list({ messageId: "not-a-uuid" })).messages, [])
        // An unknown cursor starts at the beginning.
        assert.strictEqual((yield* dlq.list({ cursor: "x" })).messages.length, 5)
      })
    )

    test(
      "retry: the entry goes, the message is due now with its retries starting over",
      Effect.gen(function*() {
        const messages = yield* Messages
        const dlq = yield* Dlq
        yield* messages.publish([newMessage({ retries: 1 })], undefined)
        const [claimed] = yield* messages.claim(10)
        yield* messages.scheduleRetry(claimed!, 0, 500, "first")
        const [again] = yield* messages.claim(10)
        const dlqId = Crypto.randomUUID()
        yield* messages.exhaust(again!, { dlqId, status: 500, headers: {}, body: new Uint8Array(), error: "second", callbacks: [] })
        assert.deepStrictEqual(yield* dlq.retry(dlqId), { messageId: claimed!.id })
        assert.strictEqual((yield* Effect.flip(dlq.get(dlqId)))._tag, "DlqMessageNotFound")
        const message = yield* messages.get(claimed!.id)
        assert.strictEqual(message.state, "queued")
        assert.strictEqual(message.retried, 0)
        assert.isUndefined(message.dlqId)
        assert.isUndefined(message.lastError)
        const [retried] = yield* messages.claim(10)
        assert.strictEqual(retried!.id, claimed!.id)
        assert.strictEqual(retried!.retried, 0)
        assert.strictEqual((yield* Effect.flip(dlq.retry(dlqId)))._tag, "DlqMessageNotFound")
        assert.strictEqual((yield* Effect.flip(dlq.retry("nope")))._tag, "DlqMessageNotFound")
      })
    )

    test(
      "delete: the entry goes, the message stays failed; unknown ids are not found",
      Effect.gen(function*() {
        const messages = yield* Messages
        const dlq = yield* Dlq
        const [dlqId] = yield* failAll(["https://example.com/x"], 410)
        const entry = yield* dlq.get(dlqId!)
        yield* dlq.delete(dlqId!)
        assert.strictEqual((yield* Effect.flip(dlq.get(dlqId!)))._tag, "DlqMessageNotFound")
        assert.deepStrictEqual((yield* dlq.list({})).messages, [])
        assert.strictEqual((yield* messages.get(entry.messageId)).state, "failed")
        assert.strictEqual((yield* Effect.flip(dlq.delete(dlqId!)))._tag, "DlqMessageNotFound")
        assert.strictEqual((yield* Effect.flip(dlq.delete("not-a-uuid")))._tag, "DlqMessageNotFound")
        assert.deepStrictEqual(yield* messages.claim(10), [])
      })
    )
  })
}
