/**
 * `POST /v2/batch` on a running queue (real Postgres, real HTTP on 127.0.0.1): all or nothing (a
 * batch with one bad element stores nothing and names every bad element by index), the element and
 * byte caps (before the body is read), URL groups fanning out inside a batch, byte-exact base64
 * bodies, FIFO queue elements, each element's publish headers, deduplication within a batch, and
 * the same through the typed client and the RPC.
 */
import { assert, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Http from "node:http"
import { QueueClient } from "../src/Client.ts"
import { QueueRpcClient } from "../src/RpcClient.ts"
import { call, Destination, queueLayer, QueueUrl, TOKEN, waitForMessage } from "./support.ts"

const countMessages = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ n: number }>`SELECT count(*)::int4 AS n FROM queue.messages WHERE kind = 'message'`
  return row!.n
})

const batch = (elements: unknown) =>
  call("/v2/batch", { method: "POST", body: JSON.stringify(elements), headers: { "content-type": "application/json" } })

/** A POST of `chunks` with no Content-Length (chunked), to see the cap hold while reading. */
const chunkedPost = (path: string, chunks: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const base = new URL(yield* QueueUrl)
    return yield* Effect.callback<{ status: number; body: any }>((resume) => {
      const request = Http.request({
        host: base.hostname,
        port: base.port,
        path,
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", "transfer-encoding": "chunked" }
      }, (response) => {
        const parts: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => parts.push(chunk))
        response.on("end", () => resume(Effect.succeed({ status: response.statusCode!, body: JSON.parse(Buffer.concat(parts).toString() || "null") })))
      })
      request.on("error", (error) => resume(Effect.die(error)))
      for (const chunk of chunks) request.write(chunk)
      request.end()
    })
  })

layer(queueLayer({ maxBatchMessages: 5, maxBatchBytes: 4096 }), { timeout: 120_000, excludeTestServices: true })("batch", (it) => {
  it.effect("stores nothing when any element is bad, and names each bad element by index", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const before = yield* countMessages
      const answer = yield* batch([
        { destination: `${dest.baseUrl}/ok`, body: "fine" },
        { destination: "not a url", body: "x" },
        { destination: `${dest.baseUrl}/ok`, headers: { "Svc-Retries": "many" } },
        { destination: `${dest.baseUrl}/ok`, body: "%%%", bodyEncoding: "base64" },
        { destination: `${dest.baseUrl}/ok`, headers: { "Svc-Retry-Delay": "eval(1)" } }
      ])
      assert.strictEqual(answer.status, 400, JSON.stringify(answer.body))
      assert.strictEqual(answer.body.code, "invalid_request")
      const parameters = answer.body.issues.map((issue: { parameter: string }) => issue.parameter)
      assert.deepStrictEqual(parameters, ["[1].destination", "[2].headers.Svc-Retries", "[3].body", "[4].headers.Svc-Retry-Delay"])
      assert.match(answer.body.message, /\[2\]\.headers\.Svc-Retries.*non-negative integer/)
      assert.match(answer.body.message, /\[3\]\.body.*base64/)
      assert.match(answer.body.message, /\[4\]\.headers\.Svc-Retry-Delay.*unknown name "eval"/)
      // A field the element does not have, or of the wrong type: named by its path too.
      const undecodable = yield* batch([{ destination: `${dest.baseUrl}/ok`, bodyEncoding: "hex" }, { destination: `${dest.baseUrl}/ok`, header: {} }])
      assert.strictEqual(undecodable.status, 400)
      assert.match(undecodable.body.message, /\[0\]\.bodyEncoding/)
      assert.match(undecodable.body.message, /\[1\]\.header/)
      for (const bad of [{}, "[", []]) {
        const refused = yield* call("/v2/batch", {
          method: "POST",
          body: typeof bad === "string" ? bad : JSON.stringify(bad),
          headers: { "content-type": "application/json" }
        })
        assert.strictEqual(refused.status, 400, JSON.stringify(bad))
      }
      assert.strictEqual(yield* countMessages, before)
      assert.strictEqual(dest.requests("/ok").length, 0)
      assert.strictEqual((yield* call("/v2/batch", { method: "POST", body: "[]", token: null })).status, 401)
    }))

  it.effect("an element's headers differing only in case are ambiguous: 400 naming both, nothing stored; the RPC too", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const before = yield* countMessages
      const answer = yield* batch([
        { destination: `${dest.baseUrl}/case`, headers: { "Svc-Delay": "1d", "Svc-Retries": "1" } },
        { destination: `${dest.baseUrl}/case`, headers: { "Svc-Delay": "1d", "svc-delay": "0s" } }
      ])
      assert.strictEqual(answer.status, 400, JSON.stringify(answer.body))
      assert.deepStrictEqual(answer.body.issues.map((issue: any) => issue.parameter), ["[1].headers.Svc-Delay"])
      assert.include(answer.body.issues[0].problem, "\"Svc-Delay\" and \"svc-delay\"")
      assert.strictEqual(yield* countMessages, before)

      const rpc = Context.get(yield* Layer.build(QueueRpcClient.layer({ baseUrl: yield* QueueUrl, token: TOKEN })), QueueRpcClient)
      const viaBatch = yield* Effect.flip(rpc.PublishBatch({ messages: [{ destination: `${dest.baseUrl}/case`, headers: { "SVC-RETRIES": "1", "svc-retries": "2" } }] }))
      assert.strictEqual(viaBatch._tag, "InvalidRequest")
      assert.match(viaBatch.message, /\[0\]\.headers\.SVC-RETRIES.*"SVC-RETRIES" and "svc-retries"/)
      const viaPublish = yield* Effect.flip(rpc.Publish({ destination: `${dest.baseUrl}/case`, headers: { "Svc-Forward-X-A": "1", "svc-forward-x-a": "2" } }))
      assert.strictEqual(viaPublish._tag, "InvalidRequest")
      assert.match(viaPublish.message, /Svc-Forward-X-A.*given twice/)
      const viaSchedule = yield* Effect.flip(rpc.AddSchedule({ destination: `${dest.baseUrl}/case`, cron: "0 0 1 1 *", headers: { "Svc-Retries": "1", "svc-Retries": "2" } }))
      assert.strictEqual(viaSchedule._tag, "InvalidRequest")
      assert.match(viaSchedule.message, /given twice/)
      // a name that is not ASCII but lowercases into ASCII (the Kelvin sign U+212A → k) is not a header name
      const kelvin = yield* batch([{ destination: `${dest.baseUrl}/case`, headers: { "Svc-Delay": "7d", "Svc-Forward-\u212a": "b" } }])
      assert.strictEqual(kelvin.status, 400, JSON.stringify(kelvin.body))
      assert.match(kelvin.body.message, /not a valid header name/)
      assert.strictEqual(yield* countMessages, before)
    }).pipe(Effect.scoped))

  it.effect("caps: more elements than QUEUE_MAX_BATCH_MESSAGES is 400, more bytes than QUEUE_MAX_BATCH_BYTES 413", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const before = yield* countMessages
      const six = Array.from({ length: 6 }, () => ({ destination: `${dest.baseUrl}/cap` }))
      const tooMany = yield* batch(six)
      assert.strictEqual(tooMany.status, 400)
      assert.match(tooMany.body.message, /6 messages, more than QUEUE_MAX_BATCH_MESSAGES \(5\)/)
      const tooBig = yield* batch([{ destination: `${dest.baseUrl}/cap`, body: "x".repeat(5000) }])
      assert.strictEqual(tooBig.status, 413)
      assert.strictEqual(tooBig.body.code, "batch_too_large")
      assert.match(tooBig.body.message, /QUEUE_MAX_BATCH_BYTES \(4096 bytes\)/)
      // Without a Content-Length the cap holds while reading.
      const chunked = yield* chunkedPost("/v2/batch", [`[{"destination":"${dest.baseUrl}/cap","body":"`, "y".repeat(3000), "y".repeat(3000), "\"}]"])
      assert.strictEqual(chunked.status, 413)
      assert.strictEqual(yield* countMessages, before)
    }))

  it.effect("a body that is not JSON by its Content-Type is 415 naming it, nothing stored; none at all is read as JSON", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const before = yield* countMessages
      const body = JSON.stringify([{ destination: `${dest.baseUrl}/typed` }])
      for (const type of ["text/plain", "application/x-www-form-urlencoded", "application/xml; charset=utf-8"]) {
        const refused = yield* call("/v2/batch", { method: "POST", body, headers: { "content-type": type } })
        assert.strictEqual(refused.status, 415, type)
        assert.strictEqual(refused.body.code, "unsupported_media_type", type)
        assert.include(refused.body.message, `${JSON.stringify(type.split(";")[0])} is not supported: send application/json`)
      }
      assert.strictEqual(yield* countMessages, before)
      const untyped = yield* call("/v2/batch", { method: "POST", body: new TextEncoder().encode(body) })
      assert.strictEqual(untyped.status, 201)
      assert.strictEqual((yield* call("/v2/batch", { method: "POST", body, headers: { "content-type": "application/json; charset=utf-8" } })).status, 201)
    }))

  it.effect("answers element i as a publish would, with every publish header per element; groups fan out", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const upserted = yield* call("/v2/topics/fan/endpoints", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ endpoints: [{ name: "a", url: `${dest.baseUrl}/fan-a` }, { url: `${dest.baseUrl}/fan-b` }] })
      })
      assert.strictEqual(upserted.status, 200)
      const answer = yield* batch([
        { destination: `${dest.baseUrl}/one?x=1`, body: "{\"n\":1}", headers: { "Content-Type": "application/json", "Svc-Retries": "7", "Svc-Forward-X-Trace": "t1", "Svc-Method": "PUT" } },
        { destination: "fan", body: "to the group" },
        { destination: `${dest.baseUrl}/later`, headers: { "svc-delay": "1h" } }
      ])
      assert.strictEqual(answer.status, 201, JSON.stringify(answer.body))
      const [one, group, later] = answer.body
      assert.isString(one.messageId)
      assert.isFalse(Array.isArray(one))
      assert.deepStrictEqual(group.map((entry: { url: string }) => entry.url), [`${dest.baseUrl}/fan-a`, `${dest.baseUrl}/fan-b`])
      assert.strictEqual(group[0].endpointName, "a")
      const [received] = yield* dest.waitFor("/one", 1)
      assert.strictEqual(received!.method, "PUT")
      assert.strictEqual(received!.url, "/one?x=1")
      assert.strictEqual(received!.headers["x-trace"], "t1")
      assert.strictEqual(received!.headers["content-type"], "application/json")
      assert.strictEqual(received!.body.toString(), "{\"n\":1}")
      assert.strictEqual((yield* call(`/v2/messages/${one.messageId}`)).body.maxRetries, 7)
      for (const path of ["/fan-a", "/fan-b"]) assert.strictEqual((yield* dest.waitFor(path, 1))[0]!.body.toString(), "to the group")
      const waiting = (yield* call(`/v2/messages/${later.messageId}`)).body
      assert.approximately(waiting.notBefore - waiting.createdAt, 3_600_000, 1000)
    }))

  it.effect("callbacks, flow control and the retry-delay expression work per element", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      dest.on("/cb-flaky", (_, n) => (n === 1 ? { status: 500 } : {}))
      const answer = yield* batch([
        { destination: `${dest.baseUrl}/cb-target`, body: "with callback", headers: { "Svc-Callback": `${dest.baseUrl}/cb-done` } },
        {
          destination: `${dest.baseUrl}/cb-flaky`,
          headers: { "Svc-Flow-Control-Key": "batch-key", "Svc-Flow-Control-Value": "parallelism=2", "Svc-Retry-Delay": "1500" }
        }
      ])
      assert.strictEqual(answer.status, 201, JSON.stringify(answer.body))
      const [callback] = yield* dest.waitFor("/cb-done", 1)
      const callbackBody = JSON.parse(callback!.body.toString())
      assert.strictEqual(callbackBody.sourceMessageId, answer.body[0].messageId)
      assert.strictEqual(Buffer.from(callbackBody.sourceBody, "base64").toString(), "with callback")
      const flow = yield* call("/v2/flow-control/batch-key")
      assert.strictEqual(flow.status, 200)
      assert.strictEqual(flow.body.parallelism, 2)
      const attempts = yield* dest.waitFor("/cb-flaky", 2)
      assert.isAtLeast(attempts[1]!.at - attempts[0]!.at, 1450)
    }))

  it.effect("delivers base64 bodies byte-exact and utf8 bodies as their UTF-8 bytes", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i))
      const answer = yield* batch([
        { destination: `${dest.baseUrl}/bytes`, body: bytes.toString("base64"), bodyEncoding: "base64", headers: { "content-type": "application/octet-stream" } },
        { destination: `${dest.baseUrl}/text`, body: "grüße \u0000 ✓" }
      ])
      assert.strictEqual(answer.status, 201, JSON.stringify(answer.body))
      const [received] = yield* dest.waitFor("/bytes", 1)
      assert.isTrue(received!.body.equals(bytes))
      assert.isTrue((yield* dest.waitFor("/text", 1))[0]!.body.equals(Buffer.from("grüße \u0000 ✓", "utf8")))
    }))

  it.effect("queue elements go to their FIFO queue and are delivered in batch order", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const answer = yield* batch(["1", "2", "3", "4"].map((n) => ({ destination: `${dest.baseUrl}/fifo`, body: n, queue: "batch-q" })))
      assert.strictEqual(answer.status, 201, JSON.stringify(answer.body))
      const received = yield* dest.waitFor("/fifo", 4)
      assert.deepStrictEqual(received.map((r) => r.body.toString()), ["1", "2", "3", "4"])
      const queue = yield* call("/v2/queues/batch-q")
      assert.strictEqual(queue.status, 200)
      assert.strictEqual(queue.body.parallelism, 1)
      const badQueue = yield* batch([{ destination: `${dest.baseUrl}/fifo`, queue: "no spaces" }])
      assert.strictEqual(badQueue.status, 400)
      assert.match(badQueue.body.message, /\[0\]\.queue/)
    }))

  it.effect("deduplication ids hold within a batch and against earlier publishes", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const first = yield* batch([
        { destination: `${dest.baseUrl}/dedup`, body: "a", headers: { "Svc-Deduplication-Id": "batch-d1" } },
        { destination: `${dest.baseUrl}/dedup`, body: "b", headers: { "Svc-Deduplication-Id": "batch-d1" } },
        { destination: `${dest.baseUrl}/dedup`, body: "c", headers: { "Svc-Content-Based-Deduplication": "true" } }
      ])
      assert.strictEqual(first.status, 201, JSON.stringify(first.body))
      assert.isUndefined(first.body[0].deduplicated)
      assert.deepStrictEqual(first.body[1], { messageId: first.body[0].messageId, deduplicated: true })
      const again = yield* batch([
        { destination: `${dest.baseUrl}/dedup`, body: "c", headers: { "Svc-Content-Based-Deduplication": "true" } },
        { destination: `${dest.baseUrl}/dedup`, body: "d", headers: { "Svc-Deduplication-Id": "batch-d1" } },
        { destination: `${dest.baseUrl}/dedup`, body: "e" }
      ])
      assert.strictEqual(again.status, 201, JSON.stringify(again.body))
      assert.deepStrictEqual(again.body[0], { messageId: first.body[2].messageId, deduplicated: true })
      assert.deepStrictEqual(again.body[1], { messageId: first.body[0].messageId, deduplicated: true })
      assert.isUndefined(again.body[2].deduplicated)
      yield* dest.waitFor("/dedup", 3)
      yield* waitForMessage(again.body[2].messageId, (m) => m.state === "delivered")
      assert.deepStrictEqual(dest.requests("/dedup").map((r) => r.body.toString()).sort(), ["a", "c", "e"])
    }))

  it.effect("the typed client and the RPC publish batches too", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const baseUrl = yield* QueueUrl
      const client = Context.get(yield* Layer.build(QueueClient.layer({ baseUrl, token: TOKEN })), QueueClient)
      const published = yield* client.batch([
        { destination: `${dest.baseUrl}/client`, body: new Uint8Array([0, 255, 1]), retries: 2 },
        { destination: `${dest.baseUrl}/client`, body: "text", queue: "client-q" }
      ])
      assert.strictEqual(published.length, 2)
      const received = yield* dest.waitFor("/client", 2)
      assert.isTrue(received.some((r) => r.body.equals(Buffer.from([0, 255, 1]))))
      // Raw headers win over the options in any case of their names: one header each, which the queue accepts.
      const [raw] = yield* client.batch([
        { destination: `${dest.baseUrl}/client-raw`, body: new Uint8Array([1]), retries: 1, delay: "1h", headers: { "Content-Type": "image/png", "svc-retries": "4" } }
      ])
      const rawMessage = (yield* call(`/v2/messages/${(raw as { messageId: string }).messageId}`)).body
      assert.strictEqual(rawMessage.header["content-type"], "image/png")
      assert.strictEqual(rawMessage.maxRetries, 4)
      const refused = yield* Effect.flip(client.batch([{ destination: "nowhere at all" }]))
      assert.strictEqual(refused.status, 400)
      assert.match(refused.message, /\[0\]\.destination/)
      // A destination is one encoded path segment: its '..' belongs to the URL published to (which the
      // queue resolves as a URL parser does), never to the request's route.
      const dotted = yield* client.publish({ destination: `${dest.baseUrl}/a/../../../../v2/keys/rotate`, body: "d" })
      const dottedId = (dotted as { readonly messageId: string }).messageId
      assert.strictEqual((yield* call(`/v2/messages/${dottedId}`)).body.url, `${dest.baseUrl}/v2/keys/rotate`)
      const steered = yield* Effect.flip(client.publish({ destination: ".." }))
      assert.deepInclude(steered, { status: 0, code: "invalid_request" })
      assert.match(steered.message, /^destination: "\.\." is not a name or URL/)

      const rpc = Context.get(yield* Layer.build(QueueRpcClient.layer({ baseUrl, token: TOKEN })), QueueRpcClient)
      const viaRpc = yield* rpc.PublishBatch({ messages: [{ destination: `${dest.baseUrl}/rpc`, body: "AAE=", bodyEncoding: "base64" }] })
      assert.strictEqual(viaRpc.length, 1)
      assert.isTrue((yield* dest.waitFor("/rpc", 1))[0]!.body.equals(Buffer.from([0, 1])))
      const rpcRefused = yield* Effect.flip(rpc.PublishBatch({ messages: [{ destination: `${dest.baseUrl}/rpc`, headers: { "Svc-Delay": "soon" } }] }))
      assert.strictEqual(rpcRefused._tag, "InvalidRequest")
      assert.match(rpcRefused.message, /\[0\]\.headers\.Svc-Delay/)
      const rpcTooBig = yield* Effect.flip(rpc.PublishBatch({ messages: [{ destination: `${dest.baseUrl}/rpc`, body: "z".repeat(5000) }] }))
      assert.strictEqual(rpcTooBig._tag, "BatchTooLarge")
      // A text body UTF-8 cannot carry (an unpaired surrogate) would be stored as U+FFFD: refused as over HTTP.
      const rpcLone = yield* Effect.flip(rpc.PublishBatch({ messages: [{ destination: `${dest.baseUrl}/rpc`, body: "a\ud800" }] }))
      assert.strictEqual(rpcLone._tag, "InvalidRequest")
      assert.match(rpcLone.message, /\[0\]\.body.*unpaired surrogate/)
    }).pipe(Effect.scoped))
})

layer(queueLayer({ maxMessageBytes: 16 }), { timeout: 120_000, excludeTestServices: true })("batch, small messages", (it) => {
  it.effect("an element body over QUEUE_MAX_MESSAGE_BYTES is a 400 naming it, in one sentence", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const answer = yield* batch([{ destination: `${dest.baseUrl}/small`, body: "x".repeat(16) }, { destination: `${dest.baseUrl}/small`, body: "x".repeat(17) }])
      assert.strictEqual(answer.status, 400, JSON.stringify(answer.body))
      assert.deepStrictEqual(answer.body.issues, [
        { in: "body", parameter: "[1].body", problem: "is larger than QUEUE_MAX_MESSAGE_BYTES (16 bytes)" }
      ])
      assert.strictEqual(yield* countMessages, 0)
    }))
})
