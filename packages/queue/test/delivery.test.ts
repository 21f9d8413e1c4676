/**
 * Delivery: retries on the exponential schedule, Retry-After, exhaustion into the DLQ with the
 * failure callback, callbacks field by field, callback retries, URL groups with default headers,
 * signatures (Receiver, tampering, rotation), the typed client, several workers on one database.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Duration, Effect, Layer, Schedule } from "effect"
import { FetchHttpClient } from "effect/http"
import * as Crypto from "node:crypto"
import { QueueClient } from "../src/Client.ts"
import { Receiver, sign } from "../src/Signature.ts"
import * as Worker from "../src/Worker.ts"
import { call, Destination, publish, queueLayer, QueueUrl, TOKEN, waitForMessage } from "./support.ts"

const b64 = (text: string) => Buffer.from(text).toString("base64")
const json = (buffer: Buffer) => JSON.parse(buffer.toString()) as Record<string, any>

describe("retry schedule", () => {
  it.effect("delays come from an exponential Schedule, doubling, capped", () =>
    Effect.gen(function*() {
      const schedule = Worker.retrySchedule(Duration.millis(100), Duration.millis(500))
      const delays = []
      for (let attempt = 0; attempt < 5; attempt++) delays.push(yield* Worker.scheduleDelay(schedule, attempt))
      assert.deepStrictEqual(delays, [100, 200, 400, 500, 500])
      const plain = yield* Worker.scheduleDelay(Schedule.exponential("1 second") as any, 2)
      assert.strictEqual(plain, 4000)
    }))
})

describe("Receiver", () => {
  it.effect("accepts a genuine signature and rejects tampering", () =>
    Effect.gen(function*() {
      const receiver = new Receiver({ currentSigningKey: "sig_current", nextSigningKey: "sig_next" })
      const body = new TextEncoder().encode("{\"a\":1}")
      const signature = sign("sig_current", { url: "https://example.com/hook", body })
      const claims = yield* receiver.verify({ signature, body, url: "https://example.com/hook" })
      assert.strictEqual(claims.iss, "Svc")
      assert.strictEqual(claims.sub, "https://example.com/hook")
      const nextSigned = sign("sig_next", { url: "u", body })
      assert.isTrue(yield* Effect.promise(() => receiver.isValid({ signature: nextSigned, body })))
      const reasons = []
      for (const request of [
        { signature, body: "{\"a\":2}" },
        { signature, body, url: "https://example.com/other" },
        { signature: sign("sig_other", { url: "https://example.com/hook", body }), body },
        { signature: sign("sig_current", { url: "u", body, now: Date.now() - 3_600_000 }), body },
        { signature: sign("sig_current", { url: "u", body, now: Date.now() + 3_600_000 }), body },
        { signature: "garbage", body }
      ]) {
        reasons.push((yield* Effect.flip(receiver.verify(request))).reason)
      }
      assert.deepStrictEqual(reasons, ["wrong_body", "wrong_url", "bad_signature", "expired", "not_yet_valid", "malformed"])
    }))

  it.effect("the signature is the documented HS256 JWT: a receiver checking it by hand (README) accepts it", () =>
    Effect.gen(function*() {
      const body = new TextEncoder().encode("byte-exact body")
      const now = Date.now()
      const signature = sign("sig_current", { url: "https://example.com/hook", body, now })
      const [header, payload, mac] = signature.split(".") as [string, string, string]
      const decode = (part: string) => JSON.parse(Buffer.from(part, "base64url").toString())
      assert.deepStrictEqual(decode(header), { alg: "HS256", typ: "JWT" })
      const claims = decode(payload)
      assert.deepStrictEqual(Object.keys(claims).sort(), ["body", "exp", "iat", "iss", "jti", "nbf", "sub"])
      const iat = Math.floor(now / 1000)
      assert.deepInclude(claims, { iss: "Svc", sub: "https://example.com/hook", iat, nbf: iat, exp: iat + 300 })
      assert.strictEqual(claims.body, Crypto.createHash("sha256").update(body).digest("base64url"))
      assert.strictEqual(Crypto.createHmac("sha256", "sig_current").update(`${header}.${payload}`).digest("base64url"), mac)
    }))
})

layer(queueLayer(), { timeout: 120_000, excludeTestServices: true })("delivery", (it) => {
  it.effect("a destination failing twice then succeeding: retried on the schedule with Svc-Retried", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      dest.on("/flaky", (_, n) => n <= 2 ? { status: 500, body: "down" } : { status: 200 })
      const published = yield* publish(`${dest.baseUrl}/flaky`)
      const attempts = yield* dest.waitFor("/flaky", 3)
      assert.deepStrictEqual(attempts.map((a) => a.headers["svc-retried"]), ["0", "1", "2"])
      const gap1 = attempts[1]!.at - attempts[0]!.at
      const gap2 = attempts[2]!.at - attempts[1]!.at
      // QUEUE_RETRY_BASE 100 ms in these tests: 100 ms then 200 ms.
      assert.isAtLeast(gap1, 90)
      assert.isAtLeast(gap2, 190)
      assert.isBelow(gap1, 800)
      assert.isBelow(gap2, 900)
      const message = yield* waitForMessage(published.body.messageId, (m) => m.state === "delivered")
      assert.strictEqual(message.retried, 2)
      assert.strictEqual(message.lastStatus, 200)
    }))

  it.effect("honours the destination's Retry-After", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      dest.on("/busy", (_, n) => n === 1 ? { status: 429, headers: { "retry-after": "1" } } : {})
      yield* publish(`${dest.baseUrl}/busy`)
      const attempts = yield* dest.waitFor("/busy", 2)
      assert.isAtLeast(attempts[1]!.at - attempts[0]!.at, 950)
    }))

  it.effect("success with Svc-Callback: the callback body, field by field", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      dest.on("/answer", () => ({ status: 201, headers: { "x-answer": "42", "x-hop": "1", connection: "keep-alive, X-Hop" }, body: "created!" }))
      const published = yield* publish(`${dest.baseUrl}/answer`, {
        body: "{\"order\":1}",
        headers: {
          "content-type": "application/json",
          "Svc-Callback": `${dest.baseUrl}/callback`,
          "Svc-Callback-Forward-X-Cb-Secret": "s3",
          "Svc-Forward-X-Src": "src",
          "Svc-Retries": "4"
        }
      })
      const [callback] = yield* dest.waitFor("/callback", 1)
      const body = json(callback!.body)
      const source = (yield* call(`/v2/messages/${published.body.messageId}`)).body
      assert.strictEqual(callback!.method, "POST")
      assert.strictEqual(callback!.headers["content-type"], "application/json")
      assert.strictEqual(callback!.headers["x-cb-secret"], "s3")
      assert.isString(callback!.headers["svc-signature"])
      assert.strictEqual(body.status, 201)
      assert.deepStrictEqual(body.header["x-answer"], ["42"])
      // hop-by-hop headers described the connection, not the answer (and X-Hop was named by Connection)
      for (const name of ["connection", "keep-alive", "transfer-encoding", "x-hop"]) assert.notProperty(body.header, name)
      assert.strictEqual(body.body, b64("created!"))
      assert.strictEqual(body.retried, 0)
      assert.strictEqual(body.maxRetries, 4)
      assert.strictEqual(body.sourceMessageId, published.body.messageId)
      assert.strictEqual(body.url, `${dest.baseUrl}/answer`)
      assert.strictEqual(body.method, "POST")
      assert.deepStrictEqual(body.sourceHeader, { "content-type": "application/json", "x-src": "src" })
      assert.strictEqual(body.sourceBody, b64("{\"order\":1}"))
      assert.strictEqual(body.notBefore, String(source.notBefore))
      assert.strictEqual(body.createdAt, String(source.createdAt))
      assert.match(body.callerIP, /127\.0\.0\.1/)
      assert.isUndefined(body.topicName)
      assert.isUndefined(body.endpointName)
      assert.isUndefined(body.dlqId)
      assert.isUndefined(body.scheduleId)
      // The callback is a message of its own.
      const cbMessage = (yield* call(`/v2/messages/${callback!.headers["svc-message-id"]}`)).body
      assert.strictEqual(cbMessage.kind, "callback")
    }))

  it.effect("the callback is retried until the callback endpoint answers 2xx", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      dest.on("/cb-flaky", (_, n) => n <= 2 ? { status: 503 } : {})
      yield* publish(`${dest.baseUrl}/cb-src`, {
        headers: { "Svc-Callback": `${dest.baseUrl}/cb-flaky`, "Svc-Callback-Retries": "3" }
      })
      const attempts = yield* dest.waitFor("/cb-flaky", 3)
      assert.deepStrictEqual(attempts.map((a) => a.headers["svc-retried"]), ["0", "1", "2"])
      const id = attempts[0]!.headers["svc-message-id"] as string
      const message = yield* waitForMessage(id, (m) => m.state === "delivered")
      assert.strictEqual(message.retried, 2)
      assert.strictEqual(message.maxRetries, 3)
    }))

  it.effect("every retry used: DLQ, callback with retried == maxRetries, failure callback with dlqId", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      dest.on("/down", () => ({ status: 500, body: "still down" }))
      const published = yield* publish(`${dest.baseUrl}/down`, {
        body: "payload",
        headers: {
          "Svc-Retries": "2",
          "Svc-Callback": `${dest.baseUrl}/down-cb`,
          "Svc-Failure-Callback": `${dest.baseUrl}/down-fcb`,
          "Svc-Failure-Callback-Forward-X-F": "f"
        }
      })
      const attempts = yield* dest.waitFor("/down", 3)
      assert.strictEqual(attempts.length, 3)
      const [failure] = yield* dest.waitFor("/down-fcb", 1)
      const [callback] = yield* dest.waitFor("/down-cb", 1)
      const fbody = json(failure!.body)
      const cbody = json(callback!.body)
      assert.strictEqual(failure!.headers["x-f"], "f")
      assert.strictEqual(cbody.retried, 2)
      assert.strictEqual(cbody.maxRetries, 2)
      assert.strictEqual(cbody.status, 500)
      assert.isUndefined(cbody.dlqId)
      assert.strictEqual(fbody.retried, fbody.maxRetries)
      assert.strictEqual(fbody.status, 500)
      assert.strictEqual(fbody.body, b64("still down"))
      assert.strictEqual(fbody.sourceBody, b64("payload"))
      assert.strictEqual(fbody.sourceMessageId, published.body.messageId)
      assert.isString(fbody.dlqId)
      const message = yield* waitForMessage(published.body.messageId, (m) => m.state === "failed")
      assert.strictEqual(message.dlqId, fbody.dlqId)

      // The DLQ: get, list with filters, retry, delete.
      const entry = yield* call(`/v2/dlq/${fbody.dlqId}`)
      assert.strictEqual(entry.status, 200)
      assert.strictEqual(entry.body.messageId, published.body.messageId)
      assert.strictEqual(entry.body.responseStatus, 500)
      assert.strictEqual(entry.body.responseBody, b64("still down"))
      assert.strictEqual(entry.body.body, b64("payload"))
      const byUrl = yield* call(`/v2/dlq?url=${encodeURIComponent(`${dest.baseUrl}/down`)}`)
      assert.deepStrictEqual(byUrl.body.messages.map((m: any) => m.dlqId), [fbody.dlqId])
      const byStatus = yield* call(`/v2/dlq?responseStatus=404`)
      assert.strictEqual(byStatus.body.messages.length, 0)
      assert.strictEqual((yield* call(`/v2/dlq?limit=abc`)).status, 400)

      dest.on("/down", () => ({ status: 200 }))
      const retried = yield* call(`/v2/dlq/${fbody.dlqId}/retry`, { method: "POST" })
      assert.strictEqual(retried.status, 200)
      assert.strictEqual(retried.body.messageId, published.body.messageId)
      yield* dest.waitFor("/down", 4)
      yield* waitForMessage(published.body.messageId, (m) => m.state === "delivered")
      assert.strictEqual((yield* call(`/v2/dlq/${fbody.dlqId}`)).status, 404)
    }))

  it.effect("DLQ pages and delete", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      dest.on("/gone", () => ({ status: 410 }))
      for (let i = 0; i < 3; i++) yield* publish(`${dest.baseUrl}/gone`, { headers: { "Svc-Retries": "0" } })
      yield* dest.waitFor("/gone", 3)
      const all = yield* waitForDlq(`/v2/dlq?url=${encodeURIComponent(`${dest.baseUrl}/gone`)}&limit=100`, 3)
      const first = yield* call(`/v2/dlq?url=${encodeURIComponent(`${dest.baseUrl}/gone`)}&limit=2`)
      assert.strictEqual(first.body.messages.length, 2)
      assert.isString(first.body.cursor)
      const second = yield* call(`/v2/dlq?url=${encodeURIComponent(`${dest.baseUrl}/gone`)}&limit=2&cursor=${first.body.cursor}`)
      assert.strictEqual(second.body.messages.length, 1)
      assert.isUndefined(second.body.cursor)
      assert.deepStrictEqual(
        [...first.body.messages, ...second.body.messages].map((m: any) => m.dlqId),
        all.map((m: any) => m.dlqId)
      )
      const deleted = yield* call(`/v2/dlq/${all[0].dlqId}`, { method: "DELETE" })
      assert.strictEqual(deleted.status, 204)
      assert.strictEqual((yield* call(`/v2/dlq/${all[0].dlqId}`)).status, 404)
      assert.strictEqual((yield* call(`/v2/dlq/${all[0].dlqId}`, { method: "DELETE" })).status, 404)
    }))

  it.effect("URL groups: upsert, default headers, fan-out, get/list/remove/delete", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const upserted = yield* call("/v2/topics/orders/endpoints", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ endpoints: [{ name: "billing", url: `${dest.baseUrl}/billing` }, { url: `${dest.baseUrl}/audit` }] })
      })
      assert.strictEqual(upserted.status, 200, JSON.stringify(upserted.body))
      assert.deepStrictEqual(upserted.body.endpoints, [{ name: "billing", url: `${dest.baseUrl}/billing` }, { url: `${dest.baseUrl}/audit` }])
      const patched = yield* call("/v2/topics/orders", {
        method: "PATCH",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ headers: { "X-Team": ["a", "b"], "Svc-Retries": "6", "Svc-Forward-X-Env": "prod" } })
      })
      assert.strictEqual(patched.status, 200, JSON.stringify(patched.body))
      const bad = yield* call("/v2/topics/orders", {
        method: "PATCH",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ headers: { "Svc-Delay": "soon" } })
      })
      assert.strictEqual(bad.status, 400)
      assert.strictEqual(bad.body.issues[0].parameter, "headers.Svc-Delay")

      dest.on("/billing", () => ({ body: "billed" }))
      const published = yield* publish("orders", { body: "order!", headers: { "Svc-Callback": `${dest.baseUrl}/orders-cb` } })
      assert.strictEqual(published.status, 201)
      assert.isArray(published.body)
      assert.strictEqual(published.body.length, 2)
      assert.deepStrictEqual(published.body.map((p: any) => p.endpointName), ["billing", undefined])
      const [billing] = yield* dest.waitFor("/billing", 1)
      const [audit] = yield* dest.waitFor("/audit", 1)
      for (const received of [billing!, audit!]) {
        assert.strictEqual(received.body.toString(), "order!")
        assert.strictEqual(received.headers["x-team"], "a, b")
        assert.strictEqual(received.headers["x-env"], "prod")
        assert.strictEqual(received.headers["svc-topic-name"], "orders")
      }
      const messages = yield* Effect.forEach(published.body, (p: any) => call(`/v2/messages/${p.messageId}`))
      assert.deepStrictEqual(messages.map((m) => m.body.maxRetries), [6, 6])
      const callbacks = yield* dest.waitFor("/orders-cb", 2)
      const bodies = callbacks.map((c) => json(c.body))
      assert.deepStrictEqual(bodies.map((b) => b.topicName), ["orders", "orders"])
      assert.deepStrictEqual(bodies.map((b) => b.endpointName ?? null).sort(), ["billing", null])

      const list = yield* call("/v2/topics")
      assert.include(list.body.topics.map((t: any) => t.name), "orders")
      const removed = yield* call("/v2/topics/orders/endpoints", {
        method: "DELETE",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ endpoints: [{ name: "billing" }] })
      })
      assert.deepStrictEqual(removed.body.endpoints, [{ url: `${dest.baseUrl}/audit` }])
      assert.strictEqual((yield* call("/v2/topics/orders", { method: "DELETE" })).status, 204)
      assert.strictEqual((yield* call("/v2/topics/orders")).status, 404)
      assert.strictEqual((yield* publish("orders")).status, 400)
    }))

  it.effect("signatures: Receiver verifies deliveries; tampering fails; rotation keeps receivers working", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const keys = (yield* call("/v2/keys")).body
      const receiver = new Receiver({ currentSigningKey: keys.current, nextSigningKey: keys.next })
      yield* publish(`${dest.baseUrl}/signed`, { body: "signed body" })
      const [delivery] = yield* dest.waitFor("/signed", 1)
      const signature = delivery!.headers["svc-signature"] as string
      const claims = yield* receiver.verify({ signature, body: delivery!.body, url: `${dest.baseUrl}/signed` })
      assert.strictEqual(claims.sub, `${dest.baseUrl}/signed`)
      assert.isFalse(yield* Effect.promise(() => receiver.isValid({ signature, body: "tampered body" })))

      const rotated = (yield* call("/v2/keys/rotate", { method: "POST" })).body
      assert.strictEqual(rotated.current, keys.next)
      assert.notStrictEqual(rotated.next, keys.next)
      yield* Effect.sleep("1100 millis") // the worker's key cache
      yield* publish(`${dest.baseUrl}/signed-after`, { body: "after rotation" })
      const [after] = yield* dest.waitFor("/signed-after", 1)
      const afterSignature = after!.headers["svc-signature"] as string
      // A receiver still holding the old pair (its "next" is the new current) and one with the new pair.
      assert.isTrue(yield* Effect.promise(() => receiver.isValid({ signature: afterSignature, body: after!.body })))
      assert.isTrue(yield* Effect.promise(() => new Receiver({ currentSigningKey: rotated.current, nextSigningKey: rotated.next }).isValid({ signature: afterSignature, body: after!.body })))
      assert.isFalse(yield* Effect.promise(() => new Receiver({ currentSigningKey: "sig_x", nextSigningKey: "sig_y" }).isValid({ signature: afterSignature, body: after!.body })))
    }))

  it.effect("typed client: publish, publishJSON, DLQ and groups from the shared definition", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const baseUrl = yield* QueueUrl
      const client = yield* QueueClient.make({ baseUrl, token: TOKEN }).pipe(Effect.provide(ClientHttp))
      const result = yield* client.publishJSON({ destination: `${dest.baseUrl}/typed`, body: { hello: "world" }, retries: 1, forward: { "X-Typed": "1" } })
      assert.isFalse(Array.isArray(result))
      const [received] = yield* dest.waitFor("/typed", 1)
      assert.deepStrictEqual(json(received!.body), { hello: "world" })
      assert.strictEqual(received!.headers["content-type"], "application/json")
      assert.strictEqual(received!.headers["x-typed"], "1")
      const failed = yield* Effect.flip(client.publish({ destination: `${dest.baseUrl}/typed`, delay: "soon" }))
      assert.strictEqual(failed.status, 400)
      assert.strictEqual(failed.code, "invalid_request")
      const topic = yield* client.api.topics.upsertEndpoints({ params: { name: "typed" }, payload: { endpoints: [{ url: `${dest.baseUrl}/typed-group` }] } })
      assert.strictEqual(topic.endpoints.length, 1)
      const fanned = yield* client.publish({ destination: "typed", body: "x" })
      assert.isTrue(Array.isArray(fanned))
      yield* dest.waitFor("/typed-group", 1)
      const page = yield* client.api.dlq.list({ query: {} })
      assert.isArray(page.messages)
      const missing = yield* Effect.flip(client.api.messages.get({ params: { messageId: "00000000-0000-0000-0000-000000000000" } }))
      assert.strictEqual((missing as any).code, "message_not_found")
    }))

  it.effect("several workers on one database deliver each message once in the normal case", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      // Two more workers in this process (three in all), claiming from the same database.
      yield* Layer.build(Layer.mergeAll(Worker.layer, Worker.layer.pipe(Layer.fresh)))
      const ids = []
      for (let i = 0; i < 60; i++) ids.push((yield* publish(`${dest.baseUrl}/multi`, { body: String(i) })).body.messageId)
      const received = yield* dest.waitFor("/multi", 60)
      yield* Effect.sleep("300 millis")
      assert.strictEqual(dest.requests("/multi").length, 60)
      assert.deepStrictEqual(new Set(received.map((r) => r.body.toString())).size, 60)
      for (const id of ids.slice(0, 5)) yield* waitForMessage(id, (m) => m.state === "delivered")
    }))
})

const ClientHttp = FetchHttpClient.layer

const waitForDlq = (path: string, count: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < 200; i++) {
      const page = yield* call(path)
      if (page.body.messages.length >= count) return page.body.messages
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.die(new Error(`DLQ did not reach ${count}`))
  })
