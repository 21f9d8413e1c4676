/**
 * The delivery client (undici) over real sockets on 127.0.0.1: what the destination receives, what
 * the worker gets back, and every way an attempt fails (timeout, refused connection, the guard on
 * the address connected to, a redirect not followed, an oversized answer cut at the cap, an answer
 * that breaks HTTP).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import type { OutboundGuard } from "@svc/platform"
import { Effect } from "effect"
import * as Http from "node:http"
import * as Net from "node:net"
import type { AddressInfo } from "node:net"
import { type DeliveryRequest, makeSender } from "../src/Delivery.ts"

interface Received {
  readonly method: string
  readonly url: string
  readonly headers: Http.IncomingHttpHeaders
  readonly body: Buffer
}

const received: Array<Received> = []
let connections = 0
const server = Http.createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (chunk: Buffer) => chunks.push(chunk))
  req.on("end", () => {
    received.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks) })
    if (req.url === "/silent") return // never answers
    if (req.url === "/redirect") {
      res.writeHead(302, { location: "/elsewhere" })
      return res.end()
    }
    if (req.url === "/large") return res.end(Buffer.alloc(100_000, 0x61))
    res.writeHead(201, [["set-cookie", "a=1"], ["set-cookie", "b=2"], ["x-answer", "yes"]])
    res.end("thanks")
  })
})
server.on("connection", () => connections++)
let port = 0

beforeAll(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => {
  port = (server.address() as AddressInfo).port
  resolve()
})))
afterAll(() => new Promise<void>((resolve) => {
  server.closeAllConnections()
  server.close(() => resolve())
}))

const open = makeSender({ maxSockets: 4, maxResponseBytes: 1000, allowPrivate: true })
afterAll(() => open.close())

const request = (path: string, overrides: Partial<DeliveryRequest> = {}): DeliveryRequest => ({
  url: `http://127.0.0.1:${port}${path}`,
  method: "POST",
  headers: { "x-forwarded-thing": "1" },
  body: new Uint8Array([0, 1, 2, 255, 254]),
  timeoutMs: 5000,
  ...overrides
})

describe("Delivery (undici sender)", () => {
  it.effect("sends method, headers and the exact body bytes; answers status, every header value and the body", () =>
    Effect.gen(function*() {
      received.length = 0
      const outcome = yield* open.send(request("/hook", { headers: { "x-forwarded-thing": "1", "Content-Length": "999" } }))
      assert.strictEqual(outcome._tag, "Response")
      if (outcome._tag !== "Response") return
      assert.strictEqual(outcome.status, 201)
      assert.deepStrictEqual(outcome.headers["set-cookie"], ["a=1", "b=2"])
      assert.deepStrictEqual(outcome.headers["x-answer"], ["yes"])
      assert.strictEqual(Buffer.from(outcome.body).toString(), "thanks")
      const [got] = received
      assert.strictEqual(got!.method, "POST")
      assert.strictEqual(got!.headers["x-forwarded-thing"], "1")
      // a forwarded Content-Length never contradicts the body: the client sets it from the bytes
      assert.strictEqual(got!.headers["content-length"], "5")
      assert.deepStrictEqual([...got!.body], [0, 1, 2, 255, 254])
      const get = yield* open.send(request("/hook?x=1", { method: "GET" }))
      assert.strictEqual(get._tag === "Response" && get.status, 201)
      assert.strictEqual(received[1]!.url, "/hook?x=1")
      assert.strictEqual(received[1]!.body.length, 0)
    }))

  it.effect("keeps connections alive between deliveries", () =>
    Effect.gen(function*() {
      yield* open.send(request("/warm"))
      const before = connections
      for (let i = 0; i < 5; i++) yield* open.send(request("/again"))
      assert.strictEqual(connections, before)
    }))

  it.live("closes a connection idle for idleConnectionMs though the destination asks to keep it 600 s", () =>
    Effect.gen(function*() {
      const lingering = Http.createServer((_, res) => res.end("ok"))
      lingering.keepAliveTimeout = 600_000 // answers `Keep-Alive: timeout=600`
      const closed = new Promise<void>((resolve) => lingering.on("connection", (socket) => socket.on("close", () => resolve())))
      yield* Effect.promise(() => new Promise<void>((resolve) => lingering.listen(0, "127.0.0.1", () => resolve())))
      const sender = makeSender({ maxSockets: 1, maxResponseBytes: 1000, allowPrivate: true, idleConnectionMs: 300 })
      yield* Effect.addFinalizer(() =>
        Effect.promise(() => {
          sender.close()
          lingering.closeAllConnections()
          return new Promise<void>((resolve) => lingering.close(() => resolve()))
        })
      )
      const answer = yield* sender.send(request("/", { url: `http://127.0.0.1:${(lingering.address() as AddressInfo).port}/` }))
      assert.strictEqual(answer._tag === "Response" ? answer.status : answer, 200)
      // undici would keep it for 598 s; closed after ~300 ms (generous for a loaded machine)
      const outcome = yield* Effect.promise(() => closed).pipe(Effect.timeoutOption("5 seconds"))
      assert.isTrue(outcome._tag === "Some", "the idle connection was still open after 5 s")
    }).pipe(Effect.scoped))

  it.effect("cuts the answer at maxResponseBytes", () =>
    Effect.gen(function*() {
      const outcome = yield* open.send(request("/large"))
      assert.strictEqual(outcome._tag === "Response" && outcome.body.length, 1000)
    }))

  it.effect("does not follow a redirect: the 3xx is the outcome", () =>
    Effect.gen(function*() {
      received.length = 0
      const outcome = yield* open.send(request("/redirect"))
      assert.strictEqual(outcome._tag === "Response" && outcome.status, 302)
      assert.deepStrictEqual(received.map((r) => r.url), ["/redirect"])
    }))

  it.effect("a destination that never answers fails the attempt at the message's timeout", () =>
    Effect.gen(function*() {
      const started = Date.now()
      const outcome = yield* open.send(request("/silent", { timeoutMs: 300 }))
      assert.deepStrictEqual(outcome, { _tag: "Failed", error: "No answer within 300 ms" })
      assert.isAtLeast(Date.now() - started, 290)
    }))

  it.effect("a closed port is a refused connection", () =>
    Effect.gen(function*() {
      const closed = Http.createServer()
      yield* Effect.promise(() => new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", () => resolve())))
      const closedPort = (closed.address() as AddressInfo).port
      yield* Effect.promise(() => new Promise<void>((resolve) => closed.close(() => resolve())))
      const outcome = yield* open.send(request("/", { url: `http://127.0.0.1:${closedPort}/` }))
      assert.deepStrictEqual(outcome, { _tag: "Failed", error: "Connection refused" })
    }))

  it.effect("an unasked-for 100 Continue or 101 Switching Protocols fails the attempt with a message naming it", () =>
    Effect.gen(function*() {
      // A raw socket answers the first request it reads with the given bytes, as a misbehaving destination would.
      const answers = [
        ["HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", "The destination answered 100 Continue, which no delivery asks for"],
        ["HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", "The destination answered 101 Switching Protocols, which no delivery asks for"],
        ["HTTP/1.1 101 Switching Protocols\r\n\r\n", "The destination's answer does not follow HTTP/1.1 (a 101 Switching Protocols without Upgrade, say)"]
      ] as const
      for (const [answer, error] of answers) {
        const raw = Net.createServer((socket) => socket.once("data", () => socket.write(answer)))
        yield* Effect.promise(() => new Promise<void>((resolve) => raw.listen(0, "127.0.0.1", () => resolve())))
        const rawPort = (raw.address() as AddressInfo).port
        const outcome = yield* open.send(request("/", { url: `http://127.0.0.1:${rawPort}/` }))
        yield* Effect.promise(() => new Promise<void>((resolve) => raw.close(() => resolve())))
        assert.deepStrictEqual(outcome, { _tag: "Failed", error }, answer)
      }
    }))

  it.effect("the guard refuses an internal literal before connecting, and a name by the address it resolves to", () =>
    Effect.gen(function*() {
      const names: Record<string, ReadonlyArray<OutboundGuard.ResolvedAddress>> = {
        "inward.test.invalid": [{ address: "127.0.0.1", family: 4 }]
      }
      const resolve: OutboundGuard.Resolve = async (hostname) => names[hostname] ?? []
      const guarded = makeSender({ maxSockets: 4, maxResponseBytes: 1000, allowPrivate: false, resolve })
      const before = connections
      received.length = 0
      const literal = yield* guarded.send(request("/hook"))
      assert.strictEqual(literal._tag, "Failed")
      assert.match(literal._tag === "Failed" ? literal.error : "", /^The destination is refused: .*127\.0\.0\.1.*loopback/)
      const byName = yield* guarded.send(request("/hook", { url: `http://inward.test.invalid:${port}/hook` }))
      assert.deepStrictEqual(byName, { _tag: "Failed", error: "The destination resolves to a private or loopback address" })
      assert.strictEqual(connections, before)
      assert.strictEqual(received.length, 0)
      guarded.close()
    }))
})
