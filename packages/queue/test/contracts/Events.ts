/**
 * The events log's contract, written once: the memory stores (test/unit/Stores.test.ts) and
 * Postgres (test/Events.contract.test.ts, where the triggers of migrations/queue/0005_events.ts
 * record) must record the same events for the same store calls, and page, filter and prune alike.
 *
 * Covers: the whole life of a message (created, delivering, retry_scheduled twice with the answer
 * or the error, delivered, callback_sent, callback_delivered, and the callback's own events);
 * failed, requeued (a DLQ retry), cancelled; a release and a moved time record nothing; an expired
 * claim claimed again is delivering again; filters, pages and the cursor; pruning by age in
 * batches; `QUEUE_EVENTS=false` records nothing.
 */
import { assert, describe } from "@effect/vitest"
import type { EventsPage, QueueEvent } from "@svc/schema"
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import { Dlq } from "../../src/store/Dlq.ts"
import { Events, type EventsQuery } from "../../src/store/Events.ts"
import { Messages } from "../../src/store/Messages.ts"
import { newMessage, storeTest, type StoresLayer } from "./fixtures.ts"
import { LEASE_MARGIN_MS, StoreTime } from "./StoreTime.ts"

const advance = (ms: number) => StoreTime.use((time) => time.advance(ms))

const list = (query: Partial<EventsQuery> = {}): Effect.Effect<EventsPage, never, Events> =>
  Events.use((events) => events.list({ count: 100, ...query }))

/** The events of a message, oldest first, as (state, the fields that vary). */
/** The events of a message that fails twice, is delivered the third time and has a callback, oldest first. */
export const FAILED_TWICE_THEN_CALLBACK = [
  "created",
  "delivering",
  "retry_scheduled",
  "delivering",
  "retry_scheduled",
  "delivering",
  "delivered",
  "callback_sent",
  "callback_delivered"
]

const lifeOf = (messageId: string) =>
  Effect.map(list({ messageId }), (page) => page.events.slice().reverse())

const states = (events: ReadonlyArray<QueueEvent>) => events.map((event) => event.state)

export const eventsContract = (name: string, layer: StoresLayer, layerEventsOff: StoresLayer): void => {
  const test = storeTest(layer)

  describe(`Events contract (${name})`, () => {
    test(
      "a message that fails twice, then is delivered with a callback: every step, in order, with its details",
      Effect.gen(function*() {
        const messages = yield* Messages
        const [published] = yield* messages.publish([newMessage({ topicName: "orders", endpointName: "billing" })], undefined)
        const id = published!.messageId
        const [first] = yield* messages.claim(10)
        yield* messages.scheduleRetry(first!, 1000, 500, "The destination answered 500")
        yield* advance(1000)
        const [second] = yield* messages.claim(10)
        yield* messages.scheduleRetry(second!, 2000, undefined, "No answer within 1000 ms")
        yield* advance(2000)
        const [third] = yield* messages.claim(10)
        yield* messages.deliveredWithCallback(
          { id, claimId: third!.claimId, status: 200 },
          { ...newMessage({ kind: "callback", url: "https://example.com/done" }), sourceMessageId: id }
        )
        const [callback] = yield* messages.claim(10)
        yield* messages.markDelivered([{ id: callback!.id, claimId: callback!.claimId, status: 204 }])

        const life = yield* lifeOf(id)
        assert.deepStrictEqual(states(life), FAILED_TWICE_THEN_CALLBACK)
        for (const event of life) {
          assert.strictEqual(event.messageId, id)
          assert.strictEqual(event.url, "https://example.com/hook")
          assert.strictEqual(event.topicName, "orders")
          assert.strictEqual(event.endpointName, "billing")
        }
        const [created, , retry1, , retry2, , delivered, sent, callbackDelivered] = life
        assert.strictEqual(created!.retried, 0)
        assert.isNumber(created!.nextDeliveryTime)
        assert.deepStrictEqual(
          [retry1!.responseStatus, retry1!.error, retry1!.retried],
          [500, "The destination answered 500", 1]
        )
        assert.strictEqual(retry1!.nextDeliveryTime! - retry1!.time, 1000)
        assert.deepStrictEqual([retry2!.responseStatus, retry2!.error, retry2!.retried], [undefined, "No answer within 1000 ms", 2])
        assert.deepStrictEqual([delivered!.responseStatus, delivered!.error, delivered!.retried], [200, undefined, 2])
        assert.strictEqual(sent!.callbackMessageId, callback!.id)
        assert.strictEqual(callbackDelivered!.callbackMessageId, callback!.id)
        // Times never go backwards along the life.
        for (let i = 1; i < life.length; i++) assert.isAtLeast(life[i]!.time, life[i - 1]!.time)

        // The callback is a message too, with its own events.
        const callbackLife = yield* lifeOf(callback!.id)
        assert.deepStrictEqual(states(callbackLife), ["created", "delivering", "delivered"])
        assert.strictEqual(callbackLife[0]!.url, "https://example.com/done")
        assert.strictEqual(callbackLife[2]!.responseStatus, 204)
      })
    )

    test(
      "failed (into the DLQ) with its failure callback sent, requeued by a DLQ retry, cancelled; a release and a moved time record nothing",
      Effect.gen(function*() {
        const messages = yield* Messages
        const dlq = yield* Dlq
        const [failing, released] = yield* messages.publish([newMessage({ retries: 0 }), newMessage({ url: "https://example.com/b" })], undefined)
        const claimed = yield* messages.claim(10)
        const claimOf = (id: string) => claimed.find((message) => message.id === id)!
        const dlqId = Crypto.randomUUID()
        yield* messages.exhaust(claimOf(failing!.messageId), {
          dlqId,
          status: 404,
          headers: undefined,
          body: undefined,
          error: "The destination answered 404",
          callbacks: [{
            ...newMessage({ kind: "failure_callback", url: "https://example.com/failed", delayMs: 3_600_000 }),
            sourceMessageId: failing!.messageId
          }]
        })
        yield* messages.release([claimOf(released!.messageId)])
        yield* advance(5000)
        yield* dlq.retry(dlqId)
        yield* messages.cancel(failing!.messageId)

        const life = yield* lifeOf(failing!.messageId)
        assert.deepStrictEqual(states(life), ["created", "delivering", "failed", "callback_sent", "requeued", "cancelled"])
        assert.deepStrictEqual([life[2]!.responseStatus, life[2]!.error, life[2]!.retried], [404, "The destination answered 404", 0])
        // The failure callback is the message callback_sent names.
        const [failureCallback] = (yield* list({ url: "https://example.com/failed" })).events
        assert.strictEqual(life[3]!.callbackMessageId, failureCallback!.messageId)
        assert.isNumber(life[4]!.nextDeliveryTime)
        assert.deepStrictEqual(states(yield* lifeOf(released!.messageId)), ["created", "delivering"])
      })
    )

    test(
      "cancelled while its attempt is in flight: that attempt's 2xx is recorded (delivered, its callback sent); a failed one is not; not claimed again",
      Effect.gen(function*() {
        const messages = yield* Messages
        const [plain, withCallback, failing, waiting] = yield* messages.publish([
          newMessage({ url: "https://example.com/a" }),
          newMessage({ url: "https://example.com/b" }),
          newMessage({ url: "https://example.com/c" }),
          newMessage({ url: "https://example.com/d", delayMs: 60_000 })
        ], undefined)
        const claimed = yield* messages.claim(10)
        const claimOf = (id: string) => claimed.find((message) => message.id === id)!
        assert.strictEqual(claimed.length, 3)
        yield* messages.cancel(plain!.messageId)
        assert.deepStrictEqual(
          yield* messages.cancelMany({ ids: [withCallback!.messageId, failing!.messageId, waiting!.messageId] }, 1000),
          { count: 3, more: false }
        )
        // the attempts already sent answer
        yield* messages.markDelivered([{ id: plain!.messageId, claimId: claimOf(plain!.messageId).claimId, status: 200 }])
        yield* messages.deliveredWithCallback(
          { id: withCallback!.messageId, claimId: claimOf(withCallback!.messageId).claimId, status: 202 },
          { ...newMessage({ kind: "callback", url: "https://example.com/done" }), sourceMessageId: withCallback!.messageId }
        )
        yield* messages.scheduleRetry(claimOf(failing!.messageId), 1000, 500, "The destination answered 500")
        // an answer under a claim the message never had changes nothing
        yield* messages.markDelivered([{ id: waiting!.messageId, claimId: Crypto.randomUUID(), status: 200 }])

        assert.deepStrictEqual(states(yield* lifeOf(plain!.messageId)), ["created", "delivering", "cancelled", "delivered"])
        const callbackLife = yield* lifeOf(withCallback!.messageId)
        assert.deepStrictEqual(states(callbackLife), ["created", "delivering", "cancelled", "delivered", "callback_sent"])
        assert.strictEqual(callbackLife[3]!.responseStatus, 202)
        assert.deepStrictEqual(states(yield* lifeOf(failing!.messageId)), ["created", "delivering", "cancelled"])
        assert.deepStrictEqual(states(yield* lifeOf(waiting!.messageId)), ["created", "cancelled"])
        const stateOf = (id: string) => Effect.map(messages.get(id), (message) => message.state)
        assert.deepStrictEqual(
          [yield* stateOf(plain!.messageId), yield* stateOf(withCallback!.messageId), yield* stateOf(failing!.messageId), yield* stateOf(waiting!.messageId)],
          ["delivered", "delivered", "cancelled", "cancelled"]
        )
        // a cancelled message is never claimed again, its lease run out or not (the callback is)
        yield* advance(120_000)
        assert.deepStrictEqual((yield* messages.claim(10)).map((message) => message.url), ["https://example.com/done"])
      })
    )

    test(
      "a claim that expired and is claimed again records delivering again",
      Effect.gen(function*() {
        const messages = yield* Messages
        const [published] = yield* messages.publish([newMessage({ timeoutMs: 1000 })], undefined)
        yield* messages.claim(10)
        yield* advance(1000 + LEASE_MARGIN_MS)
        assert.strictEqual((yield* messages.claim(10)).length, 1)
        assert.deepStrictEqual(states(yield* lifeOf(published!.messageId)), ["created", "delivering", "delivering"])
      })
    )

    test(
      "filters (state, url, topicName, messageId, dates) and pages: newest first, the cursor continues without gaps or repeats",
      Effect.gen(function*() {
        const messages = yield* Messages
        yield* messages.publish([newMessage({ url: "https://a.example.com/x" })], undefined)
        yield* advance(10_000)
        const since = (yield* list({ count: 1 })).events[0]!.time + 5_000
        yield* messages.publish([
          newMessage({ url: "https://b.example.com/y", topicName: "orders" }),
          newMessage({ url: "https://b.example.com/z" })
        ], undefined)
        yield* messages.claim(10)

        const all = (yield* list()).events
        assert.strictEqual(all.length, 6)
        assert.deepStrictEqual(states(all.slice(0, 3)), ["delivering", "delivering", "delivering"])
        assert.deepStrictEqual(states(all.slice(3)), ["created", "created", "created"])
        assert.strictEqual((yield* list({ state: "created" })).events.length, 3)
        assert.deepStrictEqual(
          (yield* list({ url: "https://b.example.com/y" })).events.map((e) => e.state),
          ["delivering", "created"]
        )
        assert.strictEqual((yield* list({ topicName: "orders" })).events.length, 2)
        const first = all[all.length - 1]!
        assert.strictEqual(first.url, "https://a.example.com/x")
        assert.strictEqual((yield* list({ messageId: first.messageId })).events.length, 2)
        assert.strictEqual((yield* list({ fromDate: since })).events.length, 5)
        assert.strictEqual((yield* list({ toDate: since })).events.length, 1)
        assert.strictEqual((yield* list({ fromDate: since, state: "created" })).events.length, 2)

        // Pages of 4 then 2; the last page has no cursor.
        const page1 = yield* list({ count: 4 })
        assert.strictEqual(page1.events.length, 4)
        assert.isString(page1.cursor)
        const page2 = yield* list({ count: 4, cursor: BigInt(page1.cursor!) })
        assert.strictEqual(page2.events.length, 2)
        assert.isUndefined(page2.cursor)
        assert.deepStrictEqual([...page1.events, ...page2.events], all)
        // Exactly a page's worth: no cursor either.
        assert.isUndefined((yield* list({ count: 6 })).cursor)
      })
    )

    test(
      "pruning deletes the events older than the retention, at most a batch per call, and keeps the rest",
      Effect.gen(function*() {
        const messages = yield* Messages
        const events = yield* Events
        yield* messages.publish([newMessage(), newMessage(), newMessage()], undefined)
        yield* advance(60_000)
        yield* messages.publish([newMessage({ url: "https://example.com/recent" })], undefined)
        yield* advance(1_000)
        assert.strictEqual(yield* events.prune(30_000, 2), 2)
        assert.strictEqual(yield* events.prune(30_000, 2), 1)
        assert.strictEqual(yield* events.prune(30_000, 2), 0)
        const left = (yield* list()).events
        assert.deepStrictEqual(left.map((e) => e.url), ["https://example.com/recent"])
      })
    )
  })

  describe(`Events contract, QUEUE_EVENTS=false (${name})`, () => {
    storeTest(layerEventsOff)(
      "nothing is recorded",
      Effect.gen(function*() {
        const messages = yield* Messages
        yield* messages.publish([newMessage(), newMessage()], undefined)
        const claimed = yield* messages.claim(10)
        yield* messages.markDelivered(claimed.map((m) => ({ id: m.id, claimId: m.claimId, status: 200 })))
        assert.deepStrictEqual((yield* list()).events, [])
      })
    )
  })
}
