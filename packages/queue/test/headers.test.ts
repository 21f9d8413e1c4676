/**
 * Header rules (issue 16, items 14 and 15): forwarded header names and values are checked at
 * publish by what the delivery client can send (400 naming the header, nothing stored), for request
 * headers, query parameters and a URL group's defaults; a message that cannot be sent anyway (stored
 * before the rule, or written to the database directly) fails its attempts and ends in the DLQ with
 * the reason; PATCH of a group's defaults runs the publish rules; a group holds at most
 * MAX_GROUP_ENDPOINTS endpoints, checked concurrently.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { OutboundGuard } from "@svc/platform"
import { Context, Duration, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import fc from "fast-check"
import * as Http from "node:http"
import { Resolver } from "../src/Destinations.ts"
import { CHECK_CONCURRENCY, MAX_GROUP_ENDPOINTS } from "../src/Operations.ts"
import { checkUrl, headerProblem, headerSyntaxProblem, parsePublish } from "../src/Publish.ts"
import type { QueueSettings } from "../src/QueueConfig.ts"
import type { DeliveryOutcome } from "../src/Delivery.ts"
import { failedOnDefect, requestProblem } from "../src/Worker.ts"
import { QueueRpcClient } from "../src/RpcClient.ts"
import { call, Destination, publish, queueLayer, QueueUrl, TOKEN, waitForMessage } from "./support.ts"

const settings: QueueSettings = {
  token: Option.none(),
  allowPrivate: true,
  maxMessageBytes: 1024 * 1024,
  maxBatchMessages: 1000,
  maxBatchBytes: 10 * 1024 * 1024,
  defaultRetries: 3,
  maxRetries: 100,
  defaultTimeout: Duration.seconds(30),
  maxTimeout: Duration.minutes(15),
  maxDelay: Duration.days(7),
  retryBase: Duration.seconds(2),
  retryMaxDelay: Duration.days(1),
  worker: false,
  concurrency: 100,
  batchSize: 100,
  pollInterval: Duration.seconds(1),
  leaseMargin: Duration.seconds(30),
  dedupWindow: Duration.minutes(10),
  events: true,
  eventsRetention: Duration.days(7)
}

const countMessages = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ n: number }>`SELECT count(*)::int4 AS n FROM queue.messages WHERE kind = 'message'`
  return row!.n
})

const nodeAccepts = (name: string, value: string) => {
  try {
    Http.validateHeaderName(name)
    Http.validateHeaderValue(name, value)
    return true
  } catch {
    return false
  }
}
const fetchAccepts = (name: string, value: string) => {
  try {
    new Headers([[name, value]])
    return true
  } catch {
    return false
  }
}

/**
 * A POST as node's http sends it: each element of a header's array on a line of its own (fetch joins
 * them into one) and the request target as given (an absolute URL too).
 */
const rawPost = (base: string, target: string, headers: Record<string, Array<string>> = {}) =>
  Effect.callback<{ status: number; body: any }>((resume) => {
    const { hostname, port } = new URL(base)
    const options = { hostname, port, method: "POST", path: target, headers: { authorization: `Bearer ${TOKEN}`, ...headers } }
    const request = Http.request(options, (response) => {
      let text = ""
      response.setEncoding("utf8").on("data", (chunk) => text += chunk).on("end", () =>
        resume(Effect.succeed({ status: response.statusCode!, body: JSON.parse(text) })))
    })
    request.on("error", (error) => resume(Effect.die(error)))
    request.end("x")
  })

/** Characters around the edges of what a header may hold, and any string at all. */
const edgy = fc.oneof(
  fc.string({ unit: fc.constantFrom("\t", " ", "\0", "\x01", "\x1f", "\x7f", "\x80", "\xff", "\u0100", "\u20ac", "\ud800", "a", ":", "\r", "\n") }),
  fc.string({ unit: "binary" }),
  fc.string()
)

describe("header rules", () => {
  it("a header passes the syntax rule exactly when node's http accepts it, and fetch accepts it too", () => {
    fc.assert(
      fc.property(fc.oneof(edgy, fc.constantFrom("x-a", "X-Trace", "a b", "é", "")), edgy, (name, value) => {
        const ours = headerSyntaxProblem(name, value) === undefined
        assert.strictEqual(ours, nodeAccepts(name, value), `${JSON.stringify(name)}: ${JSON.stringify(value)}`)
        if (ours) assert.isTrue(fetchAccepts(name, value))
      }),
      { numRuns: 2000 }
    )
    // The cases of the issue.
    for (const value of ["a\x01b", "\x7f", "\u20ac", "a\0"]) assert.isDefined(headerSyntaxProblem("x-a", value))
    for (const value of ["", "plain", "tab\there", "caf\xe9"]) assert.isUndefined(headerSyntaxProblem("x-a", value))
  })

  it("the publish rule also refuses framing names and values over 8 KiB", () => {
    for (const name of ["host", "Content-Length", "transfer-encoding", "connection", "expect", "upgrade"]) {
      assert.match(headerProblem(name, "x")!, /set by the queue/)
    }
    assert.match(headerProblem("x-a", "v".repeat(8193))!, /8192/)
    assert.isUndefined(headerProblem("x-a", "v".repeat(8192)))
  })

  it("every header family is checked: forwarded, callback-forwarded, Svc-Header-Forward, defaults, content type", () => {
    const { issues } = parsePublish({
      headers: {
        "svc-header-forward": "true",
        "x-from-rpc": "a\x01",
        "content-type": "text/plain\n",
        "svc-callback": "https://example.com/cb",
        "svc-callback-forward-x-cb": "\u20ac",
        "svc-failure-callback": "https://example.com/fcb",
        "svc-failure-callback-forward-x-f": "\x7f"
      },
      query: [["svc-forward-x-q", "\0"], ["svc-forward-bad name", "v"], ["svc-forward-", "v"]],
      defaults: { "X-Default": "\x02", "Svc-Forward-X-D": ["ok", "\x03"] }
    }, settings)
    assert.deepStrictEqual(issues.map((issue) => `${issue.in}:${issue.parameter}`).sort(), [
      "body:headers.Svc-Forward-X-D",
      "body:headers.X-Default",
      "header:Content-Type",
      "header:Svc-Callback-Forward-X-Cb",
      "header:Svc-Failure-Callback-Forward-X-F",
      "header:X-From-Rpc",
      "query:svc-forward-",
      "query:svc-forward-bad name",
      "query:svc-forward-x-q"
    ])
  })

  it("a header every delivery gets from the queue itself cannot be forwarded: 400 naming it", () => {
    // Svc-Message-Id, Svc-Retried and Svc-Signature were silently replaced by the queue's own; a
    // forwarded Svc-Topic-Name or Svc-Schedule-Id reached the destination as if the queue had set it
    // (a message to no group arrived with "Svc-Topic-Name: forged") — outside hostile-input sweep
    const { issues } = parsePublish({
      headers: {
        "svc-forward-svc-topic-name": "forged",
        "svc-forward-svc-signature": "forged",
        "svc-callback": "https://example.com/cb",
        "svc-callback-forward-svc-message-id": "forged",
        "svc-failure-callback": "https://example.com/fcb",
        "svc-failure-callback-forward-svc-retried": "9"
      },
      query: [["svc-forward-Svc-Schedule-Id", "forged"]],
      defaults: { "Svc-Callback-Forward-Svc-Signature": "forged" }
    }, settings)
    assert.deepStrictEqual(issues.map((issue) => `${issue.in}:${issue.parameter}: ${issue.problem}`).sort(), [
      "body:headers.Svc-Callback-Forward-Svc-Signature: header svc-signature is set by the queue itself and cannot be forwarded",
      "header:Svc-Callback-Forward-Svc-Message-Id: header svc-message-id is set by the queue itself and cannot be forwarded",
      "header:Svc-Failure-Callback-Forward-Svc-Retried: header svc-retried is set by the queue itself and cannot be forwarded",
      "header:Svc-Forward-Svc-Signature: header svc-signature is set by the queue itself and cannot be forwarded",
      "header:Svc-Forward-Svc-Topic-Name: header svc-topic-name is set by the queue itself and cannot be forwarded",
      "query:svc-forward-Svc-Schedule-Id: header svc-schedule-id is set by the queue itself and cannot be forwarded"
    ])
    // other Svc- headers still travel (a destination that is itself a queue takes its settings so)
    const chained = parsePublish({ headers: { "svc-forward-svc-retries": "2" }, query: [] }, settings)
    assert.deepStrictEqual(chained.issues, [])
    assert.strictEqual(chained.settings.delivery.headers["svc-retries"], "2")
  })

  it("a destination or callback URL is at most 2,048 characters, as a batch element's, the RPC's and a filter's", () => {
    // the publish path and the callback headers took any length the 16 KiB head allowed: such a
    // message could not be selected by filter.url (2,048 at most) and the same publish over the RPC or
    // in a batch was refused — outside hostile-input sweep
    const at = (length: number) => `https://example.com/${"a".repeat(length - "https://example.com/".length)}`
    assert.deepStrictEqual(checkUrl(at(2048)), { url: at(2048) })
    assert.deepStrictEqual(checkUrl(at(2049)), { problem: "is 2049 characters long, more than a URL may be here (2048)" })
    const { issues } = parsePublish({
      headers: { "svc-callback": at(3000), "svc-failure-callback": at(2048) },
      query: []
    }, settings)
    assert.deepStrictEqual(issues, [{
      in: "header",
      parameter: "Svc-Callback",
      problem: "is 3000 characters long, more than a URL may be here (2048)"
    }])
  })

  it.effect("anything thrown while a request is built or sent is a failed attempt with the reason, not a dead fiber", () =>
    Effect.gen(function*() {
      const message = { id: "m1", url: "https://example.com/x" }
      // As node's http.request throws inside the delivery's callback.
      const thrown = yield* failedOnDefect(message)(Effect.callback<DeliveryOutcome>(() => {
        throw new TypeError("Invalid character in header content [\"x-a\"]")
      }))
      assert.deepStrictEqual(thrown, { _tag: "Failed", error: "The request could not be sent: Invalid character in header content [\"x-a\"]" })
      const multiline = yield* failedOnDefect(message)(Effect.sync((): DeliveryOutcome => {
        throw new Error("boom\n    at somewhere (/srv/x.ts:1:1)")
      }))
      assert.deepStrictEqual(multiline, { _tag: "Failed", error: "The request could not be sent: boom" })
      // A typed failure (the signing key not read) is not the message's fault: it stays a failure.
      const failed = yield* Effect.flip(failedOnDefect(message)(Effect.fail("db down")))
      assert.strictEqual(failed, "db down")
    }))

  it("the worker's check names what node would refuse in a stored message", () => {
    const ok = { url: "https://example.com/x", method: "POST", headers: { "x-a": "b" } }
    assert.isUndefined(requestProblem(ok))
    assert.match(requestProblem({ ...ok, headers: { "x-a": "a\x01b" } })!, /x-a.*U\+0001/)
    assert.match(requestProblem({ ...ok, headers: { "x a": "b" } })!, /not a valid header name/)
    assert.match(requestProblem({ ...ok, url: "not a url" })!, /not a URL/)
    assert.match(requestProblem({ ...ok, url: "ftp://example.com/" })!, /scheme/)
    assert.match(requestProblem({ ...ok, method: "GE T" })!, /method/)
  })
})

layer(queueLayer(), { timeout: 120_000, excludeTestServices: true })("publish and delivery", (it) => {
  it.effect("control characters or non-Latin-1 in a forwarded header: 400 naming it, nothing stored", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const before = yield* countMessages
      const cases: ReadonlyArray<readonly [Parameters<typeof publish>[1], string, string]> = [
        [{ query: "svc-forward-x-a=%01" }, "query", "svc-forward-x-a"],
        [{ query: "svc-forward-x-a=%7F" }, "query", "svc-forward-x-a"],
        [{ query: "svc-forward-x-a=%E2%82%AC" }, "query", "svc-forward-x-a"],
        [{ query: "svc-forward-x-a=a%00b" }, "query", "svc-forward-x-a"],
        [{ query: "svc-forward-x-a=a%0D%0AInjected:%201" }, "query", "svc-forward-x-a"],
        [{ query: "svc-forward-x%01a=v" }, "query", "svc-forward-x\x01a"],
        [{ query: `svc-callback=${encodeURIComponent(`${dest.baseUrl}/cb`)}&svc-callback-forward-x-c=%01` }, "query", "svc-callback-forward-x-c"],
        [{ headers: { "Svc-Forward-Host": "evil.example" } }, "header", "Svc-Forward-Host"],
        [{ headers: { "Svc-Forward-X-Big": "v".repeat(9000) } }, "header", "Svc-Forward-X-Big"],
        [{ query: "svc-deduplication-id=a%00b" }, "query", "svc-deduplication-id"]
      ]
      for (const [options, location, parameter] of cases) {
        const response = yield* publish(`${dest.baseUrl}/never`, options)
        assert.strictEqual(response.status, 400, `${parameter}: ${JSON.stringify(response.body)}`)
        assert.strictEqual(response.body.code, "invalid_request")
        assert.deepInclude(response.body.issues.map((i: any) => ({ in: i.in, parameter: i.parameter })), { in: location, parameter })
      }
      assert.strictEqual(yield* countMessages, before)
      // What node and fetch can send stays accepted: a tab, Latin-1 (é decoded from UTF-8), an empty value.
      const fine = yield* publish(`${dest.baseUrl}/fine`, { query: "svc-forward-x-a=caf%C3%A9&svc-forward-x-t=a%09b&svc-forward-x-e=" })
      assert.strictEqual(fine.status, 201, JSON.stringify(fine.body))
      const [received] = yield* dest.waitFor("/fine", 1)
      assert.strictEqual(received!.headers["x-a"], "caf\xe9")
      assert.strictEqual(received!.headers["x-t"], "a\tb")
      assert.strictEqual(received!.headers["x-e"], "")
    }))

  it.effect("a Svc- setting sent as two header lines (which node joins with \", \") is a 400 naming it on publish, enqueue and schedule; a forwarded header's lines stay one list", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const before = yield* countMessages
      const post = (path: string, headers: Record<string, Array<string>>) => Effect.flatMap(QueueUrl, (base) => rawPost(base, path, headers))
      const cases: ReadonlyArray<readonly [Record<string, Array<string>>, string]> = [
        [{ "Svc-Callback": [`${dest.baseUrl}/a`, `${dest.baseUrl}/b`] }, "Svc-Callback"],
        [{ "Svc-Failure-Callback": [`${dest.baseUrl}/a`, `${dest.baseUrl}/b`] }, "Svc-Failure-Callback"],
        [{ "Svc-Deduplication-Id": ["x1", "y1"] }, "Svc-Deduplication-Id"],
        [{ "svc-retries": ["1", "1"] }, "svc-retries"]
      ]
      for (const route of [`/v2/publish/${dest.baseUrl}/never`, `/v2/enqueue/fifo/${dest.baseUrl}/never`]) {
        for (const [headers, parameter] of cases) {
          const answer = yield* post(route, headers)
          assert.strictEqual(answer.status, 400, `${route} ${parameter}: ${JSON.stringify(answer.body)}`)
          assert.deepStrictEqual(answer.body.issues, [{ in: "header", parameter, problem: "is given more than once: send one" }])
        }
      }
      const schedule = yield* post(`/v2/schedules/${dest.baseUrl}/never`, { "Svc-Cron": ["* * * * *", "0 * * * *"] })
      assert.strictEqual(schedule.status, 400, JSON.stringify(schedule.body))
      assert.strictEqual(schedule.body.issues[0].parameter, "Svc-Cron")
      assert.strictEqual(yield* countMessages, before)
      // A header for the destination may come as several lines: they arrive as one list.
      const listed = yield* post(`/v2/publish/${dest.baseUrl}/listed`, { "Svc-Forward-X-List": ["a", "b"] })
      assert.strictEqual(listed.status, 201, JSON.stringify(listed.body))
      const [received] = yield* dest.waitFor("/listed", 1)
      assert.strictEqual(received!.headers["x-list"], "a, b")
    }))

  it.effect("an unknown Svc- setting is a 400 naming it (and the setting it is near) on publish, enqueue, batch and the RPC; Svc-Cron on a publish points to schedules; the queue's own delivery headers are dropped", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const before = yield* countMessages
      const refusals: ReadonlyArray<readonly [Record<string, string>, string, string, RegExp]> = [
        // a typo gave the default retries without a word
        [{ "Svc-Retrys": "5" }, "", "header Svc-Retrys", /is not a setting of the queue \(did you mean Svc-Retries\?/],
        [{ "Svc-Callback-Timout": "5s" }, "", "header Svc-Callback-Timout", /did you mean Svc-Callback-Timeout\?/],
        [{ "Svc-Foo": "1" }, "", "header Svc-Foo", /not a setting of the queue \(a header meant for the destination is sent as Svc-Forward-<Name>\)/],
        // a schedule's setting on a publish delivered once, at once
        [{ "Svc-Cron": "0 0 1 1 *" }, "", "header Svc-Cron", /a schedule's setting.*POST \/v2\/schedules\/<destination>/],
        [{}, "svc-retrys=5", "query svc-retrys", /did you mean svc-retries\?/]
      ]
      for (const route of [`/v2/publish/${dest.baseUrl}/never`, `/v2/enqueue/unknown-settings/${dest.baseUrl}/never`]) {
        for (const [headers, query, named, problem] of refusals) {
          const answer = yield* call(`${route}${query === "" ? "" : `?${query}`}`, { method: "POST", body: "x", headers })
          assert.strictEqual(answer.status, 400, `${route} ${named}: ${JSON.stringify(answer.body)}`)
          assert.deepStrictEqual(answer.body.issues.map((i: any) => `${i.in} ${i.parameter}`), [named])
          assert.match(answer.body.issues[0].problem, problem)
        }
      }
      const batch = yield* call("/v2/batch", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify([{ destination: `${dest.baseUrl}/never`, body: "a" }, { destination: `${dest.baseUrl}/never`, headers: { "Svc-Delya": "1d" } }])
      })
      assert.strictEqual(batch.status, 400, JSON.stringify(batch.body))
      assert.match(batch.body.message, /\[1\]\.headers\.Svc-Delya.*did you mean Svc-Delay\?/)
      const baseUrl = yield* QueueUrl
      const client = Context.get(yield* Layer.build(QueueRpcClient.layer({ baseUrl, token: TOKEN })), QueueRpcClient)
      const rpc = yield* Effect.flip(client.Publish({ destination: `${dest.baseUrl}/never`, headers: { "Svc-Cron": "* * * * *" } }))
      assert.strictEqual(rpc._tag, "InvalidRequest")
      assert.include(rpc.message, "a schedule's setting")
      assert.strictEqual(yield* countMessages, before)
      // A delivery re-published (a destination that is itself a queue) carries the queue's own
      // headers: never settings, dropped; the new message gets its own.
      const relayed = yield* publish(`${dest.baseUrl}/relayed`, {
        headers: { "Svc-Message-Id": "msg_other", "Svc-Retried": "3", "Svc-Signature": "x.y.z", "Svc-Topic-Name": "t", "Svc-Schedule-Id": "s" }
      })
      assert.strictEqual(relayed.status, 201, JSON.stringify(relayed.body))
      const [received] = yield* dest.waitFor("/relayed", 1)
      assert.strictEqual(received!.headers["svc-message-id"], relayed.body.messageId)
      assert.strictEqual(received!.headers["svc-retried"], "0")
      assert.isUndefined(received!.headers["svc-topic-name"])
      assert.isUndefined(received!.headers["svc-schedule-id"])
      // A schedule takes Svc-Cron and Svc-Schedule-Id, and refuses what a publish refuses.
      const schedule = yield* call(`/v2/schedules/${dest.baseUrl}/scheduled`, {
        method: "POST",
        headers: { "Svc-Cron": "0 0 1 1 *", "Svc-Schedule-Id": "unknown-settings", "Svc-Retries": "2" }
      })
      assert.strictEqual(schedule.status, 201, JSON.stringify(schedule.body))
      const typo = yield* call(`/v2/schedules/${dest.baseUrl}/scheduled?svc-cron=0+0+1+1+*`, { method: "POST", headers: { "Svc-Retrys": "2" } })
      assert.strictEqual(typo.status, 400, JSON.stringify(typo.body))
      assert.deepStrictEqual(typo.body.issues.map((i: any) => `${i.in} ${i.parameter}`), ["header Svc-Retrys"])
      assert.strictEqual((yield* call("/v2/schedules/unknown-settings", { method: "DELETE" })).status, 204)
    }))

  it.effect("the route's own segments in another case or escaped (/V2/%70ublish/) leave the destination whole", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      for (const path of [`/V2/Publish/${dest.baseUrl}/spelt`, `/v2/%70ublish/${dest.baseUrl}/spelt`, `/v2/ENQUEUE/fifo2/${dest.baseUrl}/spelt`]) {
        const answer = yield* call(path, { method: "POST", body: "x" })
        assert.strictEqual(answer.status, 201, `${path}: ${JSON.stringify(answer.body)}`)
        assert.strictEqual((yield* call(`/v2/messages/${answer.body.messageId}`)).body.url, `${dest.baseUrl}/spelt`, path)
      }
      // An absolute-form target (as a proxy is sent one): the destination is read from its path.
      const base = yield* QueueUrl
      const absolute = yield* rawPost(base, `${new URL(base).origin}/v2/publish/${dest.baseUrl}/absolute`)
      assert.strictEqual(absolute.status, 201, JSON.stringify(absolute.body))
      assert.strictEqual((yield* call(`/v2/messages/${absolute.body.messageId}`)).body.url, `${dest.baseUrl}/absolute`)
    }))

  it.effect("a destination over 2,048 characters, with the query it passes on, is a 400 naming it, nothing stored", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const before = yield* countMessages
      const path = `${dest.baseUrl}/long`
      const long = yield* publish(`${path}/${"a".repeat(2100)}`)
      assert.strictEqual(long.status, 400, JSON.stringify(long.body))
      assert.deepStrictEqual(long.body.issues.map((i: any) => `${i.in}:${i.parameter}`), ["path:destination"])
      assert.match(long.body.issues[0].problem, /more than a URL may be here \(2048\)/)
      // the destination's own query, passed on as sent, counts
      const query = yield* publish(path, { query: `q=${"a".repeat(2100)}` })
      assert.strictEqual(query.status, 400, JSON.stringify(query.body))
      assert.match(query.body.issues[0].problem, /more than a URL may be here \(2048\)/)
      assert.strictEqual(yield* countMessages, before)
    }))

  it.effect("the internal RPC's Publish, whose headers are any strings, is held to the same rules", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const baseUrl = yield* QueueUrl
      const client = Context.get(yield* Layer.build(QueueRpcClient.layer({ baseUrl, token: TOKEN })), QueueRpcClient)
      const before = yield* countMessages
      const error = yield* Effect.flip(client.Publish({
        destination: `${dest.baseUrl}/rpc-never`,
        headers: {
          "Svc-Header-Forward": "true",
          "X-Ctl": "a\x01b",
          "X Space": "v",
          "Content-Type": "text/plain\r\nX-Injected: 1",
          "Svc-Forward-X-Nul": "\0"
        }
      }))
      assert.strictEqual(error._tag, "InvalidRequest")
      if (error._tag === "InvalidRequest") {
        assert.deepStrictEqual(error.issues.map((issue) => `${issue.in}:${issue.parameter}`).sort(), [
          "header:Content-Type",
          "header:Svc-Forward-X-Nul",
          "header:X space",
          "header:X-Ctl"
        ])
      }
      assert.strictEqual(yield* countMessages, before)
    }))

  it.effect("a stored message node cannot send (bad header, URL or method) fails its attempts and ends in the DLQ with the reason", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const sql = yield* SqlClient.SqlClient
      const cases = [
        { set: sql`headers = ${JSON.stringify({ "x-bad": "a\x01b" })}::jsonb`, reason: /could not be sent: the value of header x-bad contains the control character U\+0001/ },
        { set: sql`headers = ${JSON.stringify({ "x-bad": "\u20ac" })}::jsonb`, reason: /could not be sent: .*beyond Latin-1/ },
        { set: sql`headers = ${JSON.stringify({ "bad name": "v" })}::jsonb`, reason: /could not be sent: .*not a valid header name/ },
        { set: sql`method = 'GE T'`, reason: /could not be sent: the method/ },
        { set: sql`url = 'not a url'`, reason: /could not be sent: the destination .* is not a URL/ }
      ]
      const ids: Array<string> = []
      for (const [i] of cases.entries()) {
        // Published valid and far in the future, then spoiled in the database and made due.
        const published = yield* publish(`${dest.baseUrl}/unsendable-${i}`, { headers: { "Svc-Retries": "2", "Svc-Delay": "1h" } })
        assert.strictEqual(published.status, 201, JSON.stringify(published.body))
        ids.push(published.body.messageId)
      }
      for (const [i, { set }] of cases.entries()) {
        yield* sql`UPDATE queue.messages SET ${set}, not_before = now() WHERE id = ${ids[i]!}`
      }
      for (const [i, { reason }] of cases.entries()) {
        const message = yield* waitForMessage(ids[i]!, (m) => m.state === "failed")
        assert.strictEqual(message.retried, 2)
        assert.match(message.lastError, reason)
        assert.isString(message.dlqId)
        const dlq = yield* call(`/v2/dlq/${message.dlqId}`)
        assert.strictEqual(dlq.status, 200)
        assert.match(dlq.body.lastError, reason)
        assert.strictEqual(dest.requests(`/unsendable-${i}`).length, 0)
      }
    }))
})

const json = (method: string, body: unknown) => ({
  method,
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body)
})

/** Public numeric addresses (TEST-NET ranges are refused as internal, so documentation-free ones): never connected to. */
const publicEndpoint = (i: number) => ({ url: `http://93.184.${Math.floor(i / 250)}.${(i % 250) + 1}/in` })

/** A resolver without DNS: 300 ms a name; `bad-*` names do not resolve, the others resolve to a public address. */
const lookups = { inFlight: 0, most: 0 }
const slowResolver: OutboundGuard.Resolve = (hostname) => {
  lookups.inFlight++
  lookups.most = Math.max(lookups.most, lookups.inFlight)
  return new Promise((resolve, reject) =>
    setTimeout(() => {
      lookups.inFlight--
      if (hostname.startsWith("bad-")) reject(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" }))
      else resolve([{ address: "93.184.216.34", family: 4 }])
    }, 300)
  )
}

const groups = queueLayer({ allowPrivate: false, worker: false }).pipe(Layer.provide(Layer.succeed(Resolver, slowResolver)))

layer(groups, { timeout: 120_000, excludeTestServices: true })("URL groups", (it) => {
  it.effect("PATCH default headers runs the publish rules: 400 naming the header, nothing stored", () =>
    Effect.gen(function*() {
      const created = yield* call("/v2/topics/patched/endpoints", json("POST", { endpoints: [publicEndpoint(0)] }))
      assert.strictEqual(created.status, 200, JSON.stringify(created.body))
      const good = { "Svc-Retries": "4", "X-Team": ["a", "b"] }
      assert.strictEqual((yield* call("/v2/topics/patched", json("PATCH", { headers: good }))).status, 200)
      const cases: ReadonlyArray<readonly [Record<string, string | Array<string>>, string, RegExp]> = [
        [{ "Svc-Callback": "http://127.0.0.1:9/cb" }, "headers.Svc-Callback", /loopback|private|local name/],
        [{ "Svc-Failure-Callback": "http://[::1]/cb" }, "headers.Svc-Failure-Callback", /loopback|private|local name/],
        [{ "svc-callback": "http://localhost/cb" }, "headers.svc-callback", /loopback|private|local name/],
        [{ "Svc-Retries": "many" }, "headers.Svc-Retries", /integer/],
        // a publish ignores an unknown Svc- default it finds stored, so it is refused here
        [{ "Svc-Retrys": "4" }, "headers.Svc-Retrys", /did you mean Svc-Retries\?/],
        [{ "svc-cron": "* * * * *" }, "headers.svc-cron", /a schedule's setting/],
        [{ "X-Bad": "a\x01b" }, "headers.X-Bad", /U\+0001/],
        [{ "X-Euro": "\u20ac" }, "headers.X-Euro", /Latin-1/],
        [{ "X-List": ["ok", "\0"] }, "headers.X-List", /U\+0000/],
        [{ "Bad Name": "v" }, "headers.Bad Name", /not a valid header name/],
        [{ "Connection": "close" }, "headers.Connection", /set by the queue/],
        [{ "Svc-Forward-X-A": "\x7f" }, "headers.Svc-Forward-X-A", /U\+007F/],
        // two names differing only in case: one header with two values, the later silently won
        [{ "Svc-Retries": "1", "svc-retries": "2" }, "headers.Svc-Retries", /given twice, as "Svc-Retries" and "svc-retries"/],
        [{ "Svc-Forward-X-A": "1", "svc-forward-x-a": "2" }, "headers.Svc-Forward-X-A", /case-insensitive/],
        // the Kelvin sign lowercases to an ASCII k: the name was checked as "x-k" and stored as sent
        [{ "X-\u212a": "b" }, "headers.X-\u212a", /not a valid header name/]
      ]
      for (const [headers, parameter, problem] of cases) {
        const refused = yield* call("/v2/topics/patched", json("PATCH", { headers }))
        assert.strictEqual(refused.status, 400, `${parameter}: ${JSON.stringify(refused.body)}`)
        assert.strictEqual(refused.body.code, "invalid_request")
        const issue = refused.body.issues.find((i: any) => i.parameter === parameter)
        assert.isDefined(issue, JSON.stringify(refused.body))
        assert.strictEqual(issue.in, "body")
        assert.match(issue.problem, problem)
        assert.include(refused.body.message, parameter)
      }
      // Nothing of the refused ones was stored: the defaults are still the good ones.
      assert.deepStrictEqual((yield* call("/v2/topics/patched")).body.headers, good)
    }))

  it.effect(`a group holds at most ${MAX_GROUP_ENDPOINTS} endpoints: 5,000 refused at once, naming the cap, nothing stored`, () =>
    Effect.gen(function*() {
      const many = Array.from({ length: 5000 }, (_, i) => ({ name: `e${i}`, url: `https://host-${i}.example.invalid/in` }))
      const started = Date.now()
      const refused = yield* call("/v2/topics/huge/endpoints", json("POST", { endpoints: many }))
      assert.isBelow(Date.now() - started, 10_000)
      assert.strictEqual(refused.status, 400, JSON.stringify(refused.body).slice(0, 500))
      assert.strictEqual(refused.body.code, "invalid_request")
      assert.deepStrictEqual(refused.body.issues.map((i: any) => i.parameter), ["endpoints"])
      assert.include(refused.body.message, `at most ${MAX_GROUP_ENDPOINTS}`)
      assert.strictEqual((yield* call("/v2/topics/huge")).status, 404)

      // Exactly the cap is fine; one more, in a later request, is refused and leaves the group as it was.
      const full = Array.from({ length: MAX_GROUP_ENDPOINTS }, (_, i) => publicEndpoint(i))
      const filled = yield* call("/v2/topics/full/endpoints", json("POST", { endpoints: full }))
      assert.strictEqual(filled.status, 200, JSON.stringify(filled.body).slice(0, 500))
      assert.strictEqual(filled.body.endpoints.length, MAX_GROUP_ENDPOINTS)
      const again = yield* call("/v2/topics/full/endpoints", json("POST", { endpoints: full.slice(0, 10) }))
      assert.strictEqual(again.status, 200, "endpoints already in the group do not count twice")
      const over = yield* call("/v2/topics/full/endpoints", json("POST", { endpoints: [publicEndpoint(MAX_GROUP_ENDPOINTS)] }))
      assert.strictEqual(over.status, 400, JSON.stringify(over.body))
      assert.include(over.body.message, `${MAX_GROUP_ENDPOINTS + 1} endpoints`)
      assert.include(over.body.message, `at most ${MAX_GROUP_ENDPOINTS}`)
      assert.strictEqual((yield* call("/v2/topics/full")).body.endpoints.length, MAX_GROUP_ENDPOINTS)
    }))

  it.effect("a URL with a #fragment, which is never sent, is refused as an endpoint and a callback (a group held …/in and …/in#a as two)", () =>
    Effect.gen(function*() {
      const { url } = publicEndpoint(0)
      const refused = yield* call("/v2/topics/fragments/endpoints", json("POST", { endpoints: [{ url }, { url: `${url}#a` }] }))
      assert.strictEqual(refused.status, 400, JSON.stringify(refused.body))
      assert.deepStrictEqual(refused.body.issues.map((i: any) => i.parameter), ["endpoints[1].url"])
      assert.match(refused.body.issues[0].problem, /#fragment is never sent/)
      assert.strictEqual((yield* call("/v2/topics/fragments")).status, 404, "nothing stored")
      for (const fragment of ["#cb", "#"]) {
        const callback = yield* publish(url, { headers: { "Svc-Callback": `${publicEndpoint(1).url}${fragment}` } })
        assert.strictEqual(callback.status, 400, JSON.stringify(callback.body))
        assert.match(callback.body.issues.find((i: any) => i.parameter === "Svc-Callback")?.problem, /#fragment/)
      }
    }))

  it.effect("endpoints are checked concurrently, bounded, and every refused one is named", () =>
    Effect.gen(function*() {
      // Every lookup of the layer's resolver takes 300 ms: 64 names one at a time would take 19 s.
      const endpoints = Array.from({ length: 64 }, (_, i) => ({ url: `https://${i % 16 === 5 ? "bad" : "ok"}-${i}.example.invalid/in` }))
      lookups.most = 0
      const started = Date.now()
      const refused = yield* call("/v2/topics/checked/endpoints", json("POST", { endpoints }))
      const took = Date.now() - started
      assert.strictEqual(refused.status, 400, JSON.stringify(refused.body))
      assert.deepStrictEqual(refused.body.issues.map((i: any) => i.parameter), [5, 21, 37, 53].map((i) => `endpoints[${i}].url`))
      assert.isAbove(lookups.most, 1, "lookups ran one at a time")
      assert.isAtMost(lookups.most, CHECK_CONCURRENCY)
      assert.isBelow(took, 10_000)
      assert.strictEqual((yield* call("/v2/topics/checked")).status, 404)
    }))
})
