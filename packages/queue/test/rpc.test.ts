/**
 * The internal RPC at POST /rpc over a real socket, through `QueueRpcClient` (what `svc queue`
 * uses): Publish then GetMessage; a message that uses up its retries lands in the DLQ, ListDlq lists
 * it, RetryDlq re-enqueues it and it is delivered once the destination recovers; URL groups; the
 * token: wrong or missing → Unauthorized, QUEUE_TOKEN unset → ServiceUnavailable, nothing enqueued.
 */
import { assert, layer } from "@effect/vitest"
import { QueueRpcs } from "@svc/schema"
import { Context, Effect, Layer, Option } from "effect"
import * as Net from "node:net"
import { FetchHttpClient } from "effect/http"
import { RpcClient, RpcSerialization } from "effect/rpc"
import { SqlClient } from "effect/sql"
import { describeDlq, describeTopic, QueueRpcClient } from "../src/RpcClient.ts"
import { Destination, poll, queueLayer, QueueUrl, TOKEN } from "./support.ts"

const b64 = (text: string) => Buffer.from(text).toString("base64")

/** The client `svc queue` uses, on the running queue, with `token` (default: the right one). */
const rpcClient = (token: string = TOKEN) =>
  Effect.gen(function*() {
    const baseUrl = yield* QueueUrl
    const context = yield* Layer.build(QueueRpcClient.layer({ baseUrl, token }))
    return Context.get(context, QueueRpcClient)
  })

/** A client that sends no Authorization header at all. */
const anonymousClient = Effect.gen(function*() {
  const baseUrl = yield* QueueUrl
  return yield* RpcClient.make(QueueRpcs).pipe(
    Effect.provide(
      RpcClient.layerProtocolHttp({ url: `${baseUrl}/rpc` }).pipe(
        Layer.provide(RpcSerialization.layerNdjson),
        Layer.provide(FetchHttpClient.layer)
      )
    )
  )
})

const countMessages = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ n: number }>`SELECT count(*)::int4 AS n FROM queue.messages`
  return row!.n
})

layer(queueLayer(), { timeout: 120_000, excludeTestServices: true })("rpc", (it) => {
  it.effect("Publish delivers the bytes with its headers; GetMessage shows the message", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const client = yield* rpcClient()
      const published = yield* client.Publish({
        destination: `${dest.baseUrl}/rpc-hello`,
        body: new TextEncoder().encode("{\"order\":7}"),
        headers: { "Content-Type": "application/json", "Svc-Retries": "2", "Svc-Forward-X-Trace": "t1" }
      })
      assert.isFalse(Array.isArray(published), "a URL destination answers one message")
      const { messageId } = published as { readonly messageId: string }

      const [received] = yield* dest.waitFor("/rpc-hello", 1)
      assert.strictEqual(received!.body.toString(), "{\"order\":7}")
      assert.strictEqual(received!.headers["content-type"], "application/json")
      assert.strictEqual(received!.headers["x-trace"], "t1")
      assert.strictEqual(received!.headers["svc-message-id"], messageId)

      const message = yield* poll(
        client.GetMessage({ messageId }),
        (m) => m.state === "delivered",
        "20 seconds",
        () => `message ${messageId} was not delivered`
      )
      assert.strictEqual(message.url, `${dest.baseUrl}/rpc-hello`)
      assert.strictEqual(message.maxRetries, 2)
      assert.strictEqual(message.body, b64("{\"order\":7}"))
      assert.strictEqual(message.lastStatus, 200)

      const missing = yield* Effect.flip(client.GetMessage({ messageId: "00000000-0000-0000-0000-000000000000" }))
      assert.strictEqual(missing._tag, "MessageNotFound")
    }))

  it.effect("Publish refuses what the HTTP publish refuses, naming each problem, and enqueues nothing", () =>
    Effect.gen(function*() {
      const client = yield* rpcClient()
      const before = yield* countMessages
      const error = yield* Effect.flip(client.Publish({ destination: "nowhere at all", headers: { "Svc-Retries": "lots" } }))
      assert.strictEqual(error._tag, "InvalidRequest")
      if (error._tag === "InvalidRequest") {
        assert.deepStrictEqual(error.issues.map((issue) => [issue.in, issue.parameter]), [
          ["body", "destination"],
          ["header", "Svc-Retries"]
        ])
      }
      assert.strictEqual(yield* countMessages, before)
    }))

  it.effect("a control character in a URL is InvalidRequest naming the field in Publish, PublishBatch, AddSchedule and UpsertEndpoints", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const client = yield* rpcClient()
      const before = yield* countMessages
      const url = `${dest.baseUrl}/rpc-ctl`
      const problem = (found: string, at: number) => `must not contain control characters (found ${found} at position ${at})`
      const calls = [
        [client.Publish({ destination: `${url}\tx` }), "destination", problem("U+0009", url.length + 1)],
        [client.Publish({ destination: url, headers: { "Svc-Callback": `${url}/cb\u0001` } }), "Svc-Callback", problem("U+0001", url.length + 4)],
        [client.PublishBatch({ messages: [{ destination: `${url}\n` }] }), "[0].destination", problem("U+000A", url.length + 1)],
        [client.AddSchedule({ destination: `${url}\u007f`, cron: "0 0 1 1 *" }), "destination", problem("U+007F", url.length + 1)],
        [client.UpsertEndpoints({ name: "rpc-ctl", endpoints: [{ url: `${url}\t` }] }), "endpoints[0].url", problem("U+0009", url.length + 1)]
      ] as const
      for (const [call, parameter, text] of calls) {
        const error = yield* Effect.flip(call as Effect.Effect<unknown, { readonly _tag: string; readonly issues?: ReadonlyArray<{ parameter: string; problem: string }> }>)
        assert.strictEqual(error._tag, "InvalidRequest", parameter)
        assert.deepInclude(error.issues!.map((issue) => ({ parameter: issue.parameter, problem: issue.problem })), { parameter, problem: text })
      }
      assert.strictEqual(yield* countMessages, before)
      assert.strictEqual((yield* Effect.flip(client.GetTopic({ name: "rpc-ctl" })))._tag, "TopicNotFound")
    }))

  it.effect("a message that uses up its retries: ListDlq lists it, RetryDlq re-enqueues it, then it is delivered", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const client = yield* rpcClient()
      let recovered = false
      dest.on("/rpc-down", () => recovered ? { status: 200 } : { status: 503, body: "down" })
      const published = yield* client.Publish({ destination: `${dest.baseUrl}/rpc-down`, headers: { "Svc-Retries": "0" } })
      const { messageId } = published as { readonly messageId: string }

      const page = yield* poll(
        client.ListDlq({ url: `${dest.baseUrl}/rpc-down` }),
        (p) => p.messages.length > 0,
        "20 seconds",
        () => "the message never reached the DLQ"
      )
      assert.strictEqual(page.messages.length, 1)
      const entry = page.messages[0]!
      assert.strictEqual(entry.messageId, messageId)
      assert.strictEqual(entry.responseStatus, 503)
      assert.strictEqual(entry.responseBody, b64("down"))
      assert.strictEqual(entry.retried, 0)
      assert.include(describeDlq(entry), entry.dlqId)
      assert.include(describeDlq(entry), "answered 503")
      const failed = yield* client.GetMessage({ messageId })
      assert.strictEqual(failed.state, "failed")
      assert.strictEqual(failed.dlqId, entry.dlqId)

      recovered = true
      const retried = yield* client.RetryDlq({ dlqId: entry.dlqId })
      assert.strictEqual(retried.messageId, messageId)
      yield* dest.waitFor("/rpc-down", 2)
      yield* poll(client.GetMessage({ messageId }), (m) => m.state === "delivered", "20 seconds", () => "not delivered after the retry")
      assert.deepStrictEqual((yield* client.ListDlq({ url: `${dest.baseUrl}/rpc-down` })).messages, [])
      assert.strictEqual((yield* Effect.flip(client.RetryDlq({ dlqId: entry.dlqId })))._tag, "DlqMessageNotFound")
      assert.strictEqual((yield* Effect.flip(client.DeleteDlq({ dlqId: entry.dlqId })))._tag, "DlqMessageNotFound")
    }))

  it.effect("ListDlq pages, DeleteDlq removes, bad limits and cursors are InvalidRequest", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const client = yield* rpcClient()
      dest.on("/rpc-gone", () => ({ status: 410 }))
      yield* Effect.forEach([1, 2, 3], () => client.Publish({ destination: `${dest.baseUrl}/rpc-gone`, headers: { "Svc-Retries": "0" } }))
      const url = `${dest.baseUrl}/rpc-gone`
      const all = yield* poll(client.ListDlq({ url }), (p) => p.messages.length === 3, "20 seconds", () => "3 dead letters expected")
      const first = yield* client.ListDlq({ url, limit: 2 })
      assert.strictEqual(first.messages.length, 2)
      assert.isString(first.cursor)
      const second = yield* client.ListDlq({ url, limit: 2, cursor: first.cursor! })
      assert.deepStrictEqual(
        [...first.messages, ...second.messages].map((m) => m.dlqId),
        all.messages.map((m) => m.dlqId)
      )
      assert.isUndefined(second.cursor)

      yield* client.DeleteDlq({ dlqId: all.messages[0]!.dlqId })
      assert.strictEqual((yield* client.ListDlq({ url })).messages.length, 2)

      const badLimit = yield* Effect.flip(client.ListDlq({ limit: 0 }))
      assert.strictEqual(badLimit._tag, "InvalidRequest")
      if (badLimit._tag === "InvalidRequest") assert.deepInclude(badLimit.issues[0]!, { in: "body", parameter: "limit" })
      const badCursor = yield* Effect.flip(client.ListDlq({ cursor: "not-a-cursor" }))
      assert.strictEqual(badCursor._tag, "InvalidRequest")
    }))

  it.effect("URL groups: UpsertEndpoints, ListTopics, GetTopic, Publish to the group, DeleteTopic", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const client = yield* rpcClient()
      const created = yield* client.UpsertEndpoints({
        name: "rpc-orders",
        endpoints: [{ name: "billing", url: `${dest.baseUrl}/rpc-billing` }, { url: `${dest.baseUrl}/rpc-audit` }]
      })
      assert.strictEqual(created.name, "rpc-orders")
      assert.strictEqual(created.endpoints.length, 2)

      const { topics } = yield* client.ListTopics({})
      const listed = topics.find((topic) => topic.name === "rpc-orders")
      assert.isDefined(listed)
      assert.strictEqual(
        describeTopic(listed!),
        `rpc-orders  2 endpoints: billing=${dest.baseUrl}/rpc-billing, ${dest.baseUrl}/rpc-audit`
      )
      assert.deepStrictEqual((yield* client.GetTopic({ name: "rpc-orders" })).endpoints, created.endpoints)

      const published = yield* client.Publish({ destination: "rpc-orders", body: new TextEncoder().encode("order 1") })
      assert.isTrue(Array.isArray(published))
      assert.strictEqual((published as ReadonlyArray<unknown>).length, 2)
      const [billing] = yield* dest.waitFor("/rpc-billing", 1)
      yield* dest.waitFor("/rpc-audit", 1)
      assert.strictEqual(billing!.headers["svc-topic-name"], "rpc-orders")

      const badName = yield* Effect.flip(client.UpsertEndpoints({ name: "no spaces", endpoints: [{ url: "ftp://x" }] }))
      assert.strictEqual(badName._tag, "InvalidRequest")
      if (badName._tag === "InvalidRequest") {
        assert.deepStrictEqual(badName.issues.map((issue) => issue.parameter), ["name", "endpoints[0].url"])
      }

      yield* client.DeleteTopic({ name: "rpc-orders" })
      assert.strictEqual((yield* Effect.flip(client.GetTopic({ name: "rpc-orders" })))._tag, "TopicNotFound")
      assert.strictEqual((yield* Effect.flip(client.DeleteTopic({ name: "rpc-orders" })))._tag, "TopicNotFound")
    }))

  it.effect("a wrong or missing token is Unauthorized and enqueues nothing", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const before = yield* countMessages
      const wrong = yield* rpcClient("not-the-token")
      const refused = yield* Effect.flip(wrong.Publish({ destination: `${dest.baseUrl}/rpc-never` }))
      assert.strictEqual(refused._tag, "Unauthorized")
      assert.strictEqual((yield* Effect.flip(wrong.ListDlq({})))._tag, "Unauthorized")

      const anonymous = yield* anonymousClient
      const missing = yield* Effect.flip(anonymous.ListTopics({}))
      assert.strictEqual(missing._tag, "Unauthorized")
      assert.match(missing.message, /Missing bearer token \(Authorization: Bearer <QUEUE_TOKEN>\)/)

      yield* Effect.sleep("200 millis")
      assert.strictEqual(yield* countMessages, before)
      assert.strictEqual(dest.requests("/rpc-never").length, 0)
    }))

  it.effect("without the token, a malformed call is a plain 401 that names no procedure or field", () =>
    Effect.gen(function*() {
      const url = yield* QueueUrl
      for (
        const line of [
          { _tag: "Request", id: "1", tag: "Nope", payload: null, headers: [] },
          { _tag: "Request", id: "1", tag: "Publish", payload: { destination: 5 }, headers: [] },
          { nonsense: true }
        ]
      ) {
        const response = yield* Effect.promise(() =>
          fetch(`${url}/rpc`, { method: "POST", headers: { "content-type": "application/ndjson" }, body: `${JSON.stringify(line)}\n` })
        )
        const text = yield* Effect.promise(() => response.text())
        assert.strictEqual(response.status, 401, text)
        assert.notMatch(text, /Publish|GetMessage|ListDlq|destination|procedure/, text)
      }
    }))

  it.effect("without the token, a large or unsized body is refused with 401 before it is read", () =>
    Effect.gen(function*() {
      const url = new URL(yield* QueueUrl)
      // Only the head and a few bytes are sent: an answer proves the server did not wait for the body.
      const answer = (headers: string) =>
        Effect.callback<string>((resume) => {
          const socket = Net.connect(Number(url.port), url.hostname)
          let received = ""
          socket.on("data", (chunk) => {
            received += chunk.toString()
            if (received.includes("\r\n\r\n") && /\}\s*$/.test(received)) socket.end()
          })
          socket.on("close", () => resume(Effect.succeed(received)))
          socket.on("error", () => resume(Effect.succeed(received)))
          const part = headers.includes("chunked") ? `5\r\n{"_ta\r\n` : `{"_ta`
          socket.write(`POST /rpc HTTP/1.1\r\nHost: ${url.host}\r\ncontent-type: application/ndjson\r\n${headers}\r\n${part}`)
          return Effect.sync(() => socket.destroy())
        }).pipe(Effect.timeout("10 seconds"))
      for (const headers of ["content-length: 20000000\r\n", "authorization: Bearer wrong\r\ncontent-length: 20000000\r\n", "transfer-encoding: chunked\r\n"]) {
        const text = yield* answer(headers)
        assert.match(text, /^HTTP\/1\.1 401 /, headers)
        assert.match(text, /"code":"unauthorized"/, headers)
      }
    }))
})

layer(queueLayer(), { timeout: 60_000, excludeTestServices: true })("rpc bodies", (it) => {
  it.effect("a body of 40 requests whose payloads do not decode is answered at once, 400 naming them by line (17 or more hung the call for ever)", () =>
    Effect.gen(function*() {
      const baseUrl = yield* QueueUrl
      const body = Array.from({ length: 40 }, (_, i) =>
        JSON.stringify({ _tag: "Request", id: String(i + 1), tag: "GetMessage", payload: {}, headers: [] })).join("\n") + "\n"
      const response = yield* Effect.promise(() =>
        fetch(`${baseUrl}/rpc`, {
          method: "POST",
          headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/ndjson" },
          body,
          signal: AbortSignal.timeout(20_000)
        }).then(async (answer) => ({ status: answer.status, text: await answer.text() }))
      )
      assert.strictEqual(response.status, 400, response.text)
      const { code, issues } = JSON.parse(response.text) as { code: string; issues: Array<{ parameter: string; problem: string }> }
      assert.strictEqual(code, "invalid_request")
      assert.deepStrictEqual(issues.slice(0, 2).map((issue) => issue.parameter), ["line 1 payload.messageId", "line 2 payload.messageId"])
      assert.match(issues[issues.length - 1]!.problem, /more issues are not listed/)
    }))

  it.effect("a payload key a procedure does not take is refused naming it, and nothing runs: Publish with `header` queued at once what `headers` delayed a day", () =>
    Effect.gen(function*() {
      const baseUrl = yield* QueueUrl
      const raw = (tag: string, payload: unknown) =>
        Effect.promise(() =>
          fetch(`${baseUrl}/rpc`, {
            method: "POST",
            headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/ndjson" },
            body: `${JSON.stringify({ _tag: "Request", id: "1", tag, payload, headers: [] })}\n`
          }).then(async (answer) => ({ status: answer.status, text: await answer.text() }))
        )
      const before = yield* countMessages
      const id = "0190a4f4-0000-7000-8000-000000000000"
      // one misspelt or unknown key per procedure, beside what it takes
      const cases: ReadonlyArray<readonly [string, Record<string, unknown>, string]> = [
        ["Publish", { destination: "http://x.invalid/", header: { "Svc-Delay": "1d" } }, "header"],
        ["GetMessage", { messageId: id, zz: 1 }, "zz"],
        ["ListDlq", { urll: "http://nothing.invalid/" }, "urll"],
        ["RetryDlq", { dlqId: id, force: true }, "force"],
        ["DeleteDlq", { dlqId: id, Force: true }, "Force"],
        ["ListTopics", { limitt: 1 }, "limitt"],
        ["GetTopic", { name: "t", Name: "u" }, "Name"],
        ["DeleteTopic", { name: "t", all: true }, "all"],
        ["ListSchedules", { limitt: 1 }, "limitt"],
        ["GetSchedule", { scheduleId: "s", zz: 1 }, "zz"],
        ["PauseSchedule", { scheduleId: "s", zz: 1 }, "zz"],
        ["ResumeSchedule", { scheduleId: "s", zz: 1 }, "zz"],
        ["DeleteSchedule", { scheduleId: "s", zz: 1 }, "zz"],
        ["ListEvents", { messageid: id }, "messageid"]
      ]
      for (const [tag, payload, key] of cases) {
        const answer = yield* raw(tag, payload)
        const what = `${tag} ${JSON.stringify(payload)}: ${answer.text}`
        assert.strictEqual(answer.status, 400, what)
        const { code, issues } = JSON.parse(answer.text) as { code: string; issues: Array<{ parameter: string; problem: string }> }
        assert.strictEqual(code, "invalid_request", what)
        assert.deepStrictEqual(issues.map((issue) => issue.parameter), [`line 1 payload.${key}`], what)
      }
      assert.strictEqual(yield* countMessages, before)
    }))
})

layer(queueLayer({ token: Option.none() }), { timeout: 60_000, excludeTestServices: true })("rpc without QUEUE_TOKEN", (it) => {
  it.effect("every procedure is refused with ServiceUnavailable, even with a token", () =>
    Effect.gen(function*() {
      const client = yield* rpcClient()
      const error = yield* Effect.flip(client.ListTopics({}))
      assert.strictEqual(error._tag, "ServiceUnavailable")
      assert.match(error.message, /QUEUE_TOKEN/)
      assert.strictEqual((yield* Effect.flip(client.Publish({ destination: "https://example.com/x" })))._tag, "ServiceUnavailable")
      assert.strictEqual(yield* countMessages, 0)
    }))
})
