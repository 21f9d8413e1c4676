/**
 * The `Messages.publishBatch` contract (issue 18), written once for `Messages.layerMemory`
 * (test/unit/Stores.test.ts) and Postgres (test/PublishBatch.contract.test.ts): the answers of a
 * batch in order (one per message, a group's per endpoint), deduplication ids within the batch and
 * against earlier publishes, the window, and a message's `Svc-Retry-Delay` kept for its claims.
 */
import { assert, describe } from "@effect/vitest"
import { Effect } from "effect"
import { Messages } from "../../src/store/Messages.ts"
import { newMessage, storeTest, type StoresLayer } from "./fixtures.ts"
import { DEDUP_WINDOW_MS, StoreTime } from "./StoreTime.ts"

export const publishBatchContract = (name: string, layer: StoresLayer): void => {
  const test = storeTest(layer)

  describe(`Messages.publishBatch contract (${name})`, () => {
    test(
      "answers each publish in order; a deduplication id counts within the batch",
      Effect.gen(function*() {
        const messages = yield* Messages
        const answers = yield* messages.publishBatch([
          { messages: [newMessage({ body: "plain" })], dedupId: undefined },
          {
            messages: [
              newMessage({ url: "https://a.example.com/", topicName: "orders", endpointName: "a" }),
              newMessage({ url: "https://b.example.com/", topicName: "orders" })
            ],
            dedupId: undefined
          },
          { messages: [newMessage({ body: "first", dedupId: "d1" })], dedupId: "d1" },
          { messages: [newMessage({ body: "second", dedupId: "d1" })], dedupId: "d1" }
        ])
        assert.deepStrictEqual(answers.map((answer) => answer.length), [1, 2, 1, 1])
        assert.deepStrictEqual(answers[1]!.map(({ messageId: _, ...rest }) => rest), [
          { url: "https://a.example.com/", endpointName: "a" },
          { url: "https://b.example.com/" }
        ])
        assert.isUndefined(answers[2]![0]!.deduplicated)
        assert.deepStrictEqual(answers[3], [{ messageId: answers[2]![0]!.messageId, deduplicated: true }])
        const stored = yield* messages.get(answers[2]![0]!.messageId)
        assert.strictEqual(stored.body, Buffer.from("first").toString("base64"))
        assert.strictEqual((yield* messages.claim(100)).length, 4)
      })
    )

    test(
      "a deduplication id of an earlier publish holds for its window, then the id is fresh",
      Effect.gen(function*() {
        const messages = yield* Messages
        const [earlier] = yield* messages.publish([newMessage({ dedupId: "d2" })], "d2")
        const [again] = yield* messages.publishBatch([
          { messages: [newMessage({ dedupId: "d2" })], dedupId: "d2" },
          { messages: [newMessage()], dedupId: undefined }
        ])
        assert.deepStrictEqual(again, [{ messageId: earlier!.messageId, deduplicated: true }])
        yield* StoreTime.use((time) => time.advance(DEDUP_WINDOW_MS + 1000))
        const [fresh] = yield* messages.publishBatch([{ messages: [newMessage({ dedupId: "d2" })], dedupId: "d2" }])
        assert.isUndefined(fresh![0]!.deduplicated)
        assert.notStrictEqual(fresh![0]!.messageId, earlier!.messageId)
      })
    )

    test(
      "a message's retry-delay expression is stored, shown and handed to its claims",
      Effect.gen(function*() {
        const messages = yield* Messages
        const base = newMessage()
        const [answer] = yield* messages.publishBatch([{
          messages: [{ ...base, delivery: { ...base.delivery, retryDelay: "pow(2, retried) * 1000" } }],
          dedupId: undefined
        }])
        assert.strictEqual((yield* messages.get(answer![0]!.messageId)).retryDelay, "pow(2, retried) * 1000")
        const [claimed] = yield* messages.claim(1)
        assert.strictEqual(claimed!.retryDelay, "pow(2, retried) * 1000")
        yield* messages.scheduleRetry(claimed!, 0, 500, "failed")
        yield* messages.publish([newMessage({ body: "no expression" })], undefined)
        const claims = yield* messages.claim(10)
        assert.deepStrictEqual(claims.map((claim) => claim.retryDelay).sort(), ["pow(2, retried) * 1000", null].sort())
      })
    )
  })
}
