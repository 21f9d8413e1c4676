/**
 * The Promise client against something that is not (only) the queue, over real sockets: a destination
 * or id that would steer the request to another route, a redirect, an answer that stalls or breaks
 * off, a 2xx that is not the queue's JSON, and arguments it cannot send. Each is a rejected
 * `QueueError` naming the problem; nothing travels to another route or origin.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Http from "node:http"
import type * as Net from "node:net"
import { QueueClient, QueueError } from "../src/promise/index.ts"

const TOKEN = "hostile-token-0123456789"

interface Seen {
  readonly method: string
  readonly url: string
  readonly authorization: string | undefined
}

/** A server on 127.0.0.1 whose answers the test writes; it records every request it sees. */
const server = (answer: (request: Http.IncomingMessage, response: Http.ServerResponse) => void) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const seen: Array<Seen> = []
      const instance = Http.createServer((request, response) => {
        seen.push({ method: request.method!, url: request.url!, authorization: request.headers.authorization })
        request.resume()
        request.on("end", () => answer(request, response))
      })
      await new Promise<void>((resolve) => instance.listen(0, "127.0.0.1", resolve))
      return { base: `http://127.0.0.1:${(instance.address() as Net.AddressInfo).port}`, seen, instance }
    }),
    ({ instance }) =>
      Effect.promise(() => {
        instance.closeAllConnections()
        return new Promise<void>((resolve) => instance.close(() => resolve()))
      })
  )

const json = (status: number, body: unknown) => (_: Http.IncomingMessage, response: Http.ServerResponse) =>
  response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body))

/** The rejection of a call that must reject (never a synchronous throw), as a QueueError. */
const rejection = (call: () => Promise<unknown>) =>
  Effect.promise(async () => {
    let pending: Promise<unknown>
    try {
      pending = call()
    } catch (error) {
      throw new Error(`threw synchronously instead of rejecting: ${String(error)}`)
    }
    try {
      await pending
    } catch (error) {
      if (!(error instanceof QueueError)) throw new Error(`rejected with ${String(error)}, not a QueueError`)
      return error
    }
    throw new Error("resolved")
  })

describe("Promise client against a hostile or wrong server", () => {
  it.live("a destination URL travels as one encoded path segment: its '..' cannot reach another route", () =>
    Effect.gen(function*() {
      const queue = yield* server(json(201, { messageId: "m1" }))
      const client = new QueueClient({ baseUrl: queue.base, token: TOKEN })
      for (const destination of ["http://x.invalid/../../../../v2/keys/rotate", "http://x.invalid/%2e%2e/%2e%2e/v2/dlq/retry", "http://x.invalid\\..\\..\\v2"]) {
        yield* Effect.promise(() => client.publish({ destination, body: "{}" }))
        const { url } = queue.seen.at(-1)!
        assert.match(url, /^\/v2\/publish\/[^/]+$/, destination)
        assert.strictEqual(decodeURIComponent(url.slice("/v2/publish/".length)), destination)
      }
      yield* Effect.promise(() => client.queues.enqueue("jobs", { destination: "http://x.invalid/a?b=1#c" }))
      assert.strictEqual(queue.seen.at(-1)!.url, "/v2/enqueue/jobs/http%3A%2F%2Fx.invalid%2Fa%3Fb%3D1%23c")
    }))

  it.live("an id or name that a URL parser would drop or resolve ('', '.', '..') is refused before anything is sent", () =>
    Effect.gen(function*() {
      const queue = yield* server(json(200, {}))
      const client = new QueueClient({ baseUrl: queue.base, token: TOKEN })
      const calls: Array<[string, () => Promise<unknown>]> = [
        ["dlq.retry('..')", () => client.dlq.retry("..")],
        ["dlq.delete('')", () => client.dlq.delete("")],
        ["queues.pause('.')", () => client.queues.pause(".")],
        ["messages.get(undefined)", () => client.messages.get(undefined as unknown as string)],
        ["publish to '..'", () => client.publish({ destination: ".." })],
        ["enqueue into '..'", () => client.queues.enqueue("..", { destination: "https://example.com/a" })],
        ["a lone surrogate", () => client.schedules.get("\ud800")]
      ]
      for (const [what, call] of calls) {
        const error = yield* rejection(call)
        assert.deepInclude(error, { status: 0, code: "invalid_request" }, what)
        assert.match(error.message, /^The path part after \/v2\/[a-z/-]*: /, what)
      }
      assert.deepStrictEqual(queue.seen, [])
    }))

  it.live("a redirect is not followed: a QueueError with its status, nothing sent to the other origin", () =>
    Effect.gen(function*() {
      const other = yield* server(json(201, { messageId: "from-the-other-origin" }))
      const queue = yield* server((_, response) => response.writeHead(307, { location: `${other.base}/v2/publish/x` }).end())
      const client = new QueueClient({ baseUrl: queue.base, token: TOKEN })
      const error = yield* rejection(() => client.publish({ destination: "https://example.com/a", body: "secret" }))
      assert.deepInclude(error, { status: 307, code: "request_failed" })
      assert.match(error.message, /a redirect, which the client does not follow/)
      assert.deepStrictEqual(other.seen, [])
    }))

  it.live("an answer that stalls is given up after timeoutMs; one that breaks off is a QueueError, not a TypeError", () =>
    Effect.gen(function*() {
      const stalls = yield* server((_, response) => {
        response.writeHead(200, { "content-type": "application/json" })
        response.write('{"messageId":')
      })
      const started = Date.now()
      const stalled = yield* rejection(() => new QueueClient({ baseUrl: stalls.base, token: TOKEN, timeoutMs: 300 }).keys.get())
      assert.deepInclude(stalled, { status: 0, code: "request_failed" })
      assert.match(stalled.message, /No whole answer from the queue at http:\/\/127\.0\.0\.1:\d+ within 300 ms/)
      assert.isBelow(Date.now() - started, 10_000)

      const breaks = yield* server((_, response) => {
        response.writeHead(200, { "content-type": "application/json", "content-length": "1000" })
        response.write('{"messageId":', () => response.destroy())
      })
      const broken = yield* rejection(() => new QueueClient({ baseUrl: breaks.base, token: TOKEN }).keys.get())
      assert.deepInclude(broken, { status: 0, code: "request_failed" })
      assert.match(broken.message, /answer from http:\/\/127\.0\.0\.1:\d+ broke off/)
    }))

  it.live("an answer larger than maxAnswerBytes is refused naming the cap: an endless body is read only that far, a declared one not at all", () =>
    Effect.gen(function*() {
      let stoppedSending!: () => void
      const senderStopped = new Promise<void>((resolve) => (stoppedSending = resolve))
      const endless = yield* server((_, response) => {
        response.writeHead(200, { "content-type": "application/json" })
        response.write("[")
        const chunk = Buffer.alloc(64 * 1024, "0,")
        // paced, so a client that never stops reading fills its memory slowly (until timeoutMs) rather than at once
        const send = (): void => {
          if (response.destroyed) return stoppedSending()
          response.write(chunk, () => void setTimeout(send, 1))
        }
        response.on("close", stoppedSending)
        send()
      })
      const client = new QueueClient({ baseUrl: endless.base, token: TOKEN, timeoutMs: 2_000, maxAnswerBytes: 1024 * 1024 })
      const tooLarge = yield* rejection(() => client.dlq.list())
      assert.deepInclude(tooLarge, { status: 200, code: "request_failed" })
      assert.match(tooLarge.message, /^The answer from http:\/\/127\.0\.0\.1:\d+ is larger than 1048576 bytes, the most this client reads \(maxAnswerBytes\)$/)
      // the client let go of the connection: the server's writes end there
      yield* Effect.promise(() => senderStopped)

      // the default cap, from the declared length, before a byte of the body is read
      const declared = yield* server((_, response) => {
        response.writeHead(200, { "content-type": "application/json", "content-length": String(4 * 1024 ** 3) })
        response.write("[")
      })
      const refused = yield* rejection(() => new QueueClient({ baseUrl: declared.base, token: TOKEN }).dlq.list())
      assert.deepInclude(refused, { status: 200, code: "request_failed" })
      assert.match(refused.message, /is larger than 335544320 bytes, the most this client reads \(maxAnswerBytes\)$/)
    }))

  it.live("a 2xx that is not JSON, or a list answer without its list, is a QueueError instead of undefined or a TypeError", () =>
    Effect.gen(function*() {
      const html = yield* server((_, response) => response.writeHead(200, { "content-type": "text/html" }).end("<html>hi</html>"))
      const notJson = yield* rejection(() => new QueueClient({ baseUrl: html.base, token: TOKEN }).publish({ destination: "https://example.com/a" }))
      assert.deepInclude(notJson, { status: 200, code: "request_failed", body: "<html>hi</html>" })
      assert.match(notJson.message, /answered 200 with a body that is not JSON/)
      const empty = yield* server((_, response) => response.writeHead(200).end())
      assert.match((yield* rejection(() => new QueueClient({ baseUrl: empty.base, token: TOKEN }).messages.get("m1"))).message, /not JSON/)

      // a publish must answer its messageId (a bare null or string is refused before: no JSON object); only a DELETE may answer 204
      for (const answer of [{}, [], { messageId: 7 }]) {
        const odd = yield* server(json(201, answer))
        const error = yield* rejection(() => new QueueClient({ baseUrl: odd.base, token: TOKEN }).publish({ destination: "https://example.com/a" }))
        assert.strictEqual(error.message, "The queue's answer to a publish holds no messageId", JSON.stringify(answer))
      }
      const noContent = yield* server((_, response) => response.writeHead(204).end())
      const bare = new QueueClient({ baseUrl: noContent.base, token: TOKEN })
      assert.match((yield* rejection(() => bare.messages.get("m1"))).message, /not JSON/)
      assert.isUndefined(yield* Effect.promise(() => bare.messages.cancel("m1")))

      // a cursor that does not move forward would page for ever
      const stuck = yield* server(json(200, { schedules: [], cursor: "x" }))
      assert.match(
        (yield* rejection(() => new QueueClient({ baseUrl: stuck.base, token: TOKEN }).schedules.list())).message,
        /next cursor "x" does not come after "x"/
      )
      assert.strictEqual(stuck.seen.length, 2)

      const wrong = yield* server(json(200, { topics: "not-a-list", schedules: null, queues: {}, flowControls: 1 }))
      const client = new QueueClient({ baseUrl: wrong.base, token: TOKEN })
      for (const [field, call] of [
        ["topics", () => client.groups.list()],
        ["schedules", () => client.schedules.list()],
        ["queues", () => client.queues.list()],
        ["flowControls", () => client.flowControl.list()]
      ] as const) {
        assert.strictEqual((yield* rejection(call)).message, `The queue's answer holds no "${field}" list`)
      }
    }))

  it.live("arguments it cannot send are rejected as invalid_request, never thrown at the call", () =>
    Effect.gen(function*() {
      const queue = yield* server(json(201, { messageId: "m1" }))
      const client = new QueueClient({ baseUrl: queue.base, token: TOKEN })
      const circular: Record<string, unknown> = {}
      circular.self = circular
      for (const [pattern, call] of [
        [/^body cannot be sent as JSON: .*circular/i, () => client.publishJSON({ destination: "https://example.com/a", body: circular })],
        [/^body cannot be sent as JSON: it is undefined/, () => client.publishJSON({ destination: "https://example.com/a", body: undefined })],
        [/^options\.body: expected a string or a Uint8Array, got number/, () => client.publish({ destination: "https://example.com/a", body: 42 as unknown as string })],
        [/^messages: expected an array, got undefined/, () => client.batch(undefined as unknown as [])],
        [/^the request cannot be sent as JSON: .*BigInt/i, () => client.queues.upsert({ queueName: "q", parallelism: 1n as unknown as number })]
      ] as const) {
        const error = yield* rejection(call)
        assert.deepInclude(error, { status: 0, code: "invalid_request" })
        assert.match(error.message, pattern)
      }
      assert.deepStrictEqual(queue.seen, [])
    }))

  it.live("what a caller without types passes (null options, half-filled objects, arrays as bodies) is named, never a TypeError", () =>
    Effect.gen(function*() {
      const queue = yield* server(json(201, { messageId: "m1" }))
      const client = new QueueClient({ baseUrl: queue.base, token: TOKEN })
      const destination = "https://example.com/a"
      const loose = client as unknown as Record<string, (...args: Array<unknown>) => Promise<unknown>> & {
        readonly schedules: { readonly create: (options: unknown) => Promise<unknown> }
        readonly queues: { readonly enqueue: (name: string, options: unknown) => Promise<unknown> }
        readonly dlq: { readonly list: (options: unknown) => Promise<unknown> }
      }
      for (const [expected, call] of [
        ["options: expected an object, got undefined", () => loose.publishJSON!(undefined)],
        ["options: expected an object, got undefined", () => loose.publish!(undefined)],
        ["options.callback: expected an object, got null", () => loose.publish!({ destination, callback: null })],
        ["options.callback.url is missing", () => loose.publish!({ destination, callback: {} })],
        ["options.flowControl: expected an object, got null", () => loose.publish!({ destination, flowControl: null })],
        ["options.retries: expected a finite number, got string", () => loose.publish!({ destination, retries: "3" })],
        ["options.forward[\"X-A\"]: expected a string", () => loose.publish!({ destination, forward: { "X-A": 1 } })],
        ["options.notBefore: expected a valid Date or a finite number (Unix time), got an invalid Date", () => loose.publish!({ destination, notBefore: new Date("nope") })],
        ["options.fromDate: expected a valid Date or a finite number (Unix time), got an invalid Date", () => loose.events!({ fromDate: new Date("nope") })],
        ["options.limit: expected a finite number, got string", () => loose.dlq.list({ limit: "5" })],
        ["options.count: expected a finite number, got string", () => loose.events!({ count: "5" })],
        ["messages[0]: expected an object, got null", () => loose.batch!([null])],
        ["messages[1]: expected an object, got undefined", () => loose.batch!([{ destination }, undefined])],
        ["messages[0].body: expected a string or a Uint8Array, got number", () => loose.batch!([{ destination, body: 42 }])],
        ["messages[0].body: expected a string or a Uint8Array, got an array", () => loose.batch!([{ destination, body: [1, 2, 3] }])],
        ["messages[0].flowControl: expected an object, got null", () => loose.batch!([{ destination, flowControl: null }])],
        ["options.cron is missing", () => loose.schedules.create({ destination })],
        ["options.body: expected a string or a Uint8Array, got an object", () => loose.queues.enqueue("jobs", { destination, body: {} })]
      ] as const) {
        const error = yield* rejection(call)
        assert.deepInclude(error, { status: 0, code: "invalid_request", message: expected })
      }
      assert.deepStrictEqual(queue.seen, [])
    }))

  it.live("a header it cannot send is invalid_request naming the header, never 'could not reach' and never its value", () =>
    Effect.gen(function*() {
      const queue = yield* server(json(201, { messageId: "m1" }))
      const client = new QueueClient({ baseUrl: queue.base, token: TOKEN })
      const destination = "https://example.com/a"
      for (const [pattern, options] of [
        [/^the value of the header Svc-Forward-X-A holds a line break/, { forward: { "X-A": "secret\r\nX-B: 1" } }],
        [/^the value of the header Svc-Deduplication-Id holds a line break, a NUL/, { deduplicationId: "a\u0000b" }],
        [/^the value of the header content-type holds .* outside Latin-1/, { contentType: "text/plain; x=€" }],
        [/^the header name "Svc-Forward-X A" holds a space/, { forward: { "X A": "v" } }],
        [/^headers: Authorization is the client's own .* forward: \{ Authorization/, { headers: { Authorization: "Bearer x" } }],
        [/^headers: Authorization is the client's own/, { headers: { authorization: "Bearer x" } }]
      ] as const) {
        const error = yield* rejection(() => client.publish({ destination, body: "{}", ...options }))
        assert.deepInclude(error, { status: 0, code: "invalid_request" })
        assert.match(error.message, pattern)
        assert.notInclude(error.message, "secret")
      }
      assert.deepStrictEqual(queue.seen, [])
      // to the destination, an Authorization header goes as a forwarded one
      yield* Effect.promise(() => client.publish({ destination, body: "{}", forward: { Authorization: "Bearer x" } }))
      assert.strictEqual(queue.seen.at(-1)!.authorization, `Bearer ${TOKEN}`)
    }))

  it.live("no queue there names the reason (connection refused), and a 2xx that is not a JSON object or list is refused", () =>
    Effect.gen(function*() {
      const free = yield* server(json(200, {}))
      const base = free.base
      yield* Effect.promise(() => new Promise<void>((resolve) => free.instance.close(() => resolve())))
      const down = yield* rejection(() => new QueueClient({ baseUrl: base, token: TOKEN }).keys.get())
      assert.deepInclude(down, { status: 0, code: "request_failed" })
      assert.match(down.message, /^Could not reach the queue at http:\/\/127\.0\.0\.1:\d+: connect ECONNREFUSED/)

      for (const answer of [null, 42, "keys"]) {
        const queue = yield* server(json(200, answer))
        const error = yield* rejection(() => new QueueClient({ baseUrl: queue.base, token: TOKEN }).keys.get())
        assert.deepInclude(error, { status: 200, code: "request_failed", message: "The queue answered 200 with a body that is not a JSON object or list" })
      }
    }))

  it.live("a refusal with Retry-After carries it in seconds (delay-seconds or an HTTP date); none without", () =>
    Effect.gen(function*() {
      const answers = [
        { status: 503, retryAfter: "5", expected: 5 },
        { status: 429, retryAfter: new Date(Date.now() + 30_000).toUTCString(), expected: 30 },
        { status: 503, retryAfter: "soon", expected: undefined },
        { status: 503, retryAfter: "-1", expected: undefined },
        { status: 503, retryAfter: "1.5", expected: undefined },
        { status: 503, retryAfter: "1 1", expected: undefined },
        { status: 500, retryAfter: undefined, expected: undefined }
      ]
      let next = 0
      const queue = yield* server((_, response) => {
        const { retryAfter, status } = answers[next++]!
        response.writeHead(status, { "content-type": "application/json", ...(retryAfter === undefined ? {} : { "retry-after": retryAfter }) })
        response.end(JSON.stringify({ code: "service_unavailable", message: "Try again shortly" }))
      })
      const client = new QueueClient({ baseUrl: queue.base, token: TOKEN })
      for (const { expected, status } of answers) {
        const error = yield* rejection(() => client.keys.get())
        assert.strictEqual(error.status, status)
        if (expected === 30) assert.approximately(error.retryAfter!, 30, 2)
        else assert.strictEqual(error.retryAfter, expected)
      }
    }))

  it("bad options are a TypeError at construction that never shows a password", () => {
    assert.throws(() => new QueueClient({ baseUrl: "http://user:hunter2@127.0.0.1:1", token: TOKEN }), TypeError, /must not hold a user or password/)
    try {
      new QueueClient({ baseUrl: "http://user:hunter2@127.0.0.1:1", token: TOKEN })
    } catch (error) {
      assert.notInclude(String(error), "hunter2")
    }
    assert.throws(() => new QueueClient({ baseUrl: "ftp://127.0.0.1", token: TOKEN }), TypeError, /^QueueClient: baseUrl must be an http\(s\) URL, not ftp:$/)
    assert.throws(() => new QueueClient({ baseUrl: "not a url", token: TOKEN }), TypeError, /http\(s\) URL/)
    for (const baseUrl of ["http://127.0.0.1:1?x=1", "http://127.0.0.1:1/#top"]) {
      assert.throws(() => new QueueClient({ baseUrl, token: TOKEN }), TypeError, /^QueueClient: baseUrl must not hold a query \(\?\) or fragment \(#\)$/)
    }
    assert.throws(() => new QueueClient({ baseUrl: "http://127.0.0.1:1", token: "two words" }), TypeError, /^QueueClient: token holds a space, a line break or another character an HTTP header cannot carry$/)
    for (const timeoutMs of [Number.NaN, 0, 2 ** 31, 2 ** 40]) {
      assert.throws(() => new QueueClient({ baseUrl: "http://127.0.0.1:1", token: TOKEN, timeoutMs }), TypeError, /timeoutMs .* from 1 to 2147483647/)
    }
    for (const maxAnswerBytes of [Number.NaN, 0, 1.5, -1, "1MB"]) {
      assert.throws(
        () => new QueueClient({ baseUrl: "http://127.0.0.1:1", token: TOKEN, maxAnswerBytes: maxAnswerBytes as number }),
        TypeError,
        /^QueueClient: maxAnswerBytes must be a whole number of bytes from 1, got /
      )
    }
  })
})
