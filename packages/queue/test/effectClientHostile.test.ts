/**
 * The effect clients (`QueueClient` of `Client.ts`, `QueueRpcClient`) against a server streaming an
 * answer without end, over real sockets on 127.0.0.1: as the Promise client
 * (`promiseClientHostile.test.ts`), an answer is read to at most `maxAnswerBytes` (default 320 MiB),
 * then refused naming the cap and the base URL, its connection let go; answers under the cap read as
 * before. Before, effect's HttpClient read the whole body into memory, with no timeout to end it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Context, Effect, Exit, Layer } from "effect"
import { FetchHttpClient } from "effect/http"
import * as Http from "node:http"
import type * as Net from "node:net"
import { AnswerTooLarge, PublishFailed, QueueClient } from "../src/Client.ts"
import { QueueRpcClient } from "../src/RpcClient.ts"

const TOKEN = "hostile-token-0123456789"
const MiB = 1024 * 1024

/** A server on 127.0.0.1 whose answers the test writes, once it has read the request's body. */
const server = (answer: (body: string, response: Http.ServerResponse) => void) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const instance = Http.createServer((request, response) => {
        let body = ""
        request.setEncoding("utf8").on("data", (chunk: string) => (body += chunk))
        request.on("end", () => answer(body, response))
      })
      await new Promise<void>((resolve) => instance.listen(0, "127.0.0.1", resolve))
      return { base: `http://127.0.0.1:${(instance.address() as Net.AddressInfo).port}`, instance }
    }),
    ({ instance }) =>
      Effect.promise(() => {
        instance.closeAllConnections()
        return new Promise<void>((resolve) => instance.close(() => resolve()))
      })
  )

/**
 * A server answering every request with `status` and a JSON list that never ends, written as fast as
 * the client takes it; it counts the bytes written and says when the client let the connection go.
 */
const endlessServer = (status: number) =>
  Effect.gen(function*() {
    const state = { sent: 0, closed: 0 }
    let onClose = () => {}
    const instance = yield* server((_, response) => {
      response.writeHead(status, { "content-type": "application/json" })
      response.write("[")
      const chunk = Buffer.alloc(64 * 1024, "0,")
      const pump = (): void => {
        while (!response.destroyed) {
          state.sent += chunk.length
          if (!response.write(chunk)) return void response.once("drain", pump)
        }
      }
      response.on("close", () => {
        state.closed++
        onClose()
      })
      pump()
    })
    /** Resolves once `count` answers' connections have been let go. */
    const closedCount = (count: number) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          if (state.closed >= count) return resolve()
          onClose = () => state.closed >= count && resolve()
        })
      )
    return { ...instance, state, closedCount }
  })

const json = (status: number, body: unknown) => (_: string, response: Http.ServerResponse) =>
  response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body))

/** The same answer with no `Content-Length` (chunked): only counting the bytes read can cap it. */
const chunkedJson = (status: number, body: unknown) => (_: string, response: Http.ServerResponse) => {
  response.writeHead(status, { "content-type": "application/json" })
  response.write(JSON.stringify(body))
  response.end()
}

const client = (baseUrl: string, maxAnswerBytes?: number, timeoutMs?: number) =>
  QueueClient.make({
    baseUrl,
    token: TOKEN,
    ...(maxAnswerBytes === undefined ? {} : { maxAnswerBytes }),
    ...(timeoutMs === undefined ? {} : { timeoutMs })
  }).pipe(Effect.provide(FetchHttpClient.layer))

const rpcClient = (baseUrl: string, maxAnswerBytes?: number, timeoutMs?: number) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(
      QueueRpcClient.layer({
        baseUrl,
        token: TOKEN,
        ...(maxAnswerBytes === undefined ? {} : { maxAnswerBytes }),
        ...(timeoutMs === undefined ? {} : { timeoutMs })
      })
    )
    return Context.get(context, QueueRpcClient)
  })

const capMessage = (maxAnswerBytes: number) =>
  new RegExp(`^The answer from http://127\\.0\\.0\\.1:\\d+ is larger than ${maxAnswerBytes} bytes, the most this client reads \\(maxAnswerBytes\\)$`)

/** A regression fails here (the uncapped client reads for ever) instead of filling memory until the test times out. */
const within = <A, E>(effect: Effect.Effect<A, E>) => effect.pipe(Effect.timeout("10 seconds"))

describe("effect clients against a server streaming an endless answer", () => {
  it.live("an api call is refused at maxAnswerBytes with AnswerTooLarge naming the cap and baseUrl, promptly, memory bounded, the connection let go", () =>
    Effect.gen(function*() {
      const endless = yield* endlessServer(200)
      const queue = yield* client(endless.base, 8 * MiB)
      const before = process.memoryUsage().arrayBuffers
      const started = Date.now()
      const error = yield* within(queue.api.dlq.list({ query: {} }).pipe(Effect.flip))
      const elapsed = Date.now() - started
      const grown = process.memoryUsage().arrayBuffers - before

      assert.instanceOf(error, AnswerTooLarge)
      const tooLarge = error as AnswerTooLarge
      assert.deepInclude(tooLarge, { _tag: "AnswerTooLarge", status: 200, baseUrl: endless.base, maxAnswerBytes: 8 * MiB })
      assert.match(tooLarge.message, capMessage(8 * MiB))
      assert.isBelow(elapsed, 10_000, "refused promptly")
      // the client let go of the connection: the server's writes end there, a few socket buffers past the cap
      yield* within(endless.closedCount(1))
      assert.isBelow(endless.state.sent, 8 * MiB + 32 * MiB, `the server wrote ${endless.state.sent} bytes`)
      // what the client holds is the cap and those buffers, not what an endless body would fill
      assert.isBelow(grown, 64 * MiB, `array buffers grew by ${grown} bytes`)
    }))

  it.live("publish, publishJSON and batch are PublishFailed with the answer's status and the same message", () =>
    Effect.gen(function*() {
      const endless = yield* endlessServer(201)
      const queue = yield* client(endless.base, MiB)
      const failures = [
        yield* within(queue.publish({ destination: "https://example.com/a", body: "x" }).pipe(Effect.flip)),
        yield* within(queue.publishJSON({ destination: "https://example.com/a", body: { a: 1 } }).pipe(Effect.flip)),
        yield* within(queue.batch([{ destination: "https://example.com/a" }]).pipe(Effect.flip))
      ]
      for (const failure of failures) {
        assert.instanceOf(failure, PublishFailed)
        assert.deepInclude(failure, { status: 201, code: "request_failed" })
        assert.match(failure.message, capMessage(MiB))
      }
      yield* within(endless.closedCount(3))
    }))

  it.live("the default cap (320 MiB) refuses a declared Content-Length over it before a byte of the body is read", () =>
    Effect.gen(function*() {
      let closed!: () => void
      const connectionClosed = new Promise<void>((resolve) => (closed = resolve))
      const declared = yield* server((_, response) => {
        response.writeHead(200, { "content-type": "application/json", "content-length": String(4 * 1024 ** 3) })
        response.write("[")
        response.on("close", closed)
      })
      const error = yield* within((yield* client(declared.base)).api.keys.get().pipe(Effect.flip))
      assert.instanceOf(error, AnswerTooLarge)
      assert.deepInclude(error, { status: 200, maxAnswerBytes: 335_544_320 })
      assert.match((error as AnswerTooLarge).message, capMessage(335_544_320))
      yield* within(Effect.promise(() => connectionClosed))
    }))

  it.live("answers up to the cap read as before (declared or chunked, 2xx, an error answer, a 204); one byte more is refused", () =>
    Effect.gen(function*() {
      const keys = { current: "sig_current", next: "sig_next" }
      const size = JSON.stringify(keys).length
      for (const answer of [json, chunkedJson]) {
        const queue = yield* server(answer(200, keys))
        assert.deepStrictEqual(yield* (yield* client(queue.base, size)).api.keys.get(), keys)
        const error = yield* (yield* client(queue.base, size - 1)).api.keys.get().pipe(Effect.flip)
        assert.instanceOf(error, AnswerTooLarge)
        assert.match((error as AnswerTooLarge).message, capMessage(size - 1))
      }

      const published = yield* server(json(201, { messageId: "m1" }))
      assert.deepStrictEqual(
        yield* (yield* client(published.base, 64)).publish({ destination: "https://example.com/a", body: "x" }),
        { messageId: "m1" }
      )
      // the queue's refusal still reads as its {code, message}
      const refused = yield* server(json(404, { code: "message_not_found", message: "No message with id m1", messageId: "m1" }))
      const notFound = yield* (yield* client(refused.base)).api.messages.get({ params: { messageId: "m1" } }).pipe(Effect.flip)
      assert.strictEqual((notFound as { readonly _tag: string })._tag, "MessageNotFound")
      const noContent = yield* server((_, response) => response.writeHead(204).end())
      yield* (yield* client(noContent.base, 1)).api.messages.cancel({ params: { messageId: "m1" } })
    }))

  it.live("the RPC client caps its answers too: an endless answer, an error status's included, is an RpcClientError naming the cap", () =>
    Effect.gen(function*() {
      for (const status of [200, 500]) {
        const endless = yield* endlessServer(status)
        const queue = yield* rpcClient(endless.base, MiB)
        const error = yield* within(queue.DeleteDlq({ dlqId: "d1" }).pipe(Effect.flip))
        if (error._tag !== "RpcClientError") return assert.fail(`expected an RpcClientError, got ${error._tag}`)
        const cause = (error.reason as { readonly cause?: { readonly description?: string; readonly cause?: unknown } }).cause
        assert.match(cause?.description ?? "", capMessage(MiB), `status ${status}`)
        assert.instanceOf(cause?.cause, AnswerTooLarge)
        yield* within(endless.closedCount(1))
      }

      // an answer under the cap still works
      const queue = yield* server((body, response) => {
        const { id } = JSON.parse(body.split("\n")[0]!) as { readonly id: unknown }
        response.writeHead(200, { "content-type": "application/ndjson" })
        response.end(JSON.stringify({ _tag: "Exit", requestId: id, exit: { _tag: "Success", value: null } }) + "\n")
      })
      yield* within((yield* rpcClient(queue.base, 1024)).DeleteDlq({ dlqId: "d1" }))
    }))

  it.live("a call with no whole answer within timeoutMs fails saying so (no answer at all, or a body that stops), its connection let go", () =>
    Effect.gen(function*() {
      // One server that never answers, one that sends the head and part of a body, then nothing.
      const stalls = [
        (_: string, response: Http.ServerResponse) => void response,
        (_: string, response: Http.ServerResponse) => {
          response.writeHead(200, { "content-type": "application/json" })
          response.write("[1,")
        }
      ]
      for (const stall of stalls) {
        let closed = 0
        const silent = yield* server((body, response) => {
          response.on("close", () => closed++)
          stall(body, response)
        })
        const noAnswer = new RegExp(`No whole answer from the queue at ${silent.base.replaceAll(".", "\\.")} within 300 ms`)
        const queue = yield* client(silent.base, undefined, 300)
        const started = Date.now()
        const published = yield* within(queue.publish({ destination: "https://example.com/a", body: "x" }).pipe(Effect.flip))
        assert.isAtLeast(Date.now() - started, 250)
        assert.instanceOf(published, PublishFailed)
        assert.deepInclude(published, { status: 0, code: "request_failed" })
        assert.match(published.message, noAnswer)
        const listed = yield* within(queue.api.dlq.list({ query: {} }).pipe(Effect.flip))
        assert.match(String((listed as { readonly message?: unknown }).message), noAnswer)
        const rpc = yield* within((yield* rpcClient(silent.base, undefined, 300)).DeleteDlq({ dlqId: "d1" }).pipe(Effect.flip))
        if (rpc._tag !== "RpcClientError") return assert.fail(`expected an RpcClientError, got ${rpc._tag}`)
        const cause = (rpc.reason as { readonly cause?: { readonly _tag?: string; readonly description?: string } }).cause
        assert.strictEqual(cause?._tag, "TransportError")
        assert.match(cause?.description ?? "", noAnswer)
        // every timed-out call let its connection go
        yield* within(Effect.promise(async () => {
          while (closed < 3) await new Promise((resolve) => setTimeout(resolve, 10))
        }))
      }
    }))

  it.live("a timeoutMs that is not a whole number of milliseconds a timer holds is a defect naming it", () =>
    Effect.gen(function*() {
      for (const timeoutMs of [Number.NaN, 0, 1.5, -1, 2 ** 31]) {
        const made = yield* Effect.exit(client("http://127.0.0.1:1", undefined, timeoutMs))
        const rpc = yield* Effect.exit(rpcClient("http://127.0.0.1:1", undefined, timeoutMs))
        const exits: ReadonlyArray<readonly [string, Exit.Exit<unknown, unknown>]> = [["QueueClient", made], ["QueueRpcClient", rpc]]
        for (const [name, exit] of exits) {
          const defect = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
          assert.instanceOf(defect, TypeError)
          assert.strictEqual(
            (defect as TypeError).message,
            `${name}: timeoutMs must be a whole number of milliseconds from 1 to 2147483647, got ${timeoutMs}`
          )
        }
      }
    }))

  it.live("a maxAnswerBytes that is not a whole number of bytes from 1 is a defect naming it", () =>
    Effect.gen(function*() {
      for (const maxAnswerBytes of [Number.NaN, 0, 1.5, -1]) {
        const made = yield* Effect.exit(client("http://127.0.0.1:1", maxAnswerBytes))
        const rpc = yield* Effect.exit(rpcClient("http://127.0.0.1:1", maxAnswerBytes))
        const exits: ReadonlyArray<readonly [string, Exit.Exit<unknown, unknown>]> = [["QueueClient", made], ["QueueRpcClient", rpc]]
        for (const [name, exit] of exits) {
          assert.isTrue(Exit.isFailure(exit))
          const defect = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
          assert.instanceOf(defect, TypeError)
          assert.match((defect as TypeError).message, new RegExp(`^${name}: maxAnswerBytes must be a whole number of bytes from 1, got `))
        }
      }
    }))
})
