/**
 * The publish options of issue 18 on a running queue (real Postgres, real HTTP on 127.0.0.1):
 * `Svc-Not-Before` (future, past, the later of it and `Svc-Delay`), content-based deduplication
 * (its window, what it covers), and `Svc-Retry-Delay` (delivered at the computed delays by a
 * destination failing twice; a bad expression refused) — each as a header and as a query parameter.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { call, Destination, publish, queueLayer, waitForMessage } from "./support.ts"

const countMessages = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ n: number }>`SELECT count(*)::int4 AS n FROM queue.messages WHERE kind = 'message'`
  return row!.n
})

const nowSeconds = () => Math.floor(Date.now() / 1000)

layer(queueLayer(), { timeout: 120_000, excludeTestServices: true })("publish options", (it) => {
  it.effect("Svc-Not-Before: a future instant is when it is due; the later of it and Svc-Delay wins", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const soon = nowSeconds() + 2
      const viaHeader = yield* publish(`${dest.baseUrl}/nb`, { headers: { "Svc-Not-Before": String(soon) } })
      const viaQuery = yield* publish(`${dest.baseUrl}/nb-query`, { query: `svc-not-before=${nowSeconds() + 3600}` })
      assert.strictEqual(viaHeader.status, 201, JSON.stringify(viaHeader.body))
      assert.strictEqual(viaQuery.status, 201, JSON.stringify(viaQuery.body))
      assert.strictEqual((yield* call(`/v2/messages/${viaHeader.body.messageId}`)).body.notBefore, soon * 1000)
      const far = (yield* call(`/v2/messages/${viaQuery.body.messageId}`)).body
      assert.strictEqual(far.state, "queued")
      // Svc-Delay later than Svc-Not-Before: the delay wins; earlier: the instant wins.
      const delayWins = yield* publish(`${dest.baseUrl}/nb-late`, { headers: { "Svc-Not-Before": String(nowSeconds() + 60), "Svc-Delay": "2h" } })
      const instantWins = yield* publish(`${dest.baseUrl}/nb-late`, { headers: { "Svc-Not-Before": String(nowSeconds() + 7200), "Svc-Delay": "1m" } })
      const a = (yield* call(`/v2/messages/${delayWins.body.messageId}`)).body
      const b = (yield* call(`/v2/messages/${instantWins.body.messageId}`)).body
      assert.approximately(a.notBefore - a.createdAt, 7_200_000, 1500)
      assert.approximately(b.notBefore - b.createdAt, 7_200_000, 1500)
      const [received] = yield* dest.waitFor("/nb", 1)
      assert.isAtLeast(received!.at, soon * 1000)
      assert.strictEqual(dest.requests("/nb-query").length, 0)
    }))

  it.effect("Svc-Not-Before in the past means now; a bad or too distant one is refused", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const past = yield* publish(`${dest.baseUrl}/past`, { headers: { "Svc-Not-Before": "1000" } })
      assert.strictEqual(past.status, 201)
      const message = yield* waitForMessage(past.body.messageId, (m) => m.state === "delivered")
      assert.isAtMost(message.notBefore, message.createdAt)
      const before = yield* countMessages
      const bad = yield* publish(`${dest.baseUrl}/past`, { headers: { "Svc-Not-Before": "tomorrow" } })
      assert.strictEqual(bad.status, 400)
      assert.match(bad.body.message, /header "Svc-Not-Before": expected a unix time in seconds/)
      const tooFar = yield* publish(`${dest.baseUrl}/past`, { query: `svc-not-before=${nowSeconds() + 8 * 86400}` })
      assert.strictEqual(tooFar.status, 400)
      assert.match(tooFar.body.message, /query parameter "svc-not-before": is too far in the future: more than 7d.*QUEUE_MAX_DELAY/)
      // Digits beyond any unix time are a time too far ahead, not "not a unix time".
      for (const digits of ["99999999999999999999", "9".repeat(400)]) {
        const huge = yield* publish(`${dest.baseUrl}/past`, { headers: { "Svc-Not-Before": digits } })
        assert.strictEqual(huge.status, 400)
        assert.match(huge.body.message, /header "Svc-Not-Before": is too far in the future/)
      }
      // An integer setting beyond 2^53 is out of range, named as sent.
      const retries = yield* publish(`${dest.baseUrl}/past`, { headers: { "Svc-Retries": "99999999999999999999" } })
      assert.strictEqual(retries.status, 400)
      assert.include(retries.body.message, "header \"Svc-Retries\": is out of range: must be at most 100, got \"99999999999999999999\"")
      assert.strictEqual(yield* countMessages, before)
    }))

  it.effect("Svc-Content-Based-Deduplication: same destination, body and headers within the window are one message", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const sql = yield* SqlClient.SqlClient
      const url = `${dest.baseUrl}/content`
      const headers = { "Svc-Content-Based-Deduplication": "true", "content-type": "text/plain", "Svc-Delay": "1h" }
      const first = yield* publish(url, { body: "same", headers })
      const repeat = yield* publish(url, { body: "same", headers: { ...headers, "Svc-Retries": "9" } })
      const viaQuery = yield* publish(url, { body: "same", headers: { "content-type": "text/plain" }, query: "svc-content-based-deduplication=true" })
      assert.strictEqual(first.status, 201)
      assert.isUndefined(first.body.deduplicated)
      // Retries do not change what the destination receives: still the same content.
      assert.deepStrictEqual(repeat.body, { messageId: first.body.messageId, deduplicated: true })
      assert.deepStrictEqual(viaQuery.body, { messageId: first.body.messageId, deduplicated: true })
      // A different body, forwarded header, method or destination is different content.
      const others = [
        yield* publish(url, { body: "other", headers }),
        yield* publish(url, { body: "same", headers: { ...headers, "Svc-Forward-X-Tenant": "a" } }),
        yield* publish(url, { body: "same", headers: { ...headers, "Svc-Method": "PUT" } }),
        yield* publish(`${url}?page=2`, { body: "same", headers })
      ]
      for (const other of others) {
        assert.strictEqual(other.status, 201)
        assert.isUndefined(other.body.deduplicated)
        assert.notStrictEqual(other.body.messageId, first.body.messageId)
      }
      // An explicit id wins over the content.
      const explicit = yield* publish(url, { body: "same", headers: { ...headers, "Svc-Deduplication-Id": "explicit-1" } })
      assert.isUndefined(explicit.body.deduplicated)
      // Once the window has passed (the remembered ids' expiry moved back), the same content is new.
      yield* sql`UPDATE queue.dedup SET expires_at = now() - interval '1 second' WHERE id LIKE 'content-%'`
      const afterWindow = yield* publish(url, { body: "same", headers })
      assert.isUndefined(afterWindow.body.deduplicated)
      assert.notStrictEqual(afterWindow.body.messageId, first.body.messageId)
      const bad = yield* publish(url, { headers: { "Svc-Content-Based-Deduplication": "yes" } })
      assert.strictEqual(bad.status, 400)
      assert.match(bad.body.message, /Svc-Content-Based-Deduplication.*true or false/)
    }))

  it.effect("Svc-Retry-Delay: a destination failing twice is retried at the computed delays", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      dest.on("/flaky", (_, n) => (n <= 2 ? { status: 500 } : {}))
      dest.on("/flaky-query", (_, n) => (n <= 2 ? { status: 503 } : {}))
      // retried = 0 before the first retry: 1000 ms, then 2000 ms (the test default backoff is 100, 200 ms).
      const published = yield* publish(`${dest.baseUrl}/flaky`, { headers: { "Svc-Retry-Delay": "pow(2, retried) * 1000", "Svc-Retries": "3" } })
      const viaQuery = yield* publish(`${dest.baseUrl}/flaky-query`, { query: `svc-retry-delay=${encodeURIComponent("1000 + retried * 500")}` })
      assert.strictEqual(published.status, 201, JSON.stringify(published.body))
      assert.strictEqual(viaQuery.status, 201, JSON.stringify(viaQuery.body))
      assert.strictEqual((yield* call(`/v2/messages/${published.body.messageId}`)).body.retryDelay, "pow(2, retried) * 1000")
      const attempts = yield* dest.waitFor("/flaky", 3, "30 seconds")
      const gaps = [attempts[1]!.at - attempts[0]!.at, attempts[2]!.at - attempts[1]!.at]
      assert.isAtLeast(gaps[0]!, 950, `gaps ${gaps}`)
      assert.isAtLeast(gaps[1]!, 1950, `gaps ${gaps}`)
      assert.deepStrictEqual(attempts.map((a) => a.headers["svc-retried"]), ["0", "1", "2"])
      const message = yield* waitForMessage(published.body.messageId, (m) => m.state === "delivered")
      assert.strictEqual(message.retried, 2)
      const queryAttempts = yield* dest.waitFor("/flaky-query", 3, "30 seconds")
      assert.isAtLeast(queryAttempts[1]!.at - queryAttempts[0]!.at, 950)
      assert.isAtLeast(queryAttempts[2]!.at - queryAttempts[1]!.at, 1450)
    }))

  it.effect("a bad Svc-Retry-Delay is refused with 400 naming it, nothing enqueued", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const before = yield* countMessages
      for (const expression of ["eval(1)", "pow(2)", "retried +", "Function('x')", "require('fs')", "constructor(1)", "toString(1)", "__proto__(1)"]) {
        const refused = yield* publish(`${dest.baseUrl}/never`, { headers: { "Svc-Retry-Delay": expression } })
        assert.strictEqual(refused.status, 400, expression)
        assert.match(refused.body.message, /header "Svc-Retry-Delay": .* is not a retry-delay expression/, expression)
      }
      // In the grammar but not a number for some retry: refused rather than read as the 1-day cap.
      for (const [expression, retried] of [["0/0", 0], ["pow(-1, 0.5)", 0], ["1000 * (retried - 2) / (retried - 2)", 2]] as const) {
        const refused = yield* publish(`${dest.baseUrl}/never`, { headers: { "Svc-Retry-Delay": expression } })
        assert.strictEqual(refused.status, 400, expression)
        assert.include(refused.body.message, `is not a number when retried is ${retried}`, expression)
      }
      const viaQuery = yield* publish(`${dest.baseUrl}/never`, { query: "svc-retry-delay=1%3B2" })
      assert.strictEqual(viaQuery.status, 400)
      assert.match(viaQuery.body.message, /query parameter "svc-retry-delay"/)
      assert.strictEqual(yield* countMessages, before)
    }))

  it.effect("schedules refuse Svc-Not-Before and content-based deduplication", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      for (const [name, value] of [["Svc-Not-Before", String(nowSeconds() + 60)], ["Svc-Content-Based-Deduplication", "true"]] as const) {
        const refused = yield* call(`/v2/schedules/${dest.baseUrl}/s`, { method: "POST", headers: { "Svc-Cron": "* * * * *", [name]: value } })
        assert.strictEqual(refused.status, 400, name)
        assert.match(refused.body.message, new RegExp(`${name}.*not accepted on a schedule`))
      }
    }))
})
