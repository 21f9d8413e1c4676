/**
 * `POST /rpc` as every service mounts it (`RpcHttp.rpcHttpEffect`), over a socket and in process: a
 * body that is not a set of well-formed requests for this group is refused whole with a 400 naming
 * the line, and none of its requests runs; effect's own client is served as before.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import { FetchHttpClient, HttpRouter, HttpServer } from "effect/http"
import { Rpc, RpcClient, RpcGroup, RpcSerialization } from "effect/rpc"
import * as Net from "node:net"
import { serve, toWebHandler } from "../src/Http.ts"
import { MAX_RPC_BODY_BYTES, rpcHttpEffect } from "../src/RpcHttp.ts"

const Group = RpcGroup.make(
  Rpc.make("Count", { payload: { note: Schema.String, by: Schema.Int }, success: Schema.Number }),
  // as the queue's bulk and batch procedures: unknown keys refused by the server's decoding
  Rpc.make("Strict", { payload: { by: Schema.Int }, success: Schema.Number }).annotate(Rpc.ParseOptions, { onExcessProperty: "error" })
)

/** What the procedure has done: a refused body must leave it unchanged. */
let counted = 0
const Handlers = Group.toLayer({
  Count: ({ by }) => Effect.sync(() => (counted += by)),
  Strict: ({ by }) => Effect.sync(() => (counted += by))
})

const Routes = HttpRouter.use((router) =>
  Effect.gen(function*() {
    yield* router.add("POST", "/rpc", yield* rpcHttpEffect(Group))
  })
).pipe(Layer.provide([Handlers, RpcSerialization.layerNdjson]))

class Client extends Context.Service<Client, {
  readonly baseUrl: string | undefined
  readonly post: (body: string | Uint8Array, contentType?: string) => Effect.Effect<{ readonly status: number; readonly text: string }>
}>()("test/RpcHttpClient") {}

const answer = (response: Response) => Effect.promise(async () => ({ status: response.status, text: await response.text() }))
const init = (body: string | Uint8Array, contentType = "application/ndjson"): RequestInit => ({
  method: "POST",
  body: body as BodyInit,
  headers: { "content-type": contentType }
})

const SocketClient = Layer.effect(
  Client,
  Effect.gen(function*() {
    const { address } = yield* HttpServer.HttpServer
    const baseUrl = `http://127.0.0.1:${address._tag === "UnixPathAddress" ? 0 : address.port}`
    return { baseUrl, post: (body, type) => Effect.flatMap(Effect.promise(() => fetch(`${baseUrl}/rpc`, init(body, type))), answer) }
  })
).pipe(Layer.provide(serve(Routes, { name: "rpc-test", port: 0, host: "127.0.0.1" })))

// The route's typed refusal (`InvalidRequest`) is a requirement in its type that only a server's
// conventions meet; `toWebHandler` applies the same conventions but is typed for API routes.
const InProcessRoutes = Routes as unknown as Layer.Layer<never, never, HttpRouter.HttpRouter>

const InProcessClient = Layer.effect(
  Client,
  Effect.gen(function*() {
    const { handler } = yield* Effect.acquireRelease(Effect.sync(() => toWebHandler(InProcessRoutes)), ({ dispose }) => Effect.promise(dispose))
    return {
      baseUrl: undefined,
      post: (body, type) => Effect.flatMap(Effect.promise(() => handler(new Request("http://localhost/rpc", init(body, type)))), answer)
    }
  })
)

const count = (id: string | number, by = 1, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ _tag: "Request", id, tag: "Count", payload: { note: "n", by }, headers: [], ...extra })

/** Posts `body`, expecting a 400 whose issues include `parameter` with a problem matching `problem`; nothing ran. */
const refused = (body: string | Uint8Array, parameter: string, problem: RegExp) =>
  Effect.gen(function*() {
    const before = counted
    const { status, text } = yield* (yield* Client).post(body)
    assert.strictEqual(status, 400, text)
    const { code, issues } = JSON.parse(text) as { code: string; issues: Array<{ parameter: string; problem: string }> }
    assert.strictEqual(code, "invalid_request")
    const issue = issues.find((candidate) => candidate.parameter === parameter)
    assert.isDefined(issue, `an issue for ${parameter} in ${text}`)
    assert.match(issue!.problem, problem)
    assert.strictEqual(counted, before, "a refused body ran none of its requests")
    assert.notMatch(text, /NdjsonDecodeError|TypeError|Defect|at .*\.ts:\d+/)
  })

for (const [name, ClientLayer] of [["over a socket", SocketClient], ["in process", InProcessClient]] as const) {
  layer(ClientLayer)(`RpcHttp, ${name}`, (it) => {
    it.effect("a body of well-formed requests runs them all and answers each", () =>
      Effect.gen(function*() {
        const before = counted
        const { status, text } = yield* (yield* Client).post(`${count(1, 2)}\n${count("two", 3)}\r\n\n`)
        assert.strictEqual(status, 200, text)
        const exits = text.trim().split("\n").map((line) => JSON.parse(line) as { _tag: string; requestId: string })
        assert.deepStrictEqual(exits.map((exit) => [exit._tag, exit.requestId]), [["Exit", 1], ["Exit", "two"]])
        assert.strictEqual(counted, before + 5)
      }))

    it.effect("a body with no request (empty, or blank lines) is refused naming it (it was an empty 200, as if a call had run)", () =>
      Effect.gen(function*() {
        for (const body of ["", "\n", "\r\n\n"]) yield* refused(body, "", /holds no request: send one JSON request per line/)
      }))

    it.effect("an id given twice is refused before either request runs (it was a 503 'shutting down' after the first had run)", () =>
      refused(`${count(7)}\n${count(7)}\n`, "line 2 id", /repeats the id of line 1/))

    it.effect("an id past 2^53 is refused (it was read as another number, and two different ones as a repeat); notifications' ids are free", () =>
      Effect.gen(function*() {
        yield* refused(`${count(1)}\n${count(9007199254740993)}\n`, "line 2 id", /within ±2\^53: send the id as a string/)
        yield* refused(`${count(1.5)}\n`, "line 1 id", /whole number/)
        const before = counted
        const notified = yield* (yield* Client).post(`${count(5, 1, { isNotification: true })}\n${count(5, 1, { isNotification: true })}\n${count(5)}\n`)
        assert.strictEqual(notified.status, 200, notified.text)
        assert.strictEqual(counted, before + 3)
      }))

    it.effect("a last line without its newline is refused (it was dropped with an empty 200)", () =>
      Effect.all([
        refused(count(1), "line 1", /no newline at its end/),
        refused(`${count(1)}\n${count(2)}`, "line 2", /no newline at its end/)
      ]))

    it.effect("a line that is not JSON, not an object, or not a request is refused by line, after a good line too", () =>
      Effect.all([
        refused(`${count(1)}\ngarbage\n`, "line 2", /not valid JSON/),
        refused("null\n", "line 1", /./),
        refused(`${JSON.stringify({ _tag: "Ack", requestId: "1" })}\n`, "line 1 _tag", /Request/),
        refused(`${count(1, 1, { headers: "x" })}\n`, "line 1 headers", /./),
        refused(`${count({ no: 1 } as never)}\n`, "line 1 id", /./),
        refused(`{"_tag":"Request","_tag":"Request","id":1,"tag":"Count","payload":{"note":"n","by":1},"headers":[]}\n`, "line 1 _tag", /given twice/),
        refused(new Uint8Array([...new TextEncoder().encode(count(1)).slice(0, -2), 0xff, 0x7d, 0x7d, 0x0a]), "", /UTF-8/)
      ]))

    it.effect("an unknown procedure and a payload its procedure cannot decode are refused naming the field", () =>
      Effect.all([
        refused(`${count(1).replace('"Count"', '"Erase"')}\n`, "line 1 tag", /no procedure of this server: it has Count, Strict/),
        // the procedure's own parse options: its unknown key was a defect after the lines before it had run
        refused(
          `${count(1)}\n${JSON.stringify({ _tag: "Request", id: 2, tag: "Strict", payload: { by: 1, zz: 1 }, headers: [] })}\n`,
          "line 2 payload.zz",
          /./
        ),
        refused(`${count(1)}\n${count(2, "x" as never)}\n`, "line 2 payload.by", /Expected .*number|int/i),
        refused(`${JSON.stringify({ _tag: "Request", id: 1, tag: "Count", payload: {}, headers: [] })}\n`, "line 1 payload.note", /missing/)
      ]))

    it.effect("a body declared in a charset other than UTF-8 is 415 naming it, none of it run; charset=utf-8 (any case, quoted) or none as before", () =>
      Effect.gen(function*() {
        const client = yield* Client
        const before = counted
        // the lines in UTF-16LE with a byte order mark, as a client that meant its charset sends them
        const utf16 = new Uint8Array(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(`${count(1)}\n`, "utf16le")]))
        for (const [charset, named] of [["utf-16", "utf-16"], ["UTF-16LE", "UTF-16LE"], ["\"iso-8859-1\"", "iso-8859-1"], ["Shift_JIS", "Shift_JIS"]]) {
          const { status, text } = yield* client.post(utf16, `application/ndjson; charset=${charset}`)
          assert.strictEqual(status, 415, text)
          const body = JSON.parse(text) as { code: string; message: string }
          assert.strictEqual(body.code, "unsupported_media_type")
          assert.include(body.message, `charset "${named}" is not supported: send the JSON body as UTF-8`)
        }
        assert.strictEqual(counted, before, "a refused body ran none of its requests")
        for (const type of ["application/ndjson; charset=UTF-8", "application/ndjson; charset=\"utf-8\"", "application/ndjson; charset=utf8", "application/ndjson"]) {
          const { status, text } = yield* client.post(`${count(1)}\n`, type)
          assert.strictEqual(status, 200, `${type}: ${text}`)
        }
        assert.strictEqual(counted, before + 4)
      }))

    it.effect(`a body over ${MAX_RPC_BODY_BYTES / 1024 / 1024} MiB is 413 (it was a 200 carrying effect's buffer error)`, () =>
      Effect.gen(function*() {
        const before = counted
        const { status, text } = yield* (yield* Client).post(`${count(1)}\n`.padEnd(MAX_RPC_BODY_BYTES + 1, " ") + "\n")
        assert.strictEqual(status, 413)
        assert.strictEqual(counted, before)
        // the cap named, as every other 413 of the suite names its own (it said only "Payload Too Large")
        assert.deepStrictEqual(JSON.parse(text), {
          code: "payload_too_large",
          message: `The RPC body is larger than ${MAX_RPC_BODY_BYTES} bytes (16 MiB), the most one call may send`,
          maxBytes: MAX_RPC_BODY_BYTES
        })
      }))
  })
}

layer(SocketClient)("RpcHttp, a declared length on the wire", (it) => {
  it.effect(`a Content-Length over ${MAX_RPC_BODY_BYTES / 1024 / 1024} MiB is 413 at once, with Expect: 100-continue too (no 100 Continue, none of the body read)`, () =>
    Effect.gen(function*() {
      const port = Number(new URL((yield* Client).baseUrl!).port)
      for (const expect of ["", "Expect: 100-continue\r\n"]) {
        // the body is never sent: before, the answer was `100 Continue` and then a wait for 16 MiB of it
        const answer = yield* Effect.callback<string>((resume) => {
          const socket = Net.connect(port, "127.0.0.1", () =>
            socket.write(
              `POST /rpc HTTP/1.1\r\nHost: x\r\nContent-Type: application/ndjson\r\nContent-Length: ${MAX_RPC_BODY_BYTES + 1}\r\n${expect}\r\n`
            ))
          let text = ""
          // a real timer (not the test's clock): a server still waiting for the body is cut after 20 s
          const giveUp = setTimeout(() => socket.destroy(), 20_000)
          socket.on("data", (chunk) => text += chunk.toString("latin1"))
          socket.on("close", () => {
            clearTimeout(giveUp)
            resume(Effect.succeed(text))
          })
          return Effect.sync(() => socket.destroy())
        })
        assert.match(answer, /^HTTP\/1\.1 413 /, `${expect}: ${answer}`)
        assert.include(answer, `"code":"payload_too_large"`)
        assert.match(answer, /connection: close/i)
      }
    }))
})

describe("RpcHttp with effect's RpcClient", () => {
  it.effect("calls over HTTP are served as before the check", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* Client
      const client = yield* RpcClient.make(Group).pipe(
        Effect.provide(RpcClient.layerProtocolHttp({ url: `${baseUrl}/rpc` }).pipe(
          Layer.provide([RpcSerialization.layerNdjson, FetchHttpClient.layer])
        ))
      )
      const before = counted
      const [a, b] = yield* Effect.all([client.Count({ note: "a", by: 1 }), client.Count({ note: "b", by: 10 })], { concurrency: 2 })
      assert.strictEqual(Math.max(a, b), before + 11)
      assert.strictEqual(counted, before + 11)
    }).pipe(Effect.scoped, Effect.provide(SocketClient)))
})
