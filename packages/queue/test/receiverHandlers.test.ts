/**
 * The receiver helpers of `@svc/queue/client` with real deliveries from a running queue (HTTP +
 * worker on 127.0.0.1, a fresh database): `verifySignatureNode` as a node:http server the queue
 * delivers to, `verifySignatureFetch` on a Request rebuilt from a delivery the queue made; both
 * refuse a tampered body, a missing signature and (with `url`) a signature for another URL, with
 * `401 invalid_signature` and without calling the handler; a body over `maxBodyBytes` is `413`.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as Http from "node:http"
import * as Net from "node:net"
import { QueueClient, Receiver, type SignatureClaims, type VerifyRequest, verifySignatureFetch, verifySignatureNode } from "../src/promise/index.ts"
import { sign } from "../src/Signing.ts"
import { call, Destination, poll, publish, queueLayer } from "./support.ts"

interface Handled {
  readonly path: string
  readonly body: Buffer
  readonly claims: SignatureClaims
  readonly signature: string
}

/** A node:http server behind `verifySignatureNode`, on 127.0.0.1; what its handler saw. */
const nodeReceiver = (keys: { readonly current: string; readonly next: string }) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const handled: Array<Handled> = []
      const errors: Array<unknown> = []
      let base = ""
      const server = Http.createServer(verifySignatureNode((req, res, body, claims) => {
        if (req.url === "/throws") throw new Error("handler bug")
        handled.push({ path: req.url ?? "", body, claims, signature: String(req.headers["svc-signature"]) })
        res.writeHead(200).end("ok")
      }, {
        currentSigningKey: keys.current,
        nextSigningKey: keys.next,
        url: (req) => `${base}${req.url}`,
        onError: (error) => errors.push(error)
      }))
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      base = `http://127.0.0.1:${(server.address() as Net.AddressInfo).port}`
      return { base, handled, errors, server }
    }),
    ({ server }) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          server.closeAllConnections()
          server.close(() => resolve())
        })
      )
  )

const post = (url: string, body: string | Buffer, headers: Record<string, string>) =>
  Effect.promise(async () => {
    const response = await fetch(url, { method: "POST", body: body as BodyInit, headers })
    return { status: response.status, body: await response.json() as { code: string; message: string; reason?: string } }
  })

layer(queueLayer(), { timeout: 120_000, excludeTestServices: true })("receiver helpers", (it) => {
  it.effect("verifySignatureNode: a real delivery reaches the handler with its raw body; tampering, no signature, another URL are 401", () =>
    Effect.gen(function*() {
      const keys = (yield* call("/v2/keys")).body
      const receiver = yield* nodeReceiver(keys)
      const body = Buffer.from([0x7b, 0x22, 0x6f, 0x22, 0x3a, 0x34, 0x32, 0x7d, 0xff, 0x00]) // JSON-ish, then bytes
      const published = yield* publish(`${receiver.base}/orders?id=7`, { body: new Uint8Array(body) })
      assert.strictEqual(published.status, 201)
      yield* poll(Effect.sync(() => receiver.handled.length), (n) => n === 1, "20 seconds", () => "the delivery")
      const [delivery] = receiver.handled
      assert.deepStrictEqual([...delivery!.body], [...body])
      assert.strictEqual(delivery!.claims.sub, `${receiver.base}/orders?id=7`)
      assert.strictEqual(delivery!.claims.iss, "Svc")

      const tampered = yield* post(`${receiver.base}/orders?id=7`, Buffer.from("{\"o\":43}"), { "svc-signature": delivery!.signature })
      assert.deepStrictEqual(tampered, {
        status: 401,
        body: { code: "invalid_signature", message: "The body does not match the signature", reason: "wrong_body" }
      })
      const unsigned = yield* post(`${receiver.base}/orders?id=7`, body, {})
      assert.deepStrictEqual(unsigned, {
        status: 401,
        body: { code: "invalid_signature", message: "The request has no Svc-Signature header", reason: "malformed" }
      })
      const elsewhere = yield* post(`${receiver.base}/admin`, body, { "svc-signature": delivery!.signature })
      assert.deepStrictEqual(elsewhere, {
        status: 401,
        body: { code: "invalid_signature", message: "The signature was made for another URL", reason: "wrong_url" }
      })
      const forged = yield* post(`${receiver.base}/orders?id=7`, body, { "svc-signature": `${delivery!.signature.slice(0, -4)}AAAA` })
      assert.strictEqual(forged.status, 401)
      assert.strictEqual(forged.body.reason, "bad_signature")
      assert.strictEqual(receiver.handled.length, 1, "no refused request reached the handler")

      // The replayed genuine request is accepted (a receiver deduplicates by Svc-Message-Id).
      const replay = yield* Effect.promise(() =>
        fetch(`${receiver.base}/orders?id=7`, { method: "POST", body, headers: { "svc-signature": delivery!.signature } })
      )
      assert.strictEqual(replay.status, 200)

      // A handler that throws: 500 for the queue (which retries), the error to onError.
      const throws = yield* publish(`${receiver.base}/throws`, { body: "x", headers: { "Svc-Retries": "0" } })
      assert.strictEqual(throws.status, 201)
      const failed = yield* poll(
        Effect.map(call(`/v2/messages/${throws.body.messageId}`), (r) => r.body),
        (m) => m.state === "failed",
        "20 seconds",
        () => "the failing delivery"
      )
      assert.strictEqual(failed.lastStatus, 500)
      assert.strictEqual((receiver.errors[0] as Error).message, "handler bug")
    }))

  it.effect("verifySignatureFetch: a real delivery as a Request; the handler reads the body again and gets the framework's arguments", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const keys = (yield* call("/v2/keys")).body
      yield* publish(`${dest.baseUrl}/fetch`, { body: "{\"order\":42}", headers: { "content-type": "application/json" } })
      const [delivery] = yield* dest.waitFor("/fetch", 1)
      const seen: Array<{ readonly body: unknown; readonly context: unknown }> = []
      const route = verifySignatureFetch(async (request: Request, context: { readonly params: { readonly id: string } }) => {
        seen.push({ body: await request.json(), context })
        return Response.json({ ok: true })
      }, { currentSigningKey: keys.current, nextSigningKey: keys.next, url: `${dest.baseUrl}/fetch` })
      const requestWith = (body: string, signature: string | undefined) =>
        new Request(`http://app.invalid/api/fetch`, {
          method: delivery!.method,
          headers: {
            "content-type": String(delivery!.headers["content-type"]),
            ...(signature === undefined ? {} : { "svc-signature": signature })
          },
          body
        })
      const signature = String(delivery!.headers["svc-signature"])
      const accepted = yield* Effect.promise(() => route(requestWith(delivery!.body.toString(), signature), { params: { id: "7" } }))
      assert.strictEqual(accepted.status, 200)
      assert.deepStrictEqual(seen, [{ body: { order: 42 }, context: { params: { id: "7" } } }])

      for (const [body, header, message, reason] of [
        ["{\"order\":43}", signature, "The body does not match the signature", "wrong_body"],
        [delivery!.body.toString(), undefined, "The request has no Svc-Signature header", "malformed"],
        [delivery!.body.toString(), "not.a.jwt", "The signature is not an HS256 JWT", "malformed"]
      ] as const) {
        const refused = yield* Effect.promise(() => route(requestWith(body, header), { params: { id: "7" } }))
        assert.strictEqual(refused.status, 401)
        assert.deepStrictEqual(yield* Effect.promise(() => refused.json()), { code: "invalid_signature", message, reason })
      }
      assert.strictEqual(seen.length, 1, "no refused request reached the handler")
    }))

  it.effect("a body over maxBodyBytes is 413, declared or not, before the handler", () =>
    Effect.gen(function*() {
      let handled = 0
      const keys = { currentSigningKey: "sig_a", nextSigningKey: "sig_b", maxBodyBytes: 8 }
      const server = Http.createServer(verifySignatureNode(() => void handled++, keys))
      yield* Effect.acquireRelease(
        Effect.promise(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))),
        () => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
      )
      const base = `http://127.0.0.1:${(server.address() as Net.AddressInfo).port}`
      const declared = yield* post(base, "0123456789", { "svc-signature": "x" })
      assert.deepStrictEqual(declared, { status: 413, body: { code: "payload_too_large", message: "The body is larger than 8 bytes" } })
      // Chunked: no Content-Length, the cap holds while reading.
      const chunked = yield* Effect.promise(async () => {
        const stream = new ReadableStream<Uint8Array>({
          start(controller) {
            for (let i = 0; i < 4; i++) controller.enqueue(new TextEncoder().encode("0123"))
            controller.close()
          }
        })
        const response = await fetch(base, { method: "POST", body: stream, duplex: "half", headers: { "svc-signature": "x" } } as RequestInit)
        return response.status
      })
      assert.strictEqual(chunked, 413)
      const route = verifySignatureFetch(async () => {
        handled++
        return new Response("ok")
      }, keys)
      const fetched = yield* Effect.promise(() => route(new Request(base, { method: "POST", body: "0123456789" })))
      assert.strictEqual(fetched.status, 413)
      assert.strictEqual(handled, 0)
    }))

  it.effect("a streamed body over the cap is cut off unread; an unreadable body is 400; a client that breaks off is not a handler failure", () =>
    Effect.gen(function*() {
      let handled = 0
      const keys = { currentSigningKey: "sig_a", nextSigningKey: "sig_b" }
      const route = verifySignatureFetch(async () => {
        handled++
        return new Response("ok")
      }, keys)
      // 100 MiB offered in 1 MiB chunks, no Content-Length: the default 16 MiB cap stops the reading.
      let pulled = 0
      const huge = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (++pulled > 100) controller.close()
          else controller.enqueue(new Uint8Array(1024 * 1024))
        }
      })
      const cut = yield* Effect.promise(() =>
        route(new Request("http://receiver.test/", { method: "POST", body: huge, duplex: "half" } as RequestInit))
      )
      assert.strictEqual(cut.status, 413)
      assert.isBelow(pulled, 20)

      const locked = new Request("http://receiver.test/", { method: "POST", body: "{}", headers: { "svc-signature": "x" } })
      locked.body!.getReader()
      const lockedAnswer = yield* Effect.promise(() => route(locked))
      assert.strictEqual(lockedAnswer.status, 400)
      assert.match((yield* Effect.promise(() => lockedAnswer.json())).message, /^The request body could not be read: /)

      const used = new Request("http://receiver.test/", { method: "POST", body: "{}", headers: { "svc-signature": "x" } })
      yield* Effect.promise(() => used.text())
      const refused = yield* Effect.promise(() => route(used))
      assert.strictEqual(refused.status, 400)
      assert.deepStrictEqual(yield* Effect.promise(() => refused.json()), {
        code: "invalid_request",
        message: "The request body could not be read: it was already read before this handler"
      })

      const errors: Array<unknown> = []
      const server = Http.createServer(verifySignatureNode(() => void handled++, { ...keys, onError: (error) => errors.push(error) }))
      yield* Effect.acquireRelease(
        Effect.promise(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))),
        () => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
      )
      const port = (server.address() as Net.AddressInfo).port
      const aborted = new Promise<void>((resolve) => server.on("request", (request) => request.on("close", () => resolve())))
      yield* Effect.promise(() =>
        new Promise<void>((resolve) => {
          const socket = Net.connect(port, "127.0.0.1", () => {
            socket.write("POST / HTTP/1.1\r\nhost: x\r\nsvc-signature: x\r\ncontent-length: 100\r\n\r\n0123456789", () => {
              socket.destroy()
              resolve()
            })
          })
        })
      )
      yield* Effect.promise(() => aborted)
      yield* Effect.sleep("50 millis")
      assert.deepStrictEqual(errors, [])
      assert.strictEqual(handled, 0)

      // A body parser that ran first (express.json()) read the body: refused at once, not left hanging.
      const parsedFirst = verifySignatureNode(() => void handled++, keys)
      const afterParser = Http.createServer((request, response) => {
        request.resume()
        request.on("end", () => void parsedFirst(request, response))
      })
      yield* Effect.acquireRelease(
        Effect.promise(() => new Promise<void>((resolve) => afterParser.listen(0, "127.0.0.1", resolve))),
        () => Effect.promise(() => new Promise<void>((resolve) => afterParser.close(() => resolve())))
      )
      const read = yield* post(`http://127.0.0.1:${(afterParser.address() as Net.AddressInfo).port}/`, "{}", { "svc-signature": "x" })
      assert.deepStrictEqual(read, {
        status: 400,
        body: { code: "invalid_request", message: "The request body could not be read: it was already read before this handler" }
      })
      assert.strictEqual(handled, 0)
    }))

  it("a missing key (an unset environment variable) is an error at once, not a receiver refusing everything", () => {
    assert.throws(
      () => new Receiver({ currentSigningKey: "sig_a", nextSigningKey: process.env.SVC_UNSET_KEY_FOR_TEST! }),
      /nextSigningKey is missing/
    )
    assert.throws(() => verifySignatureFetch(async () => new Response(), { currentSigningKey: "", nextSigningKey: "sig_b" }), /currentSigningKey is missing/)
  })

  it.effect("no options, null ones or keys that are not strings are a TypeError naming what is expected (it read \"Cannot read properties of undefined\")", () =>
    Effect.gen(function*() {
      const loose = Receiver as unknown as new(keys?: unknown) => Receiver
      assert.throws(() => new loose(), TypeError, /^Receiver: expected \{ currentSigningKey, nextSigningKey \} \(the keys of GET \/v2\/keys\), got undefined$/)
      assert.throws(() => new loose(null), TypeError, /got null$/)
      assert.throws(() => new loose({ currentSigningKey: 5, nextSigningKey: 6 }), TypeError, /^Receiver: currentSigningKey must be a string \(a key of GET \/v2\/keys\), got number$/)
      const looseNode = verifySignatureNode as unknown as (handler: () => undefined, options?: unknown) => unknown
      assert.throws(() => looseNode(() => undefined, undefined), TypeError, /^Receiver: the handler's options must be an object/)
      const looseClient = QueueClient as unknown as new(options?: unknown) => QueueClient
      assert.throws(() => new looseClient(), TypeError, /^QueueClient: expected options \{ baseUrl, token \}, got undefined$/)
      assert.throws(() => new looseClient(null), TypeError, /got null$/)
      const receiver = new Receiver({ currentSigningKey: "sig_a", nextSigningKey: "sig_b" })
      const refused = yield* Effect.promise(() => receiver.verify(null as unknown as VerifyRequest).then(() => undefined, (error: unknown) => error))
      assert.instanceOf(refused, TypeError)
      assert.match((refused as Error).message, /^Receiver: expected \{ signature, body, url\? \} \(the request to check\), got null$/)
    }))

  it("a clockTolerance that is not seconds (\"5\" from an environment variable, NaN, -1) or a maxBodyBytes that is not bytes is an error at once, not every delivery refused", () => {
    const keys = { currentSigningKey: "sig_a", nextSigningKey: "sig_b" }
    for (const clockTolerance of ["5", Number.NaN, -1]) {
      const options = { ...keys, clockTolerance: clockTolerance as number }
      assert.throws(() => verifySignatureFetch(async () => new Response(), options), TypeError, /^Receiver: clockTolerance must be a number of seconds, 0 or more, got /)
      assert.throws(() => verifySignatureNode(() => undefined, options), TypeError, /clockTolerance must be a number of seconds/)
    }
    assert.doesNotThrow(() => verifySignatureNode(() => undefined, { ...keys, clockTolerance: 0 }))
    for (const maxBodyBytes of ["1024", Number.NaN, -1, 1.5]) {
      assert.throws(() => verifySignatureFetch(async () => new Response(), { ...keys, maxBodyBytes: maxBodyBytes as number }), TypeError, /^Receiver: maxBodyBytes must be a whole number of bytes/)
    }
  })

  it.effect("a body that is not the raw body (undefined where no body parser ran, null, a number) is a TypeError saying so, from verify and isValid alike", () =>
    Effect.gen(function*() {
      const receiver = new Receiver({ currentSigningKey: "sig_a", nextSigningKey: "sig_b" })
      const signature = sign("sig_a", { url: "http://127.0.0.1/hook", body: new TextEncoder().encode("{}") })
      assert.isTrue(yield* Effect.promise(() => receiver.isValid({ signature, body: "{}" })))
      for (const body of [undefined, null, 42]) {
        for (const check of [() => receiver.verify({ signature, body: body as unknown as string }), () => receiver.isValid({ signature, body: body as unknown as string })]) {
          const error = yield* Effect.promise(() => check().then(() => undefined, (rejected: unknown) => rejected))
          assert.instanceOf(error, TypeError)
          assert.match(String((error as Error).message), /^Receiver: body must be the raw body as received, a string or bytes \(Buffer, Uint8Array\), got /)
        }
      }
      const tolerant = yield* Effect.promise(() => receiver.verify({ signature, body: "{}", clockTolerance: "5" as unknown as number }).catch((rejected: unknown) => rejected))
      assert.instanceOf(tolerant, TypeError)
    }))
})
