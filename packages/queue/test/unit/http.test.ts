/**
 * The QueueApi routes and the publish route over the memory stores, through an in-memory web
 * handler (`toWebHandler`: no socket, no database, no worker): the main answers and the errors
 * (bad destination 400, missing or wrong token 401, unknown ids 404, finished message 409).
 * A DLQ entry is made as the worker would, through the `Messages` store the handler shares.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_JSON_BODY_BYTES } from "@svc/schema"
import * as Crypto from "node:crypto"
import { Messages } from "../../src/store/Messages.ts"
import { json, withQueue } from "./webQueue.ts"

describe("QueueApi over the memory stores (no socket, no database)", () => {
  it.live("publish: 201 with the message id, then GET /v2/messages/<id> reads it back", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        const published = yield* call("/v2/publish/https://example.com/orders", {
          method: "POST",
          body: "{\"order\":42}",
          headers: { "content-type": "application/json", "svc-retries": "5", "svc-forward-x-api-key": "abc" }
        })
        assert.strictEqual(published.status, 201, JSON.stringify(published.body))
        const id = published.body.messageId
        const message = yield* call(`/v2/messages/${id}`)
        assert.strictEqual(message.status, 200)
        assert.strictEqual(message.body.state, "queued")
        assert.strictEqual(message.body.url, "https://example.com/orders")
        assert.strictEqual(message.body.maxRetries, 5)
        assert.strictEqual(message.body.header["x-api-key"], "abc")
        assert.strictEqual(Buffer.from(message.body.body, "base64").toString(), "{\"order\":42}")
        // Deduplicated: the first id again.
        const first = yield* call("/v2/publish/https://example.com/once", { method: "POST", body: "x", headers: { "svc-deduplication-id": "d1" } })
        const again = yield* call("/v2/publish/https://example.com/once", { method: "POST", body: "x", headers: { "svc-deduplication-id": "d1" } })
        assert.deepStrictEqual(again.body, { messageId: first.body.messageId, deduplicated: true })
      })
    ))

  it.live("publish refusals: 400 naming the destination or header, 401 without or with a wrong token", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        for (const destination of ["ftp:nothing", "no-such-group", "http://127.0.0.1:9/private"]) {
          const refused = yield* call(`/v2/publish/${destination}`, { method: "POST", body: "x" })
          assert.strictEqual(refused.status, 400, destination)
          assert.strictEqual(refused.body.code, "invalid_request")
          assert.deepInclude(refused.body.issues.map((i: any) => i.parameter), "destination")
        }
        const badHeader = yield* call("/v2/publish/https://example.com/x", { method: "POST", body: "x", headers: { "svc-retries": "many" } })
        assert.strictEqual(badHeader.status, 400)
        assert.deepStrictEqual(badHeader.body.issues.map((i: any) => i.parameter), ["Svc-Retries"])
        assert.strictEqual((yield* call("/v2/publish/https://example.com/x", { method: "POST", body: "x", token: null })).status, 401)
        assert.strictEqual((yield* call("/v2/publish/https://example.com/x", { method: "POST", body: "x", token: "wrong" })).status, 401)
        assert.strictEqual((yield* call("/v2/dlq", { token: null })).status, 401)
        assert.strictEqual((yield* call("/v2/topics", { token: "wrong" })).status, 401)
      })
    ))

  it.live("messages: unknown ids are 404; cancel is 204, then 409 once finished", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        assert.strictEqual((yield* call(`/v2/messages/${Crypto.randomUUID()}`)).status, 404)
        assert.strictEqual((yield* call(`/v2/messages/${Crypto.randomUUID()}`, { method: "DELETE" })).status, 404)
        const { body } = yield* call("/v2/publish/https://example.com/later", { method: "POST", body: "x", headers: { "svc-delay": "1h" } })
        assert.strictEqual((yield* call(`/v2/messages/${body.messageId}`, { method: "DELETE" })).status, 204)
        assert.strictEqual((yield* call(`/v2/messages/${body.messageId}`)).body.state, "cancelled")
        assert.strictEqual((yield* call(`/v2/messages/${body.messageId}`, { method: "DELETE" })).status, 409)
      })
    ))

  it.live("DLQ: list, get, retry (the message queued again), delete; unknown ids 404, a bad limit 400", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        const { body } = yield* call("/v2/publish/https://example.com/fails", { method: "POST", body: "x" })
        // What the worker does on the final failure.
        const messages = yield* Messages
        const [claimed] = yield* messages.claim(10)
        const dlqId = Crypto.randomUUID()
        yield* messages.exhaust(claimed!, {
          dlqId,
          status: 503,
          headers: {},
          body: new TextEncoder().encode("down"),
          error: "The destination answered 503",
          callbacks: []
        })
        const page = yield* call("/v2/dlq?limit=10&url=https://example.com/fails")
        assert.strictEqual(page.status, 200)
        assert.deepStrictEqual(page.body.messages.map((m: any) => [m.dlqId, m.messageId, m.responseStatus]), [[dlqId, body.messageId, 503]])
        assert.strictEqual((yield* call("/v2/dlq?limit=0")).status, 400)
        const entry = yield* call(`/v2/dlq/${dlqId}`)
        assert.strictEqual(entry.status, 200)
        assert.strictEqual(Buffer.from(entry.body.responseBody, "base64").toString(), "down")
        assert.strictEqual((yield* call(`/v2/messages/${body.messageId}`)).body.state, "failed")
        const retried = yield* call(`/v2/dlq/${dlqId}/retry`, { method: "POST" })
        assert.strictEqual(retried.status, 200)
        assert.deepStrictEqual(retried.body, { messageId: body.messageId })
        const queued = (yield* call(`/v2/messages/${body.messageId}`)).body
        assert.strictEqual(queued.state, "queued")
        assert.strictEqual(queued.retried, 0)
        assert.strictEqual((yield* call(`/v2/dlq/${dlqId}`)).status, 404)
        assert.strictEqual((yield* call(`/v2/dlq/${dlqId}/retry`, { method: "POST" })).status, 404)
        assert.strictEqual((yield* call(`/v2/dlq/${dlqId}`, { method: "DELETE" })).status, 404)
        // Fails again, and is deleted this time.
        const [again] = yield* messages.claim(10)
        const second = Crypto.randomUUID()
        yield* messages.exhaust(again!, { dlqId: second, status: 500, headers: undefined, body: undefined, error: "x", callbacks: [] })
        assert.strictEqual((yield* call(`/v2/dlq/${second}`, { method: "DELETE" })).status, 204)
        assert.deepStrictEqual((yield* call("/v2/dlq")).body.messages, [])
      })
    ))

  it.live("URL groups: upsert, list, get, default headers, publish to the group, remove, delete; errors 400 and 404", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        const created = yield* call("/v2/topics/orders/endpoints", json("POST", {
          endpoints: [{ name: "billing", url: "https://billing.example.com/in" }, { url: "https://audit.example.com/in" }]
        }))
        assert.strictEqual(created.status, 200, JSON.stringify(created.body))
        assert.deepStrictEqual(created.body.endpoints, [
          { name: "billing", url: "https://billing.example.com/in" },
          { url: "https://audit.example.com/in" }
        ])
        const inward = yield* call("/v2/topics/orders/endpoints", json("POST", { endpoints: [{ url: "http://10.0.0.1/x" }] }))
        assert.strictEqual(inward.status, 400)
        assert.deepStrictEqual(inward.body.issues.map((i: any) => i.parameter), ["endpoints[0].url"])
        const headers = yield* call("/v2/topics/orders", json("PATCH", { headers: { "Svc-Retries": "6", "X-Team": "payments" } }))
        assert.strictEqual(headers.status, 200)
        assert.strictEqual((yield* call("/v2/topics/orders", json("PATCH", { headers: { "Svc-Retries": "lots" } }))).status, 400)
        assert.strictEqual((yield* call("/v2/topics/nope", json("PATCH", { headers: {} }))).status, 404)
        const published = yield* call("/v2/publish/orders", { method: "POST", body: "order 42" })
        assert.strictEqual(published.status, 201)
        assert.deepStrictEqual(published.body.map((p: any) => [p.url, p.endpointName]), [
          ["https://billing.example.com/in", "billing"],
          ["https://audit.example.com/in", undefined]
        ])
        const message = (yield* call(`/v2/messages/${published.body[0].messageId}`)).body
        assert.strictEqual(message.maxRetries, 6)
        assert.strictEqual(message.header["x-team"], "payments")
        assert.strictEqual(message.topicName, "orders")
        assert.deepStrictEqual((yield* call("/v2/topics")).body.topics.map((t: any) => t.name), ["orders"])
        const removed = yield* call("/v2/topics/orders/endpoints", json("DELETE", { endpoints: [{ name: "billing" }] }))
        assert.strictEqual(removed.status, 200)
        assert.deepStrictEqual(removed.body.endpoints, [{ url: "https://audit.example.com/in" }])
        assert.strictEqual((yield* call("/v2/topics/orders", { method: "DELETE" })).status, 204)
        assert.strictEqual((yield* call("/v2/topics/orders")).status, 404)
        assert.strictEqual((yield* call("/v2/topics/orders", { method: "DELETE" })).status, 404)
      })
    ))

  it.live("URL groups and FIFO queues are listed in pages by name with a cursor (limit 1-100); a bad cursor or limit is a 400 naming it", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        for (const name of ["g-c", "g-a", "g-b"]) {
          yield* call(`/v2/topics/${name}/endpoints`, json("POST", { endpoints: [{ url: `https://${name}.example.com/` }] }))
          yield* call("/v2/queues", json("POST", { queueName: name }))
        }
        for (const [path, field] of [["/v2/topics", "topics"], ["/v2/queues", "queues"]] as const) {
          const first = (yield* call(`${path}?limit=2`)).body
          assert.deepStrictEqual(first[field].map((entry: any) => entry.name), ["g-a", "g-b"], path)
          assert.strictEqual(first.cursor, "g-b", path)
          const rest = (yield* call(`${path}?cursor=${first.cursor}&limit=2`)).body
          assert.deepStrictEqual(rest, { [field]: [rest[field][0]] }, path)
          assert.strictEqual(rest[field][0].name, "g-c", path)
          assert.deepStrictEqual(Object.keys((yield* call(path)).body), [field], path)
          for (const [query, parameter] of [["cursor=..", "cursor"], ["cursor=a%20b", "cursor"], ["limit=0", "limit"], ["limit=101", "limit"], ["limit=x", "limit"]]) {
            const refused = yield* call(`${path}?${query}`)
            assert.strictEqual(refused.status, 400, `${path}?${query}`)
            assert.deepStrictEqual(refused.body.issues.map((issue: any) => issue.parameter), [parameter], `${path}?${query}`)
          }
        }
      })
    ))

  it.live("a ';' in a path: part of a destination URL (the route reads the raw path), refused before a name or id (it cut the path there)", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        const published = yield* call("/v2/publish/https://example.com/a;b=c/d?x=1", { method: "POST", body: "m" })
        assert.strictEqual(published.status, 201, JSON.stringify(published.body))
        assert.strictEqual((yield* call(`/v2/messages/${published.body.messageId}`)).body.url, "https://example.com/a;b=c/d?x=1")
        yield* call("/v2/queues", json("POST", { queueName: "zz" }))
        // DELETE /v2/queues/zz;x deleted queue zz
        for (const path of ["/v2/queues/zz;x", "/v2/queues/zz;%FF%FE..%2F"]) {
          const refused = yield* call(path, { method: "DELETE" })
          assert.strictEqual(refused.status, 400, path)
          assert.match(refused.body.message, /holds a ';'/, path)
        }
        assert.strictEqual((yield* call("/v2/queues/zz")).status, 200)
        assert.strictEqual((yield* call("/v2/queues/zz;x/pause", { method: "POST" })).status, 400)
        assert.strictEqual((yield* call("/v2/queues/zz")).body.paused, false)
      })
    ))

  it.live("a query that is not percent-encoded UTF-8: passed on as sent by publish, enqueue and schedules; a 400 on every other route", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        // the list routes read `?url=%FF` as the text "%FF" and answered 200 (an outside sweep): the
        // server-wide switch that keeps a destination's own query as sent exempted every route
        for (const path of ["/v2/dlq?url=%FF", "/v2/dlq?topicName=%C0%AF", "/v2/events?url=%zz", "/v2/topics?cursor=%", "/v2/queues?%FF=1"]) {
          const refused = yield* call(path)
          assert.strictEqual(refused.status, 400, path)
          assert.strictEqual(refused.body.issues[0].problem, "is not valid percent-encoded UTF-8", path)
        }
        assert.strictEqual((yield* call("/v2/schedules/s1/pause?x=%FF", { method: "POST" })).status, 400)
        // a destination's own query is its own: kept as sent, %FF included
        const published = yield* call("/v2/publish/https://example.com/in?x=%FF", { method: "POST", body: "m" })
        assert.strictEqual(published.status, 201, JSON.stringify(published.body))
        assert.strictEqual((yield* call(`/v2/messages/${published.body.messageId}`)).body.url, "https://example.com/in?x=%FF")
        const enqueued = yield* call("/v2/enqueue/q1/https://example.com/in?x=%FF", { method: "POST", body: "m" })
        assert.strictEqual(enqueued.status, 201, JSON.stringify(enqueued.body))
        const scheduled = yield* call("/v2/schedules/https://example.com/in?x=%FF", { method: "POST", body: "m", headers: { "svc-cron": "* * * * *" } })
        assert.strictEqual(scheduled.status, 201, JSON.stringify(scheduled.body))
      })
    ))

  it.live("URL groups: a name or URL given twice in one upsert is a 400 naming it, and nothing is stored", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        const names = yield* call("/v2/topics/dup/endpoints", json("POST", {
          endpoints: [{ name: "a", url: "https://one.example.com/in" }, { name: "a", url: "https://two.example.com/in" }]
        }))
        assert.strictEqual(names.status, 400, JSON.stringify(names.body))
        assert.deepStrictEqual(names.body.issues.map((i: any) => i.parameter), ["endpoints[1].name"])
        assert.include(names.body.message, "\"a\" is given twice (also endpoints[0].name)")
        // The same URL under two names (spelt alike once normalized) would leave it named by the later one.
        const urls = yield* call("/v2/topics/dup/endpoints", json("POST", {
          endpoints: [{ name: "a", url: "https://one.example.com/in" }, { name: "b", url: "HTTPS://ONE.example.com:443/in" }]
        }))
        assert.strictEqual(urls.status, 400, JSON.stringify(urls.body))
        assert.deepStrictEqual(urls.body.issues.map((i: any) => i.parameter), ["endpoints[1].url"])
        assert.strictEqual((yield* call("/v2/topics/dup")).status, 404)
        // Upserting an existing endpoint again (a later request) is still fine.
        const endpoint = { name: "a", url: "https://one.example.com/in" }
        assert.strictEqual((yield* call("/v2/topics/dup/endpoints", json("POST", { endpoints: [endpoint] }))).status, 200)
        assert.strictEqual((yield* call("/v2/topics/dup/endpoints", json("POST", { endpoints: [endpoint] }))).status, 200)
      })
    ))

  it.live("URL groups: removing [] or an endpoint with neither name nor url is a 400 saying what is expected", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        const endpoints = [{ name: "a", url: "https://one.example.com/in" }]
        assert.strictEqual((yield* call("/v2/topics/rm/endpoints", json("POST", { endpoints }))).status, 200)
        const cases: ReadonlyArray<readonly [unknown, string, string]> = [
          [[], "endpoints", "at least one endpoint"],
          [[{}], "endpoints[0]", "name or url"],
          [[{ name: "a" }, {}], "endpoints[1]", "name or url"]
        ]
        for (const [given, parameter, problem] of cases) {
          const answer = yield* call("/v2/topics/rm/endpoints", json("DELETE", { endpoints: given }))
          assert.strictEqual(answer.status, 400, `${JSON.stringify(given)}: ${JSON.stringify(answer.body)}`)
          assert.deepStrictEqual(answer.body.issues.map((i: any) => i.parameter), [parameter])
          assert.include(answer.body.message, problem)
        }
        assert.deepStrictEqual((yield* call("/v2/topics/rm")).body.endpoints, endpoints)
      })
    ))

  it.live("signing keys: read, rotate (next becomes current); a rotate with a body it does not take rotates nothing", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        const keys = (yield* call("/v2/keys")).body
        assert.match(keys.current, /^sig_/)
        for (const body of ["{bad", "{\"dryRun\":true}", "[]", "garbage"]) {
          const refused = yield* call("/v2/keys/rotate", { method: "POST", body, headers: { "content-type": "application/json" } })
          assert.strictEqual(refused.status, 400, body)
          assert.match(refused.body.message, /takes no body/, body)
        }
        // a body of blanks trimmed to none rotated after being read whole, however large (11 MiB
        // rotated): held to the cap of every other queue request, 413 unread, nothing rotated
        const blanks = yield* call("/v2/keys/rotate", { method: "POST", body: " ".repeat(MAX_JSON_BODY_BYTES + 1) })
        assert.strictEqual(blanks.status, 413, JSON.stringify(blanks.body))
        assert.strictEqual(blanks.body.code, "request_too_large")
        assert.deepStrictEqual((yield* call("/v2/keys")).body, keys)
        const rotated = yield* call("/v2/keys/rotate", { method: "POST" })
        assert.strictEqual(rotated.status, 200)
        assert.strictEqual(rotated.body.current, keys.next)
        assert.deepStrictEqual((yield* call("/v2/keys")).body, rotated.body)
        const again = yield* call("/v2/keys/rotate", { method: "POST", body: "{}", headers: { "content-type": "application/json" } })
        assert.strictEqual(again.status, 200)
        assert.strictEqual(again.body.current, rotated.body.next)
      })
    ))

  it.live("batch: all or nothing, element i answered as its publish, not-before honoured by the memory store", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        const messages = yield* Messages
        const refused = yield* call("/v2/batch", json("POST", [
          { destination: "https://example.com/a", body: "ok" },
          { destination: "http://127.0.0.1/private" },
          { destination: "https://example.com/a", headers: { "Svc-Not-Before": "later" } }
        ]))
        assert.strictEqual(refused.status, 400)
        assert.deepStrictEqual(refused.body.issues.map((issue: { parameter: string }) => issue.parameter), [
          "[1].destination",
          "[2].headers.Svc-Not-Before"
        ])
        assert.strictEqual((yield* messages.claim(100)).length, 0)
        const inAnHour = Math.floor(Date.now() / 1000) + 3600
        const accepted = yield* call("/v2/batch", json("POST", [
          { destination: "https://example.com/a", body: "AAH/", bodyEncoding: "base64" },
          { destination: "https://example.com/b", headers: { "Svc-Not-Before": String(inAnHour), "Svc-Retry-Delay": "1000 * retried" } }
        ]))
        assert.strictEqual(accepted.status, 201, JSON.stringify(accepted.body))
        const [first, later] = accepted.body
        assert.strictEqual((yield* call(`/v2/messages/${first.messageId}`)).body.body, "AAH/")
        const waiting = (yield* call(`/v2/messages/${later.messageId}`)).body
        assert.strictEqual(waiting.notBefore, inAnHour * 1000)
        assert.strictEqual(waiting.retryDelay, "1000 * retried")
        const claimed = yield* messages.claim(100)
        assert.deepStrictEqual(claimed.map((message) => message.id), [first.messageId])
      })))

  it.live("events and bulk routes over the memory stores: the log of a publish and a bulk cancel, refusals naming the field", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        const { body } = yield* call("/v2/publish/https://example.com/later", { method: "POST", body: "x", headers: { "svc-delay": "1h" } })
        const cancelled = yield* call("/v2/messages", json("DELETE", { filter: { url: "https://example.com/later" } }))
        assert.deepStrictEqual([cancelled.status, cancelled.body], [200, { cancelled: 1, more: false }])
        const events = yield* call(`/v2/events?messageId=${body.messageId}`)
        assert.deepStrictEqual(events.body.events.map((e: any) => e.state), ["cancelled", "created"])
        const neither = yield* call("/v2/dlq/retry", json("POST", {}))
        assert.strictEqual(neither.status, 400)
        assert.deepStrictEqual(neither.body.issues.map((i: any) => i.parameter), ["dlqIds"])
        assert.strictEqual((yield* call("/v2/dlq", json("DELETE", { dlqIds: [] }))).body.deleted, 0)
        const badState = yield* call("/v2/events?state=lost")
        assert.strictEqual(badState.status, 400)
        assert.include(badState.body.message, "state")
      })
    ))
})
