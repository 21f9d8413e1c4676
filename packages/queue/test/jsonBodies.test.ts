/**
 * The queue's JSON request bodies (`src/JsonBody.ts`), over HTTP on a running queue: at every route
 * that takes one, bytes that are not UTF-8, a string holding an unpaired surrogate escape and a body
 * of the wrong shape are a 400 naming the problem (in the API's words, not a schema's identifier),
 * and nothing is stored or changed. Before, a batch body with `\xff\xfe` was stored as U+FFFD U+FFFD,
 * and a body 5,000 levels deep (10 KB of brackets) was a 500: the check overflowed the stack.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { call, Destination, publish, queueLayer } from "./support.ts"

const countMessages = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ n: number }>`SELECT count(*)::int4 AS n FROM queue.messages WHERE kind = 'message'`
  return row!.n
})

const send = (method: string, path: string, body: string | Uint8Array) =>
  call(path, { method, headers: { "content-type": "application/json" }, body: body as BodyInit })

/** The JSON bytes of `text` with `bytes` in place of `@@` (so a body can hold what JSON.stringify never writes). */
const withBytes = (text: string, bytes: ReadonlyArray<number>) => {
  const [before, after] = text.split("@@") as [string, string]
  return Buffer.concat([Buffer.from(before, "utf8"), Buffer.from(bytes), Buffer.from(after, "utf8")])
}

layer(queueLayer({ worker: false }), { timeout: 120_000, excludeTestServices: true })("JSON request bodies", (it) => {
  it.effect("bytes that are not UTF-8 are refused at every JSON route, and nothing changes", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const queued = (yield* publish(`${dest.baseUrl}/kept`, { headers: { "Svc-Delay": "1h" } })).body.messageId
      const before = yield* countMessages
      const routes: ReadonlyArray<readonly [string, string, string]> = [
        ["POST", "/v2/batch", `[{"destination":"${dest.baseUrl}/b","body":"@@","headers":{"Svc-Delay":"1d"}}]`],
        ["DELETE", "/v2/messages", `{"filter":{"url":"${dest.baseUrl}/kept@@","fromDate":0}}`],
        ["POST", "/v2/dlq/retry", `{"filter":{"url":"@@"}}`],
        ["DELETE", "/v2/dlq", `{"filter":{"url":"@@"}}`],
        ["POST", "/v2/topics/utf/endpoints", `{"endpoints":[{"name":"n@@","url":"${dest.baseUrl}/e"}]}`],
        ["DELETE", "/v2/topics/utf/endpoints", `{"endpoints":[{"name":"@@"}]}`],
        ["PATCH", "/v2/topics/utf", `{"headers":{"X-A":"@@"}}`],
        ["POST", "/v2/queues", `{"queueName":"utf@@"}`]
      ]
      for (const [method, path, text] of routes) {
        for (const bytes of [[0xff, 0xfe], [0xc3], [0xed, 0xa0, 0x80]]) {
          const answer = yield* send(method, path, withBytes(text, bytes))
          const what = `${method} ${path} with ${Buffer.from(bytes).toString("hex")}`
          assert.strictEqual(answer.status, 400, `${what}: ${JSON.stringify(answer.body)}`)
          assert.strictEqual(answer.body.code, "invalid_request", what)
          assert.include(answer.body.message, "is not valid UTF-8", what)
        }
      }
      assert.strictEqual(yield* countMessages, before)
      assert.strictEqual((yield* call(`/v2/messages/${queued}`)).body.state, "queued")
      assert.strictEqual((yield* call("/v2/topics/utf")).status, 404)
      assert.deepStrictEqual((yield* call("/v2/queues")).body.queues, [])
    }))

  it.effect("a body declared in a charset other than UTF-8 is 415 naming it at every JSON route and the RPC, unread; charset=utf-8 as before", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const before = yield* countMessages
      const routes: ReadonlyArray<readonly [string, string, string]> = [
        ["POST", "/v2/batch", `[{"destination":"${dest.baseUrl}/cs","headers":{"Svc-Delay":"1d"}}]`],
        ["DELETE", "/v2/messages", `{"filter":{"url":"${dest.baseUrl}/none","fromDate":0}}`],
        ["POST", "/v2/dlq/retry", `{"filter":{"url":"${dest.baseUrl}/none"}}`],
        ["DELETE", "/v2/dlq", `{"filter":{"url":"${dest.baseUrl}/none"}}`],
        ["POST", "/v2/topics/cs/endpoints", `{"endpoints":[{"name":"n","url":"${dest.baseUrl}/e"}]}`],
        ["PATCH", "/v2/topics/cs", `{"headers":{"X-A":"1"}}`],
        // its last endpoint removed, the group goes
        ["DELETE", "/v2/topics/cs/endpoints", `{"endpoints":[{"name":"n"}]}`],
        ["POST", "/v2/queues", `{"queueName":"cs"}`],
        // the internal RPC: one Publish request a line (NDJSON)
        ["POST", "/rpc", `${JSON.stringify({ _tag: "Request", id: "1", tag: "Publish", payload: { destination: `${dest.baseUrl}/cs`, headers: { "Svc-Delay": "1d" } }, headers: [] })}\n`]
      ]
      for (const [method, path, text] of routes) {
        const type = path === "/rpc" ? "application/ndjson" : "application/json"
        // the body in UTF-16LE with a byte order mark, as a client that meant its charset sends it
        const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, "utf16le")])
        for (const [charset, named] of [["utf-16", "utf-16"], ["\"UTF-16\"", "UTF-16"], ["iso-8859-1", "iso-8859-1"], ["shift_jis", "shift_jis"]]) {
          const answer = yield* call(path, { method, headers: { "content-type": `${type}; charset=${charset}` }, body: utf16 })
          const what = `${method} ${path} with charset=${charset}`
          assert.strictEqual(answer.status, 415, `${what}: ${JSON.stringify(answer.body)}`)
          assert.strictEqual(answer.body.code, "unsupported_media_type", what)
          assert.strictEqual(
            answer.body.message,
            `Content-Type charset "${named}" is not supported: send the JSON body as UTF-8 (charset=utf-8, or no charset; RFC 8259)`,
            what
          )
        }
      }
      // nothing stored or changed
      assert.strictEqual(yield* countMessages, before)
      assert.strictEqual((yield* call("/v2/topics/cs")).status, 404)
      assert.deepStrictEqual((yield* call("/v2/queues")).body.queues, [])
      // without the token the 401 comes first, naming nothing of the body
      const anonymous = yield* call("/v2/batch", { method: "POST", headers: { "content-type": "application/json; charset=utf-16" }, body: "[]", token: null })
      assert.strictEqual(anonymous.status, 401)

      // UTF-8 by any of its spellings is read as before
      for (const charset of ["UTF-8", "\"utf-8\"", "utf8"]) {
        for (const [method, path, text] of routes) {
          const type = path === "/rpc" ? "application/ndjson" : "application/json"
          const answer = yield* call(path, { method, headers: { "content-type": `${type}; charset=${charset}` }, body: text })
          assert.isBelow(answer.status, 300, `${method} ${path} with charset=${charset}: ${JSON.stringify(answer.body)}`)
        }
      }
      // a batch and an RPC publish per spelling
      assert.strictEqual(yield* countMessages, before + 6)
      // the queue made goes: other tests of this file expect none
      assert.strictEqual((yield* call("/v2/queues/cs", { method: "DELETE" })).status, 204)
    }))

  it.effect("a string with an unpaired surrogate is refused naming its field; a pair is stored as sent", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const before = yield* countMessages
      const lone = yield* send("POST", "/v2/batch", `[{"destination":"${dest.baseUrl}/b","body":"ok"},{"destination":"${dest.baseUrl}/b","body":"a\\ud800b"}]`)
      assert.strictEqual(lone.status, 400, JSON.stringify(lone.body))
      assert.deepStrictEqual(lone.body.issues.map((issue: any) => issue.parameter), ["[1].body"])
      assert.include(lone.body.issues[0].problem, "unpaired surrogate (\\ud800 at character 1)")
      const inHeader = yield* send("POST", "/v2/batch", `[{"destination":"${dest.baseUrl}/b","headers":{"Svc-Forward-X-A":"\\udc00"}}]`)
      assert.deepStrictEqual([inHeader.status, inHeader.body.issues[0].parameter], [400, "[0].headers.Svc-Forward-X-A"])
      const inKey = yield* send("DELETE", "/v2/messages", `{"filter":{"fromDate":0,"\\udbff":1}}`)
      assert.strictEqual(inKey.status, 400)
      assert.include(inKey.body.issues[0].problem, "the key holds an unpaired surrogate")
      assert.strictEqual(yield* countMessages, before)

      // A surrogate pair is one character (U+1F600): stored and delivered as its 4 UTF-8 bytes.
      const pair = yield* send("POST", "/v2/batch", `[{"destination":"${dest.baseUrl}/b","body":"a\\ud83d\\ude00"}]`)
      assert.strictEqual(pair.status, 201, JSON.stringify(pair.body))
      const stored = (yield* call(`/v2/messages/${pair.body[0].messageId}`)).body
      assert.strictEqual(Buffer.from(stored.body, "base64").toString("hex"), Buffer.from("a\u{1f600}", "utf8").toString("hex"))
    }))

  it.effect("a body nested 100,000 levels deep is a 400 naming the depth, not a 500 (it overflowed the stack), and the queue serves on", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const levels = 100_000
      const arrays = "[".repeat(levels) + "]".repeat(levels)
      const objects = "{\"a\":".repeat(levels) + "1" + "}".repeat(levels)
      const before = yield* countMessages
      for (
        const [method, path, body] of [
          ["POST", "/v2/batch", arrays],
          ["POST", "/v2/batch", `[{"destination":"${dest.baseUrl}/d","headers":${objects}}]`],
          ["POST", "/v2/queues", arrays],
          ["DELETE", "/v2/messages", `{"filter":{"url":${arrays}}}`],
          ["PATCH", "/v2/topics/deep", `{"headers":${objects}}`]
        ] as const
      ) {
        const answer = yield* send(method, path, body)
        const what = `${method} ${path} ${body.slice(0, 30)}`
        assert.strictEqual(answer.status, 400, `${what}: ${JSON.stringify(answer.body)}`)
        assert.include(answer.body.message, "nests arrays and objects more than 32 levels deep", what)
      }
      assert.strictEqual(yield* countMessages, before)
      assert.strictEqual((yield* call("/health", { token: null })).status, 200)
      assert.strictEqual((yield* publish(`${dest.baseUrl}/after`, { headers: { "Svc-Delay": "1h" } })).status, 201)
    }))

  it.effect("a JSON body over 1 MiB is 413 on every route without a cap of its own, declared or chunked; nothing changes", () =>
    Effect.gen(function*() {
      // valid JSON, 2 MiB of spaces before it: a 30 MB body was read whole and answered 200
      const padded = `${" ".repeat(2 * 1024 * 1024)}{"queueName":"big"}`
      for (const [method, path] of [["POST", "/v2/queues"], ["DELETE", "/v2/messages"], ["POST", "/v2/dlq/retry"]] as const) {
        const declared = yield* send(method, path, padded)
        assert.strictEqual(declared.status, 413, path)
        assert.strictEqual(declared.body.code, "request_too_large", path)
        assert.strictEqual(declared.body.message, "The request body is larger than 1048576 bytes, more than any queue request needs")
      }
      const chunked = yield* call("/v2/queues", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: new Blob([padded]).stream(),
        duplex: "half"
      } as RequestInit)
      assert.strictEqual(chunked.status, 413)
      assert.deepStrictEqual((yield* call("/v2/queues")).body.queues, [])
      // under the cap: served
      assert.strictEqual((yield* send("POST", "/v2/queues", `${" ".repeat(1000)}{"queueName":"small"}`)).status, 200)
    }))

  it.effect("a body of the wrong shape, or none, says what the route expects in the API's words", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [string, string, string, string]> = [
        ["DELETE", "/v2/messages", "", "is empty: expected a JSON object with messageIds, filter or both"],
        ["DELETE", "/v2/messages", "5", "expected a JSON object with messageIds, filter or both, got 5"],
        ["DELETE", "/v2/messages", "[]", "expected a JSON object with messageIds, filter or both, got []"],
        ["DELETE", "/v2/messages", "{\"filter\":5}", "expected a JSON object of filter fields"],
        ["POST", "/v2/dlq/retry", "null", "expected a JSON object with dlqIds, filter or both, got null"],
        ["POST", "/v2/queues", "\"q\"", "expected a JSON object with queueName and optionally parallelism"],
        ["POST", "/v2/topics/shape/endpoints", "{\"endpoints\":[\"https://example.com\"]}", "expected an endpoint, a JSON object with url"],
        ["POST", "/v2/batch", "[5]", "expected a message, a JSON object with destination"],
        ["POST", "/v2/batch", "", "is empty: expected a JSON array of messages"],
        ["POST", "/v2/batch", "{", "is not valid JSON"]
      ]
      for (const [method, path, body, problem] of cases) {
        const answer = yield* send(method, path, body)
        const what = `${method} ${path} ${body}`
        assert.strictEqual(answer.status, 400, what)
        assert.include(answer.body.message, problem, what)
        assert.notMatch(answer.body.message, /CancelMessagesRequest|DlqSelection|UpsertQueuePayload|EndpointInput|BatchElement|MessageFilter/, what)
      }
    }))
})
