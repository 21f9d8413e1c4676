/**
 * The events log over HTTP, on the real stack (a queue on a fresh database, its worker, a real
 * destination): the whole sequence of a message that fails twice and is then delivered with a
 * callback; filters, pages and the cursor; refusals naming the parameter; pruning; the RPC; and
 * `QUEUE_EVENTS=false`.
 */
import { assert, describe, layer } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import { pruneExpired } from "../src/Pruning.ts"
import { QueueRpcClient } from "../src/RpcClient.ts"
import { FAILED_TWICE_THEN_CALLBACK } from "./contracts/Events.ts"
import { call, Destination, poll, publish, queueLayer, QueueUrl, TOKEN, waitForMessage } from "./support.ts"

/** GET /v2/events with `query`; the answer's status and body. */
const events = (query: string) => call(`/v2/events${query === "" ? "" : `?${query}`}`)

/** Polls the events of `messageId` (oldest first) until `until` holds. */
const waitForEvents = (messageId: string, until: (states: ReadonlyArray<string>) => boolean) =>
  poll(
    Effect.map(events(`messageId=${messageId}`), (answer) => (answer.body.events as Array<any>).slice().reverse()),
    (list) => until(list.map((event) => event.state)),
    "20 seconds",
    () => `the events of ${messageId} did not arrive`
  )

describe("events log", () => {
  layer(queueLayer(), { timeout: 120_000, excludeTestServices: true })("QUEUE_EVENTS=true", (it) => {
    it.effect("a message that fails twice, then succeeds with a callback: created, delivering, retry_scheduled ×2, delivered, callback_sent, callback_delivered", () =>
      Effect.gen(function*() {
        const dest = yield* Destination
        dest.on("/flaky", (_, n) => n === 1 ? { status: 500 } : n === 2 ? { status: 503 } : { status: 200 })
        const published = yield* publish(`${dest.baseUrl}/flaky`, { headers: { "Svc-Callback": `${dest.baseUrl}/done` } })
        assert.strictEqual(published.status, 201)
        const id = published.body.messageId as string
        const life = yield* waitForEvents(id, (states) => states.includes("callback_delivered"))
        assert.deepStrictEqual(life.map((event) => event.state), FAILED_TWICE_THEN_CALLBACK)
        for (const event of life) {
          assert.strictEqual(event.messageId, id)
          assert.strictEqual(event.url, `${dest.baseUrl}/flaky`)
          assert.isNumber(event.time)
        }
        assert.deepStrictEqual(
          [life[2].responseStatus, life[2].error, life[2].retried],
          [500, "The destination answered 500", 1]
        )
        assert.isAbove(life[2].nextDeliveryTime, life[2].time)
        assert.deepStrictEqual([life[4].responseStatus, life[4].retried], [503, 2])
        assert.deepStrictEqual([life[6].responseStatus, life[6].retried], [200, 2])
        const message = yield* waitForMessage(id, (m) => m.state === "delivered")
        assert.strictEqual(message.retried, 2)
        // callback_sent and callback_delivered name the callback message, which has its own events.
        const callbackId = life[7].callbackMessageId as string
        assert.strictEqual(life[8].callbackMessageId, callbackId)
        const callbackLife = yield* waitForEvents(callbackId, (states) => states.includes("delivered"))
        assert.deepStrictEqual(callbackLife.map((event) => event.state), ["created", "delivering", "delivered"])
        assert.strictEqual(callbackLife[0].url, `${dest.baseUrl}/done`)
      }))

    it.effect("failed into the DLQ, then requeued by a DLQ retry; cancelled", () =>
      Effect.gen(function*() {
        const dest = yield* Destination
        dest.on("/gone", () => ({ status: 410 }))
        const failing = yield* publish(`${dest.baseUrl}/gone`, { headers: { "Svc-Retries": "0" } })
        const failed = yield* waitForMessage(failing.body.messageId, (m) => m.state === "failed")
        dest.on("/gone", () => ({ status: 200 }))
        assert.strictEqual((yield* call(`/v2/dlq/${failed.dlqId}/retry`, { method: "POST" })).status, 200)
        const life = yield* waitForEvents(failing.body.messageId, (states) => states.at(-1) === "delivered")
        assert.deepStrictEqual(life.map((e) => e.state), ["created", "delivering", "failed", "requeued", "delivering", "delivered"])
        assert.deepStrictEqual([life[2].responseStatus, life[2].error], [410, "The destination answered 410"])

        const later = yield* publish(`${dest.baseUrl}/later`, { headers: { "Svc-Delay": "1h" } })
        assert.strictEqual((yield* call(`/v2/messages/${later.body.messageId}`, { method: "DELETE" })).status, 204)
        const cancelled = yield* events(`messageId=${later.body.messageId}`)
        assert.deepStrictEqual(cancelled.body.events.map((e: any) => e.state), ["cancelled", "created"])
        assert.isAbove(cancelled.body.events[1].nextDeliveryTime, Date.now() + 3_000_000)
      }))

    it.effect("filters (state, url, topicName, dates) and pages with the cursor, newest first", () =>
      Effect.gen(function*() {
        const dest = yield* Destination
        const url = `${dest.baseUrl}/filtered`
        const group = "events-group"
        assert.strictEqual(
          (yield* call(`/v2/topics/${group}/endpoints`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ endpoints: [{ name: "one", url: `${dest.baseUrl}/grouped` }] })
          })).status,
          200
        )
        const before = Date.now() - 1
        const ids: Array<string> = []
        for (let i = 0; i < 3; i++) ids.push((yield* publish(url, { headers: { "Svc-Delay": "1h" } })).body.messageId)
        const grouped = (yield* publish(group, { headers: { "Svc-Delay": "1h" } })).body[0]
        const after = Date.now() + 1

        const byUrl = (yield* events(`url=${encodeURIComponent(url)}`)).body
        assert.deepStrictEqual(byUrl.events.map((e: any) => e.messageId), ids.slice().reverse())
        const byGroup = (yield* events(`topicName=${group}`)).body.events
        assert.deepStrictEqual(byGroup.map((e: any) => [e.messageId, e.state, e.topicName, e.endpointName]), [
          [grouped.messageId, "created", group, "one"]
        ])
        const inRange = (yield* events(`fromDate=${before}&toDate=${after}&state=created`)).body.events
        assert.includeMembers(inRange.map((e: any) => e.messageId), [...ids, grouped.messageId])
        for (const event of inRange) assert.isTrue(event.time >= before && event.time <= after && event.state === "created")
        assert.deepStrictEqual((yield* events(`toDate=${before}&url=${encodeURIComponent(url)}`)).body.events, [])

        // Pages of two: the cursor continues, no repeats, and the last page has none.
        const page1 = (yield* events(`url=${encodeURIComponent(url)}&count=2`)).body
        assert.strictEqual(page1.events.length, 2)
        assert.isString(page1.cursor)
        const page2 = (yield* events(`url=${encodeURIComponent(url)}&count=2&cursor=${page1.cursor}`)).body
        assert.deepStrictEqual([...page1.events, ...page2.events], byUrl.events)
        assert.isUndefined(page2.cursor)
      }))

    it.effect("bad filters: 400 invalid_request naming the parameter; no token: 401", () =>
      Effect.gen(function*() {
        for (
          const [query, parameter] of [
            ["count=0", "count"],
            ["count=1001", "count"],
            ["count=ten", "count"],
            ["state=exploded", "state"],
            ["fromDate=yesterday", "fromDate"],
            ["toDate=-5", "toDate"],
            ["fromDate=2000&toDate=1000", "fromDate"],
            ["cursor=abc", "cursor"],
            ["messageId=not-a-uuid", "messageId"]
          ] as const
        ) {
          const answer = yield* events(query)
          assert.strictEqual(answer.status, 400, query)
          assert.strictEqual(answer.body.code, "invalid_request", query)
          assert.include(answer.body.message, parameter, query)
        }
        assert.strictEqual((yield* events("count=1000")).status, 200)
        assert.strictEqual((yield* call("/v2/events", { token: null })).status, 401)
        // An integer beyond 2^53 is too large, not "not an integer" (one issue, the range).
        for (const [query, parameter, range] of [
          ["count=99999999999999999999", "count", "from 1 to 1000"],
          ["fromDate=99999999999999999999", "fromDate", "from 0 to 8640000000000000"]
        ] as const) {
          const answer = yield* events(query)
          assert.strictEqual(answer.status, 400, query)
          assert.deepStrictEqual(answer.body.issues, [{ in: "query", parameter, problem: `is out of range: must be an integer ${range}` }], query)
        }
        const dlq = yield* call("/v2/dlq?limit=99999999999999999999")
        assert.deepStrictEqual(dlq.body.issues, [{ in: "query", parameter: "limit", problem: "is out of range: must be an integer from 1 to 100" }])
        const parallelism = yield* call("/v2/queues", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: "{\"queueName\":\"big\",\"parallelism\":99999999999999999999}"
        })
        assert.deepStrictEqual(parallelism.body.issues, [{ in: "body", parameter: "parallelism", problem: "is out of range: must be an integer from 1 to 100" }])
      }))

    it.effect("pruning removes events older than QUEUE_EVENTS_RETENTION (7 days) and keeps the rest", () =>
      Effect.gen(function*() {
        const dest = yield* Destination
        const old = yield* publish(`${dest.baseUrl}/old`, { headers: { "Svc-Delay": "1h" } })
        const recent = yield* publish(`${dest.baseUrl}/recent`, { headers: { "Svc-Delay": "1h" } })
        const sql = yield* PgClient.PgClient
        yield* sql`UPDATE queue.events SET time = time - interval '8 days' WHERE message_id = ${old.body.messageId}::uuid`
        assert.isAtLeast(yield* pruneExpired, 1)
        assert.deepStrictEqual((yield* events(`messageId=${old.body.messageId}`)).body.events, [])
        assert.strictEqual((yield* events(`messageId=${recent.body.messageId}`)).body.events.length, 1)
        assert.strictEqual(yield* pruneExpired, 0)
      }))

    it.effect("the RPC lists the same events (ListEvents)", () =>
      Effect.gen(function*() {
        const dest = yield* Destination
        const published = yield* publish(`${dest.baseUrl}/rpc`, { headers: { "Svc-Delay": "1h" } })
        const base = yield* QueueUrl
        const page = yield* QueueRpcClient.use((queue) => queue.ListEvents({ messageId: published.body.messageId })).pipe(
          Effect.provide(QueueRpcClient.layer({ baseUrl: base, token: TOKEN }))
        )
        assert.deepStrictEqual(page.events.map((e) => e.state), ["created"])
        const refused = yield* Effect.flip(
          QueueRpcClient.use((queue) => queue.ListEvents({ messageId: "nope" })).pipe(
            Effect.provide(QueueRpcClient.layer({ baseUrl: base, token: TOKEN }))
          )
        )
        assert.strictEqual(refused._tag, "InvalidRequest")
      }))
  })

  layer(queueLayer({ events: false }), { timeout: 120_000, excludeTestServices: true })("QUEUE_EVENTS=false", (it) => {
    it.effect("deliveries happen and nothing is recorded", () =>
      Effect.gen(function*() {
        const dest = yield* Destination
        const published = yield* publish(`${dest.baseUrl}/quiet`)
        yield* waitForMessage(published.body.messageId, (m) => m.state === "delivered")
        assert.deepStrictEqual((yield* events("")).body, { events: [] })
      }))
  })
})
