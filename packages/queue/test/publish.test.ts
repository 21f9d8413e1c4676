/**
 * Publish: every configuration header and its query-parameter form, validation (400 naming the
 * header, nothing enqueued), auth, dedup, body cap, byte-exact bodies, cancel.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import * as Http from "node:http"
import { refusal } from "../src/Destinations.ts"
import { queueAuth } from "../src/http.ts"
import { parseDuration } from "@svc/schema"
import { settingsConfig } from "../src/QueueConfig.ts"
import { call, Destination, publish, queueLayer, QueueUrl, TOKEN, waitForMessage } from "./support.ts"

/**
 * Published messages (callbacks left out: an earlier test's delivery may enqueue its callback at any
 * moment, which made "nothing enqueued" fail on a busy machine).
 */
const countMessages = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ n: number }>`SELECT count(*)::int4 AS n FROM queue.messages WHERE kind = 'message'`
  return row!.n
})

/** Publish with one configuration given as a header, then as a query parameter. */
const bothForms = (
  destination: string,
  header: string,
  value: string,
  extra: { readonly headers?: Record<string, string> } = {}
) =>
  Effect.gen(function*() {
    const viaHeader = yield* publish(destination, { headers: { ...extra.headers, [header]: value } })
    const viaQuery = yield* publish(destination, {
      headers: extra.headers ?? {},
      query: `${header.toLowerCase()}=${encodeURIComponent(value)}`
    })
    assert.strictEqual(viaHeader.status, 201, JSON.stringify(viaHeader.body))
    assert.strictEqual(viaQuery.status, 201, JSON.stringify(viaQuery.body))
    const a = (yield* call(`/v2/messages/${viaHeader.body.messageId}`)).body
    const b = (yield* call(`/v2/messages/${viaQuery.body.messageId}`)).body
    return [a, b] as const
  })

describe("pure pieces", () => {
  it("parses durations", () => {
    assert.strictEqual(parseDuration("10s"), 10_000)
    assert.strictEqual(parseDuration("500ms"), 500)
    assert.strictEqual(parseDuration("1h30m"), 5_400_000)
    assert.strictEqual(parseDuration("30"), 30_000)
    assert.strictEqual(parseDuration("soon"), undefined)
    assert.strictEqual(parseDuration("-1s"), undefined)
    assert.strictEqual(parseDuration("1d2h3m4s5ms"), 93_784_005)
    assert.strictEqual(parseDuration("2m500ms"), 120_500)
    // each unit once, largest first: a repeat or a reversed order is a typo, not a sum
    for (const typo of ["1d1d", "1s1s", "1m1h", "500ms1s", "", "ms", "1 s"]) assert.strictEqual(parseDuration(typo), undefined, typo)
  })

  it.live("refuses private and loopback destinations unless allowed", () =>
    Effect.gen(function*() {
      for (const url of ["http://127.0.0.1:8080/x", "http://localhost/x", "http://10.1.2.3/", "http://[::1]/", "http://192.168.0.1/", "http://169.254.169.254/latest", "http://[::ffff:127.0.0.1]/"]) {
        assert.isDefined(yield* refusal(url, false), url)
        assert.isUndefined(yield* refusal(url, true), url)
      }
      assert.isUndefined(yield* refusal("http://93.184.216.34/", false))
    }))

  it.effect("QUEUE_TOKEN unset: the routes answer 503, never open", () =>
    Effect.gen(function*() {
      const settings = yield* settingsConfig
      assert.isTrue(Option.isNone(settings.token))
      const error = yield* Effect.flip(queueAuth(settings).check("anything"))
      assert.strictEqual(error._tag, "ServiceUnavailable")
      assert.match(error.message, /QUEUE_TOKEN/)
    }))
})

layer(queueLayer(), { timeout: 120_000, excludeTestServices: true })("publish", (it) => {
  it.effect("delivers the body byte-exact with the method, forwarded headers and content type", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const bytes = new Uint8Array(256).map((_, i) => i)
      const published = yield* publish(`${dest.baseUrl}/bytes?keep=1`, {
        body: bytes,
        headers: { "content-type": "application/octet-stream", "Svc-Method": "PUT", "Svc-Forward-X-Trace": "abc" }
      })
      assert.strictEqual(published.status, 201)
      assert.isString(published.body.messageId)
      const [received] = yield* dest.waitFor("/bytes", 1)
      assert.strictEqual(received!.method, "PUT")
      assert.strictEqual(received!.url, "/bytes?keep=1")
      assert.deepStrictEqual([...received!.body], [...bytes])
      assert.strictEqual(received!.headers["content-type"], "application/octet-stream")
      assert.strictEqual(received!.headers["x-trace"], "abc")
      assert.strictEqual(received!.headers["svc-retried"], "0")
      assert.strictEqual(received!.headers["svc-message-id"], published.body.messageId)
      assert.isUndefined(received!.headers["authorization"])
      const message = yield* waitForMessage(published.body.messageId, (m) => m.state === "delivered")
      assert.strictEqual(message.lastStatus, 200)
    }))

  it.effect("accepts a URL-encoded destination", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const published = yield* publish(encodeURIComponent(`${dest.baseUrl}/encoded`))
      assert.strictEqual(published.status, 201)
      yield* dest.waitFor("/encoded", 1)
    }))

  it.effect("a refused destination is quoted as the caller wrote it, not percent-encoded as a client sent it", () =>
    Effect.gen(function*() {
      for (const [sent, shown] of [
        [encodeURIComponent("not a url"), `got "not a url"`],
        [encodeURIComponent("ftp://127.0.0.1/x"), `got "ftp://127.0.0.1/x"`]
      ] as const) {
        const refused = yield* publish(sent)
        assert.strictEqual(refused.status, 400, sent)
        assert.include(refused.body.message, shown, sent)
      }
      // a URL written out keeps its own escapes
      const dest = yield* Destination
      assert.strictEqual((yield* publish(`${dest.baseUrl}/a%20b`)).status, 201)
      yield* dest.waitFor("/a%20b", 1)
    }))

  it.effect("Svc-Retries / svc-retries", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const [a, b] = yield* bothForms(`${dest.baseUrl}/r`, "Svc-Retries", "7")
      assert.strictEqual(a.maxRetries, 7)
      assert.strictEqual(b.maxRetries, 7)
      const [c] = yield* bothForms(`${dest.baseUrl}/r`, "Svc-Retries", "0")
      assert.strictEqual(c.maxRetries, 0)
    }))

  it.effect("default retries are 3", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const published = yield* publish(`${dest.baseUrl}/d`)
      assert.strictEqual((yield* call(`/v2/messages/${published.body.messageId}`)).body.maxRetries, 3)
    }))

  it.effect("Svc-Delay / svc-delay postpone delivery", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const [a, b] = yield* bothForms(`${dest.baseUrl}/delayed`, "Svc-Delay", "1h")
      for (const message of [a, b]) {
        assert.approximately(message.notBefore - message.createdAt, 3_600_000, 1000)
        assert.strictEqual(message.state, "queued")
      }
      const [short] = yield* bothForms(`${dest.baseUrl}/short-delay`, "Svc-Delay", "800ms")
      const [received] = yield* dest.waitFor("/short-delay", 1)
      assert.isAtLeast(received!.at - short.createdAt, 750)
      assert.strictEqual(dest.requests("/delayed").length, 0)
    }))

  it.effect("Svc-Timeout / svc-timeout: a slow destination is retried", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      dest.on("/slow", (_, n) => n === 1 ? { delayMs: 1500 } : {})
      const [a, b] = yield* bothForms(`${dest.baseUrl}/slow`, "Svc-Timeout", "300ms", { headers: { "Svc-Retries": "2" } })
      assert.strictEqual(a.timeoutMs, 300)
      assert.strictEqual(b.timeoutMs, 300)
      const done = yield* waitForMessage(a.messageId, (m) => m.state === "delivered" || m.state === "failed")
      const done2 = yield* waitForMessage(b.messageId, (m) => m.state === "delivered" || m.state === "failed")
      // the first request timed out and was retried; both messages end delivered
      assert.strictEqual(done.state, "delivered")
      assert.strictEqual(done2.state, "delivered")
      assert.isTrue(done.retried + done2.retried >= 1)
    }))

  it.effect("Svc-Method / svc-method", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const [a, b] = yield* bothForms(`${dest.baseUrl}/method`, "Svc-Method", "patch")
      assert.strictEqual(a.method, "PATCH")
      assert.strictEqual(b.method, "PATCH")
      const received = yield* dest.waitFor("/method", 2)
      assert.deepStrictEqual(received.map((r) => r.method), ["PATCH", "PATCH"])
    }))

  it.effect("Svc-Forward-<Name> / svc-forward-<name>", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const [a, b] = yield* bothForms(`${dest.baseUrl}/fwd`, "Svc-Forward-X-Api-Key", "k1")
      assert.strictEqual(a.header["x-api-key"], "k1")
      assert.strictEqual(b.header["x-api-key"], "k1")
      const received = yield* dest.waitFor("/fwd", 2)
      assert.deepStrictEqual(received.map((r) => r.headers["x-api-key"]), ["k1", "k1"])
    }))

  it.effect("Svc-Header-Forward / svc-header-forward forwards plain headers", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const [a, b] = yield* bothForms(`${dest.baseUrl}/hf`, "Svc-Header-Forward", "true", {
        headers: { "X-Github-Event": "push" }
      })
      assert.strictEqual(a.header["x-github-event"], "push")
      assert.strictEqual(b.header["x-github-event"], "push")
      assert.isUndefined(a.header["authorization"])
      const plain = yield* publish(`${dest.baseUrl}/hf`, { headers: { "X-Github-Event": "push" } })
      const message = (yield* call(`/v2/messages/${plain.body.messageId}`)).body
      assert.isUndefined(message.header["x-github-event"])
    }))

  it.effect("Svc-Header-Forward drops the headers the request's Connection header names (hop-by-hop, RFC 9110 §7.6.1)", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const base = new URL(yield* QueueUrl)
      // fetch refuses to send Connection: node's http sends it as given.
      const answer = yield* Effect.callback<{ status: number; body: any }>((resume) => {
        const request = Http.request({
          host: base.hostname,
          port: base.port,
          path: `/v2/publish/${dest.baseUrl}/hop`,
          method: "POST",
          headers: {
            authorization: `Bearer ${TOKEN}`,
            "svc-header-forward": "true",
            connection: "keep-alive, X-Hop, x-other-hop",
            "x-hop": "for the next hop only",
            "X-Other-Hop": "likewise",
            "x-kept": "end to end"
          },
          agent: false
        }, (response) => {
          const parts: Array<Buffer> = []
          response.on("data", (chunk: Buffer) => parts.push(chunk))
          response.on("end", () => resume(Effect.succeed({ status: response.statusCode!, body: JSON.parse(Buffer.concat(parts).toString()) })))
        })
        request.on("error", (error) => resume(Effect.die(error)))
        request.end("hop")
      })
      assert.strictEqual(answer.status, 201, JSON.stringify(answer.body))
      const stored = (yield* call(`/v2/messages/${answer.body.messageId}`)).body.header
      assert.strictEqual(stored["x-kept"], "end to end")
      assert.isUndefined(stored["x-hop"])
      assert.isUndefined(stored["x-other-hop"])
      const [received] = yield* dest.waitFor("/hop", 1)
      assert.strictEqual(received!.headers["x-kept"], "end to end")
      assert.isUndefined(received!.headers["x-hop"])
      assert.isUndefined(received!.headers["x-other-hop"])
    }))

  it.effect("Svc-Deduplication-Id / svc-deduplication-id", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      for (const [form, options] of [
        ["header", { headers: { "Svc-Deduplication-Id": "order-1" } }],
        ["query", { query: "svc-deduplication-id=order-2" }]
      ] as const) {
        const first = yield* publish(`${dest.baseUrl}/dedup-${form}`, options)
        const second = yield* publish(`${dest.baseUrl}/dedup-${form}`, options)
        assert.strictEqual(first.status, 201)
        assert.isUndefined(first.body.deduplicated)
        assert.strictEqual(second.body.messageId, first.body.messageId)
        assert.isTrue(second.body.deduplicated)
        yield* dest.waitFor(`/dedup-${form}`, 1)
      }
      yield* Effect.sleep("300 millis")
      assert.strictEqual(dest.requests("/dedup-header").length, 1)
      assert.strictEqual(dest.requests("/dedup-query").length, 1)
    }))

  it.effect("callback and failure-callback families, header and query", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      for (const prefix of ["Svc-Callback", "Svc-Failure-Callback"] as const) {
        const key = prefix === "Svc-Callback" ? "callback" : "failureCallback"
        const settings = {
          [prefix]: `${dest.baseUrl}/cb-${key}`,
          [`${prefix}-Method`]: "PUT",
          [`${prefix}-Retries`]: "5",
          [`${prefix}-Timeout`]: "7s",
          [`${prefix}-Delay`]: "2s",
          [`${prefix}-Forward-X-Cb`]: "yes"
        }
        const viaHeader = yield* publish(`${dest.baseUrl}/with-${key}`, { headers: settings })
        const viaQuery = yield* publish(`${dest.baseUrl}/with-${key}`, {
          query: Object.entries(settings).map(([k, v]) => `${k.toLowerCase()}=${encodeURIComponent(v)}`).join("&")
        })
        for (const published of [viaHeader, viaQuery]) {
          assert.strictEqual(published.status, 201, JSON.stringify(published.body))
          const message = (yield* call(`/v2/messages/${published.body.messageId}`)).body
          assert.deepStrictEqual(message[key], {
            url: `${dest.baseUrl}/cb-${key}`,
            method: "PUT",
            retries: 5,
            timeoutMs: 7000,
            delayMs: 2000,
            headers: { "x-cb": "yes", "content-type": "application/json" }
          })
        }
      }
    }))

  it.effect("invalid values: 400 naming each header or parameter, nothing enqueued", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const before = yield* countMessages
      const cases: ReadonlyArray<readonly [string, Parameters<typeof publish>[1], string, string]> = [
        [`${dest.baseUrl}/x`, { headers: { "Svc-Callback": "not a url" } }, "header", "Svc-Callback"],
        [`${dest.baseUrl}/x`, { query: "svc-delay=soon" }, "query", "svc-delay"],
        [`${dest.baseUrl}/x`, { headers: { "Svc-Delay": "soon" } }, "header", "Svc-Delay"],
        [`${dest.baseUrl}/x`, { headers: { "Svc-Retries": "-1" } }, "header", "Svc-Retries"],
        [`${dest.baseUrl}/x`, { query: "svc-retries=-1" }, "query", "svc-retries"],
        [`${dest.baseUrl}/x`, { headers: { "Svc-Method": "FETCH" } }, "header", "Svc-Method"],
        [`${dest.baseUrl}/x`, { headers: { "Svc-Timeout": "forever" } }, "header", "Svc-Timeout"],
        [`${dest.baseUrl}/x`, { query: "svc-timeout=0s" }, "query", "svc-timeout"],
        [`${dest.baseUrl}/x`, { headers: { "Svc-Deduplication-Id": "x".repeat(201) } }, "header", "Svc-Deduplication-Id"],
        [`${dest.baseUrl}/x`, { headers: { "Svc-Header-Forward": "maybe" } }, "header", "Svc-Header-Forward"],
        [`${dest.baseUrl}/x`, { headers: { "Svc-Failure-Callback": "ftp://x" } }, "header", "Svc-Failure-Callback"],
        [`${dest.baseUrl}/x`, { headers: { "Svc-Callback": `${dest.baseUrl}/cb`, "Svc-Callback-Retries": "many" } }, "header", "Svc-Callback-Retries"],
        [`${dest.baseUrl}/x`, { query: "svc-failure-callback-delay=later" }, "query", "svc-failure-callback-delay"],
        ["no-such-group", {}, "path", "destination"],
        ["ftp:nothing", {}, "path", "destination"]
      ]
      for (const [destination, options, location, parameter] of cases) {
        const response = yield* publish(destination, options)
        assert.strictEqual(response.status, 400, `${parameter}: ${JSON.stringify(response.body)}`)
        assert.strictEqual(response.body.code, "invalid_request")
        assert.deepInclude(response.body.issues.map((i: any) => ({ in: i.in, parameter: i.parameter })), { in: location, parameter })
        assert.include(response.body.message, parameter)
      }
      // Several bad values at once: every one is named.
      const many = yield* publish(`${dest.baseUrl}/x`, { headers: { "Svc-Retries": "x", "Svc-Delay": "y" }, query: "svc-method=NOPE" })
      assert.deepStrictEqual(many.body.issues.map((i: any) => i.parameter).sort(), ["Svc-Delay", "Svc-Retries", "svc-method"])
      assert.strictEqual(yield* countMessages, before)
    }))

  it.effect("port 0 in a destination, callback or group endpoint URL is a 400 naming the port, nothing stored", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const before = yield* countMessages
      const cases: ReadonlyArray<readonly [string, Parameters<typeof publish>[1], string]> = [
        ["http://example.invalid:0/x", {}, "destination"],
        ["https://127.0.0.1:0/x", {}, "destination"],
        [`${dest.baseUrl}/x`, { headers: { "Svc-Callback": "http://127.0.0.1:0/cb" } }, "Svc-Callback"],
        [`${dest.baseUrl}/x`, { query: `svc-failure-callback=${encodeURIComponent("http://127.0.0.1:0/f")}` }, "svc-failure-callback"]
      ]
      for (const [destination, options, parameter] of cases) {
        const answer = yield* publish(destination, options)
        assert.strictEqual(answer.status, 400, `${destination}: ${JSON.stringify(answer.body)}`)
        assert.deepStrictEqual(answer.body.issues.map((i: any) => i.parameter), [parameter])
        assert.include(answer.body.message, "port 0")
      }
      assert.strictEqual(yield* countMessages, before)
      const group = yield* call("/v2/topics/port-zero/endpoints", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ endpoints: [{ url: "http://127.0.0.1:0/e" }] })
      })
      assert.strictEqual(group.status, 400)
      assert.deepStrictEqual(group.body.issues.map((i: any) => i.parameter), ["endpoints[0].url"])
      assert.include(group.body.message, "port 0")
      assert.strictEqual((yield* call("/v2/topics/port-zero")).status, 404)
    }))

  it.effect("a queue parameter whose %-encoding is not UTF-8 is a 400 naming it, at publish, enqueue and schedule", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const before = yield* countMessages
      const cases: ReadonlyArray<readonly [string, string]> = [
        ["svc-forward-x-a=%FF%FE", "svc-forward-x-a"],
        ["svc-retries=%E2%82", "svc-retries"],
        ["svc-delay=10%", "svc-delay"],
        ["svc-forward-x%FF=1", "svc-forward-x%FF"]
      ]
      for (const route of [`/v2/publish/${dest.baseUrl}/pct`, `/v2/enqueue/pct/${dest.baseUrl}/pct`, `/v2/schedules/${dest.baseUrl}/pct`]) {
        for (const [query, parameter] of cases) {
          const answer = yield* call(`${route}?${query}`, { method: "POST", body: "x", headers: { "Svc-Cron": "0 0 1 1 *" } })
          const what = `${route}?${query}`
          assert.strictEqual(answer.status, 400, `${what}: ${JSON.stringify(answer.body)}`)
          assert.deepStrictEqual(answer.body.issues.map((i: any) => `${i.in} ${i.parameter}`), [`query ${parameter}`], what)
          assert.include(answer.body.message, "not percent-encoded UTF-8", what)
        }
      }
      assert.strictEqual(yield* countMessages, before)
      assert.deepStrictEqual((yield* call("/v2/schedules")).body.schedules.filter((s: any) => s.destination.endsWith("/pct")), [])
      // Valid UTF-8 still decodes (é, sent as the Latin-1 byte the header rules allow); other parameters stay the URL's.
      const fine = yield* publish(`${dest.baseUrl}/pct`, { query: "svc-forward-x-a=caf%C3%A9&other=%FF" })
      assert.strictEqual(fine.status, 201, JSON.stringify(fine.body))
      const stored = (yield* call(`/v2/messages/${fine.body.messageId}`)).body
      assert.strictEqual(stored.header["x-a"], "caf\u00e9")
      assert.strictEqual(stored.url, `${dest.baseUrl}/pct?other=%FF`)
    }))

  it.effect("authentication: bearer, svc_token for webhooks, constant-time refusal", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      assert.strictEqual((yield* publish(`${dest.baseUrl}/auth`, { token: null })).status, 401)
      assert.strictEqual((yield* publish(`${dest.baseUrl}/auth`, { token: "wrong" })).status, 401)
      assert.strictEqual((yield* call("/v2/dlq", { token: null })).status, 401)
      assert.strictEqual((yield* call("/v2/dlq", { token: "wrong" })).status, 401)
      // A webhook sender pointed at the queue: token and settings in the query string.
      dest.on("/hook", (_, n) => n <= 2 ? { status: 500 } : {})
      const hook = yield* publish(`${dest.baseUrl}/hook`, {
        token: null,
        query: `svc_token=${TOKEN}&svc-retries=5`,
        body: JSON.stringify({ event: "push" }),
        headers: { "content-type": "application/json" }
      })
      assert.strictEqual(hook.status, 201, JSON.stringify(hook.body))
      const message = yield* waitForMessage(hook.body.messageId, (m) => m.state === "delivered")
      assert.strictEqual(message.maxRetries, 5)
      assert.strictEqual(message.retried, 2)
      const received = dest.requests("/hook")
      assert.strictEqual(received.length, 3)
      assert.strictEqual(received[2]!.body.toString(), JSON.stringify({ event: "push" }))
      // The token never reaches the destination.
      assert.notInclude(received[2]!.url, TOKEN)
    }))

  it.effect("cancel a queued message; finished ones cannot be cancelled", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const published = yield* publish(`${dest.baseUrl}/cancel`, { headers: { "Svc-Delay": "1h" } })
      assert.strictEqual((yield* call(`/v2/messages/${published.body.messageId}`, { method: "DELETE" })).status, 204)
      assert.strictEqual((yield* call(`/v2/messages/${published.body.messageId}`)).body.state, "cancelled")
      const again = yield* call(`/v2/messages/${published.body.messageId}`, { method: "DELETE" })
      assert.strictEqual(again.status, 409)
      assert.strictEqual(again.body.code, "message_not_cancellable")
      const missing = yield* call(`/v2/messages/00000000-0000-0000-0000-000000000000`)
      assert.strictEqual(missing.status, 404)
      assert.strictEqual(missing.body.code, "message_not_found")
    }))
})

layer(queueLayer({ maxMessageBytes: 1024 }), { timeout: 60_000, excludeTestServices: true })("body cap", (it) => {
  it.effect("a body over QUEUE_MAX_MESSAGE_BYTES is 413, nothing enqueued", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const before = yield* countMessages
      const response = yield* publish(`${dest.baseUrl}/big`, { body: "x".repeat(2000) })
      assert.strictEqual(response.status, 413)
      assert.strictEqual(response.body.code, "message_too_large")
      assert.strictEqual(yield* countMessages, before)
      assert.strictEqual((yield* publish(`${dest.baseUrl}/small`, { body: "x".repeat(1024) })).status, 201)
    }))

  it.effect("a callback body over QUEUE_MAX_MESSAGE_BYTES is truncated", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      dest.on("/large-answer", () => ({ body: "y".repeat(5000) }))
      yield* publish(`${dest.baseUrl}/large-answer`, { headers: { "Svc-Callback": `${dest.baseUrl}/large-cb` } })
      const [callback] = yield* dest.waitFor("/large-cb", 1)
      const body = JSON.parse(callback!.body.toString())
      assert.strictEqual(Buffer.from(body.body, "base64").toString(), "y".repeat(1024))
    }))
})

layer(queueLayer({ allowPrivate: false }), { timeout: 60_000, excludeTestServices: true })("private destinations", (it) => {
  it.effect("loopback destinations and callbacks are refused with 400", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const response = yield* publish(`${dest.baseUrl}/private`)
      assert.strictEqual(response.status, 400)
      assert.strictEqual(response.body.issues[0].parameter, "destination")
      assert.match(response.body.issues[0].problem, /QUEUE_ALLOW_PRIVATE/)
      const callback = yield* publish("http://93.184.216.34/hook", { headers: { "Svc-Callback": "http://localhost:9/cb" } })
      assert.strictEqual(callback.status, 400)
      assert.strictEqual(callback.body.issues[0].parameter, "Svc-Callback")
      assert.strictEqual(yield* countMessages, 0)
    }))
})
