/**
 * `POST /mcp` as HTTP, on a real socket, with exactly the headers and bytes a client sends: the order
 * of the checks (headers before the body), `Accept` wildcards, the messages for an empty body and an
 * id JSON cannot carry exactly, batches answered as arrays, and CORS for browser clients at an
 * allowed origin. Nothing here reaches the REST API (`ping` and `tools/list` need none).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { acceptsMcpAnswers } from "../src/mcp/McpHttp.ts"
import { exactRequest, startMcp } from "./support.ts"

const MCP_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" }

/** A POST with the headers MCP asks for (overridable), the body as text. */
const post = (port: number, body: string | Uint8Array, headers: Record<string, string | undefined> = {}) =>
  exactRequest(port, { body, headers: { ...MCP_HEADERS, ...headers } })

describe("POST /mcp: headers are checked before the body", () => {
  it.effect("406 for Accept, then 415 for Content-Type, then 413 for a declared length, whatever the body is", () =>
    Effect.gen(function*() {
      const port = yield* startMcp({ MCP_MAX_BODY_BYTES: "1024" })
      const notJson = "this is not JSON"

      // Content-Type text/plain with a body that is not JSON: 415, not -32700
      const plain = yield* post(port, notJson, { "content-type": "text/plain" })
      assert.strictEqual(plain.status, 415, plain.text)
      assert.deepStrictEqual([plain.body.jsonrpc, plain.body.error.code, plain.body.id], ["2.0", -32000, null])
      assert.match(plain.body.error.message, /^Unsupported Media Type: Content-Type "text\/plain"; send Content-Type: application\/json/)
      const noType = yield* post(port, notJson, { "content-type": undefined })
      assert.strictEqual(noType.status, 415)
      assert.match(noType.body.error.message, /there is no Content-Type header/)

      // no Accept with a body that is not JSON: 406, not -32700
      const noAccept = yield* post(port, notJson, { accept: undefined })
      assert.strictEqual(noAccept.status, 406, noAccept.text)
      assert.deepStrictEqual([noAccept.body.jsonrpc, noAccept.body.error.code, noAccept.body.id], ["2.0", -32000, null])
      assert.match(noAccept.body.error.message, /^Not Acceptable: there is no Accept header; send Accept: application\/json, text\/event-stream/)
      // Accept before Content-Type
      assert.strictEqual((yield* post(port, notJson, { accept: "text/html", "content-type": "text/plain" })).status, 406)
      // both headers before the declared length, the length before the body (which is never sent in full here)
      assert.strictEqual((yield* post(port, "x".repeat(2048), { accept: undefined })).status, 406)
      assert.strictEqual((yield* post(port, "x".repeat(2048), { "content-type": "text/plain" })).status, 415)
      assert.strictEqual((yield* post(port, "x".repeat(2048))).status, 413)

      // the headers right, the body is judged: not JSON, then not JSON-RPC
      const garbage = yield* post(port, notJson)
      assert.deepStrictEqual([garbage.status, garbage.body.error.code], [400, -32700])
      assert.match(garbage.body.error.message, /^Parse error: the body is not valid JSON \(/)
      // by the suite's rules for JSON bodies: not UTF-8 (an id of U+FFFD came back), a key twice (the last won)
      const notUtf8 = yield* post(port, Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":"'), Buffer.from([0xff, 0xfe]), Buffer.from('","method":"ping"}')]))
      assert.deepStrictEqual([notUtf8.status, notUtf8.body.error.code, notUtf8.body.id], [400, -32700, null])
      assert.match(notUtf8.body.error.message, /^Parse error: the body is not valid UTF-8/)
      const twice = yield* post(port, '{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}')
      assert.deepStrictEqual([twice.status, twice.body.error.code], [400, -32700])
      assert.strictEqual(twice.body.error.message, "Parse error: the body's id is given twice in one object: only the last would count, give it once")
      const notRpc = yield* post(port, "{}")
      assert.deepStrictEqual([notRpc.status, notRpc.body.error.code], [400, -32600])
      // a charset parameter is still JSON
      const withCharset = yield* post(port, JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }), {
        "content-type": "Application/JSON; charset=utf-8"
      })
      assert.deepStrictEqual([withCharset.status, withCharset.body.result], [200, {}])
    }).pipe(Effect.scoped))

  it.effect("a body declared in a charset other than UTF-8 is 415 -32000 naming it, before the body is read; UTF-8 by any spelling as before", () =>
    Effect.gen(function*() {
      const port = yield* startMcp({ MCP_MAX_BODY_BYTES: "1024" })
      const ping = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" })
      // the message in UTF-16LE with a byte order mark, as a client that meant its charset sends it (it was -32700 "not valid UTF-8")
      const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(ping, "utf16le")])
      for (const [charset, named] of [["utf-16", "utf-16"], ["\"UTF-16LE\"", "UTF-16LE"], ["iso-8859-1", "iso-8859-1"], ["Shift_JIS", "Shift_JIS"]]) {
        const refused = yield* post(port, utf16, { "content-type": `application/json; charset=${charset}` })
        assert.strictEqual(refused.status, 415, refused.text)
        assert.deepStrictEqual(refused.body, {
          jsonrpc: "2.0",
          error: {
            code: -32000,
            message: `Unsupported Media Type: Content-Type charset "${named}" is not supported: send the JSON body as UTF-8 (charset=utf-8, or no charset; RFC 8259)`
          },
          id: null
        })
      }
      // a header, so judged before a declared length over the cap
      assert.strictEqual((yield* post(port, "x".repeat(2048), { "content-type": "application/json; charset=utf-16" })).status, 415)
      for (const type of ["application/json; charset=UTF-8", "application/json; charset=\"utf-8\"", "application/json;charset=utf8"]) {
        const read = yield* post(port, ping, { "content-type": type })
        assert.deepStrictEqual([read.status, read.body.result], [200, {}], type)
      }
    }).pipe(Effect.scoped))

  it.effect("an empty body is -32700 saying the body is empty", () =>
    Effect.gen(function*() {
      const port = yield* startMcp()
      for (const body of ["", "  \r\n"]) {
        const empty = yield* post(port, body)
        assert.strictEqual(empty.status, 400, JSON.stringify(body))
        assert.deepStrictEqual(empty.body, {
          jsonrpc: "2.0",
          error: { code: -32700, message: "Parse error: the body is empty: expected a JSON-RPC message (a JSON object)" },
          id: null
        })
      }
      // JSON null is a body, and not a message
      const nullBody = yield* post(port, "null")
      assert.deepStrictEqual([nullBody.status, nullBody.body.error.code], [400, -32600])
      assert.include(nullBody.body.error.message, "a message must be a JSON object, not null")
    }).pipe(Effect.scoped))
})

describe("POST /mcp: Accept", () => {
  it("both types listed, or covered by a wildcard range (*/*, application/* with text/*); q=0 refuses; none is not enough", () => {
    for (
      const accept of [
        "application/json, text/event-stream",
        "text/event-stream,application/json",
        "APPLICATION/JSON;q=0.9, text/event-stream;q=0.1",
        "*/*",
        "*/*;q=0.8",
        "application/*, text/*",
        "application/json, text/*",
        "text/html, */*;q=0.1"
      ]
    ) assert.isTrue(acceptsMcpAnswers(accept), accept)
    for (
      const accept of [
        undefined,
        "",
        "application/json",
        "text/event-stream",
        "application/*",
        "text/html",
        "*/*;q=0",
        "*/*, text/event-stream;q=0",
        "application/json;q=0, text/event-stream",
        "application/jsonx, text/event-streamy"
      ]
    ) assert.isFalse(acceptsMcpAnswers(accept), String(accept))
  })

  it.effect("Accept: */* is served (it covers both types); Accept: application/json alone is 406", () =>
    Effect.gen(function*() {
      const port = yield* startMcp()
      const ping = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" })
      for (const accept of ["*/*", "application/*, text/*"]) {
        const answer = yield* post(port, ping, { accept })
        assert.strictEqual(answer.status, 200, `${accept}: ${answer.text}`)
        assert.deepStrictEqual(answer.body, { jsonrpc: "2.0", id: 1, result: {} })
        assert.match(String(answer.headers["content-type"]), /^application\/json/)
      }
      const jsonOnly = yield* post(port, ping, { accept: "application/json" })
      assert.strictEqual(jsonOnly.status, 406)
      assert.match(jsonOnly.body.error.message, /^Not Acceptable: Accept "application\/json"; send Accept: application\/json, text\/event-stream/)
    }).pipe(Effect.scoped))
})

describe("POST /mcp: an id JSON cannot carry exactly", () => {
  it.effect("an integer id past 2^53 - 1 is refused without quoting the rounded value it was parsed to", () =>
    Effect.gen(function*() {
      const port = yield* startMcp()
      for (const id of ["9007199254740993", "9007199254740992", "-9007199254740993", "123456789012345678901234567890", "1e400"]) {
        const answer = yield* post(port, `{"jsonrpc":"2.0","id":${id},"method":"ping"}`)
        assert.strictEqual(answer.status, 400, id)
        assert.deepStrictEqual([answer.body.error.code, answer.body.id], [-32600, null], id)
        assert.strictEqual(
          answer.body.error.message,
          `Invalid Request: "id" is an integer beyond ±9007199254740991 (2^53 - 1), which this server cannot read exactly; send it as a string`,
          id
        )
      }
      // the largest exact one is served as it was sent; a fraction is still named
      const largest = yield* post(port, `{"jsonrpc":"2.0","id":9007199254740991,"method":"ping"}`)
      assert.strictEqual(largest.status, 200)
      assert.include(largest.text, `"id":9007199254740991`)
      const fraction = yield* post(port, `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`)
      assert.strictEqual(fraction.body.error.message, `Invalid Request: "id" must be a string or an integer, not 1.5`)
    }).pipe(Effect.scoped))
})

describe("POST /mcp: batches", () => {
  const ping = (id: number | string) => ({ jsonrpc: "2.0", id, method: "ping" })
  const initialized = { jsonrpc: "2.0", method: "notifications/initialized" }
  const aResponse = { jsonrpc: "2.0", id: "from-client", result: {} }

  it.effect("a batch is answered with an array of the responses to its requests, even when it holds one request", () =>
    Effect.gen(function*() {
      const port = yield* startMcp()
      // batches are MCP 2025-03-26's (the version a client that names none speaks)
      for (const version of [undefined, "2025-03-26"]) {
        const batch = (messages: ReadonlyArray<unknown>) =>
          post(port, JSON.stringify(messages), { "mcp-protocol-version": version })
        for (
          const [messages, ids] of [
            [[ping(1)], [1]],
            [[initialized, ping(2)], [2]],
            [[aResponse, ping(3)], [3]],
            [[ping(4), ping("five")], [4, "five"]]
          ] as const
        ) {
          const answer = yield* batch(messages)
          const what = `${version}: ${JSON.stringify(messages)}`
          assert.strictEqual(answer.status, 200, `${what}: ${answer.text}`)
          assert.isTrue(Array.isArray(answer.body), `${what}: ${answer.text}`)
          assert.deepStrictEqual(answer.body.map((item: any) => item.id), [...ids], what)
          for (const item of answer.body) assert.deepStrictEqual(item.result, {}, what)
        }
        // nothing to answer: 202 and no body, as before
        const silent = yield* batch([initialized, aResponse])
        assert.deepStrictEqual([silent.status, silent.text], [202, ""], String(version))
      }
      // a single message (not in an array) is answered with a single object
      const single = yield* post(port, JSON.stringify(ping(6)), { "mcp-protocol-version": "2025-03-26" })
      assert.deepStrictEqual(single.body, { jsonrpc: "2.0", id: 6, result: {} })
      // a batch that cancels one of its two requests: the other's answer, in an array
      const cancelling = yield* post(port, JSON.stringify([
        { jsonrpc: "2.0", id: 7, method: "tools/list" },
        { jsonrpc: "2.0", id: 8, method: "tools/list" },
        { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 7 } }
      ]))
      assert.strictEqual(cancelling.status, 200)
      assert.deepStrictEqual(cancelling.body.map((item: any) => item.id), [8])
      assert.strictEqual(cancelling.body[0].result.tools.length, 2)
      // an error to a batch's request is in the array too (the SDK's own -32603 in words)
      const refused = yield* post(port, JSON.stringify([{ jsonrpc: "2.0", id: 9, method: "tools/list", params: { cursor: 5 } }]))
      assert.strictEqual(refused.status, 200)
      assert.deepStrictEqual([refused.body.length, refused.body[0].id, refused.body[0].error.code], [1, 9, -32602])
      // 2025-06-18 and later have no batches: refused whole, naming why; one message still served
      for (const version of ["2025-06-18", "2025-11-25"]) {
        const later = yield* post(port, JSON.stringify([ping(11)]), { "mcp-protocol-version": version })
        assert.strictEqual(later.status, 400, version)
        assert.deepStrictEqual([later.body.error.code, later.body.id], [-32600, null], version)
        assert.include(later.body.error.message, `MCP ${version} takes one JSON-RPC message per request, not a batch`)
        const one = yield* post(port, JSON.stringify(ping(12)), { "mcp-protocol-version": version })
        assert.deepStrictEqual(one.body, { jsonrpc: "2.0", id: 12, result: {} }, version)
      }
      // at most 100 messages (the SDK's cap, documented): 101 pings are refused whole, saying so
      const hundred = yield* post(port, JSON.stringify(Array.from({ length: 100 }, (_, i) => ping(100 + i))))
      assert.deepStrictEqual([hundred.status, hundred.body.length], [200, 100])
      const tooMany = yield* post(port, JSON.stringify(Array.from({ length: 101 }, (_, i) => ping(100 + i))))
      assert.deepStrictEqual([tooMany.status, tooMany.body.id, tooMany.body.error.code], [400, null, -32600])
      assert.include(tooMany.body.error.message, "Batch must not exceed 100 messages")
      // a batch the transport refuses whole stays one error object (JSON-RPC: a batch it cannot serve at all)
      // ... and so is a version that is no date: "xxxx" sorted after every date, and was told batches had ended
      for (const bad of ["1999-01-01", "xxxx", "2025-13"]) {
        const badVersion = yield* post(port, JSON.stringify([ping(10)]), { "mcp-protocol-version": bad })
        assert.strictEqual(badVersion.status, 400, bad)
        assert.isFalse(Array.isArray(badVersion.body), bad)
        assert.match(badVersion.body.error.message, /Unsupported protocol version/, bad)
      }
    }).pipe(Effect.scoped))
})

describe("CORS: browser clients at an allowed origin", () => {
  const preflightFrom = (port: number, origin: string, extra: Record<string, string> = {}, path = "/mcp") =>
    exactRequest(port, {
      method: "OPTIONS",
      path,
      headers: {
        origin,
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type,authorization,mcp-protocol-version",
        ...extra
      }
    })
  const tokens = (value: unknown) => String(value ?? "").split(",").map((item) => item.trim().toLowerCase()).filter((item) => item !== "")
  const ping = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" })

  it.effect("a preflight from an allowed origin: 204 naming that origin, the methods, the MCP request headers and a max-age", () =>
    Effect.gen(function*() {
      const port = yield* startMcp()
      const origin = "http://localhost:3000"
      const answer = yield* preflightFrom(port, origin)
      assert.strictEqual(answer.status, 204, answer.text)
      assert.strictEqual(answer.text, "")
      assert.strictEqual(answer.headers["access-control-allow-origin"], origin)
      assert.include(tokens(answer.headers["vary"]), "origin")
      assert.includeMembers(tokens(answer.headers["access-control-allow-methods"]), ["post", "get", "delete"])
      assert.includeMembers(tokens(answer.headers["access-control-allow-headers"]), [
        "content-type",
        "accept",
        "authorization",
        "mcp-protocol-version",
        "mcp-session-id",
        "last-event-id",
        "x-svc-api-key",
        "x-api-key"
      ])
      assert.strictEqual(answer.headers["access-control-max-age"], "7200")
      assert.notProperty(answer.headers, "access-control-allow-credentials")
      assert.notProperty(answer.headers, "access-control-allow-private-network")
      // Chromium's Private Network Access: a public page calling this machine asks for it
      const privateNetwork = yield* preflightFrom(port, origin, { "access-control-request-private-network": "true" })
      assert.strictEqual(privateNetwork.headers["access-control-allow-private-network"], "true")
      // an OPTIONS that is not a preflight: 204, nothing granted but the origin
      const plain = yield* exactRequest(port, { method: "OPTIONS" })
      assert.strictEqual(plain.status, 204)
      assert.notProperty(plain.headers, "access-control-allow-origin")
      assert.notProperty(plain.headers, "access-control-allow-methods")
      // OPTIONS lists the methods in Allow, as on every other route of the suite and as the 405 does
      // (the MCP routes answered it without one) — outside hostile-input sweep
      assert.strictEqual(plain.headers["allow"], "POST, OPTIONS")
      assert.strictEqual(answer.headers["allow"], "POST, OPTIONS")
      const refused = yield* exactRequest(port, { method: "PUT" })
      assert.strictEqual(refused.headers["allow"], plain.headers["allow"])
      for (const path of ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"]) {
        const metadata = yield* exactRequest(port, { method: "OPTIONS", path })
        assert.strictEqual(metadata.status, 204)
        assert.strictEqual(metadata.headers["allow"], "GET, HEAD, OPTIONS", path)
        assert.strictEqual((yield* exactRequest(port, { method: "PUT", path })).headers["allow"], "GET, HEAD, OPTIONS", path)
      }
    }).pipe(Effect.scoped))

  it.effect("answers to an allowed origin carry the grant and expose the MCP headers, errors too; no Origin, no grant", () =>
    Effect.gen(function*() {
      const port = yield* startMcp()
      const origin = "http://127.0.0.1:5173"
      const served = yield* post(port, ping, { origin })
      assert.strictEqual(served.status, 200, served.text)
      assert.deepStrictEqual(served.body, { jsonrpc: "2.0", id: 1, result: {} })
      assert.strictEqual(served.headers["access-control-allow-origin"], origin)
      assert.include(tokens(served.headers["vary"]), "origin")
      assert.includeMembers(tokens(served.headers["access-control-expose-headers"]), [
        "mcp-session-id",
        "mcp-protocol-version",
        "www-authenticate"
      ])
      // a browser must be able to read why it was refused: 406, -32600, 405 carry the grant too
      for (
        const answer of [
          yield* post(port, ping, { origin, accept: "application/json" }),
          yield* post(port, "{}", { origin }),
          yield* exactRequest(port, { method: "GET", headers: { origin, accept: "text/event-stream" } }),
          yield* exactRequest(port, { method: "DELETE", headers: { origin } })
        ]
      ) {
        assert.isAtLeast(answer.status, 400)
        assert.strictEqual(answer.headers["access-control-allow-origin"], origin, answer.text)
      }
      // no Origin (not a browser): served, no grant, still Vary: Origin for caches
      const noOrigin = yield* post(port, ping)
      assert.strictEqual(noOrigin.status, 200)
      assert.notProperty(noOrigin.headers, "access-control-allow-origin")
      assert.include(tokens(noOrigin.headers["vary"]), "origin")
    }).pipe(Effect.scoped))

  it.effect("a disallowed origin gets no grant: its preflight and its requests are the 403 they were", () =>
    Effect.gen(function*() {
      const port = yield* startMcp()
      const origin = "http://evil.example.com"
      const preflight = yield* preflightFrom(port, origin)
      assert.strictEqual(preflight.status, 403)
      assert.match(preflight.body.error.message, /Origin "http:\/\/evil\.example\.com" is not allowed/)
      const refused = yield* post(port, ping, { origin })
      assert.strictEqual(refused.status, 403)
      for (const answer of [preflight, refused]) {
        for (const name of ["access-control-allow-origin", "access-control-allow-methods", "access-control-allow-headers"]) {
          assert.notProperty(answer.headers, name)
        }
      }
      // an allowed origin on a Host the server does not answer: 403 (the grant lets the page read why)
      const wrongHost = yield* preflightFrom(port, "http://localhost:3000", { host: "evil.example.com" })
      assert.strictEqual(wrongHost.status, 403)
      assert.notProperty(wrongHost.headers, "access-control-allow-methods")
    }).pipe(Effect.scoped))

  it.effect("MCP_ALLOWED_ORIGINS decides: a listed origin is granted, the defaults are not; * grants each origin by name, never null", () =>
    Effect.gen(function*() {
      const listed = yield* startMcp({ MCP_ALLOWED_ORIGINS: "https://app.example.com" })
      const app = yield* preflightFrom(listed, "https://app.example.com")
      assert.strictEqual(app.status, 204)
      assert.strictEqual(app.headers["access-control-allow-origin"], "https://app.example.com")
      const appPost = yield* post(listed, ping, { origin: "https://app.example.com" })
      assert.deepStrictEqual([appPost.status, appPost.headers["access-control-allow-origin"]], [200, "https://app.example.com"])
      const local = yield* preflightFrom(listed, "http://localhost:3000")
      assert.strictEqual(local.status, 403)
      assert.notProperty(local.headers, "access-control-allow-origin")

      const open = yield* startMcp({ MCP_ALLOWED_ORIGINS: "*" })
      const any = yield* preflightFrom(open, "https://anyone.example.org")
      assert.strictEqual(any.status, 204)
      assert.strictEqual(any.headers["access-control-allow-origin"], "https://anyone.example.org")
      const opaque = yield* preflightFrom(open, "null")
      assert.notProperty(opaque.headers, "access-control-allow-origin")
      assert.notProperty(opaque.headers, "access-control-allow-methods")

      // a value that is not an origin is refused like a foreign one, also with *; case is normalised in the grant
      for (const port of [listed, open]) {
        for (const origin of ["https://app.example.com/path", "https://app.example.com/"]) {
          const notOrigin = yield* post(port, ping, { origin })
          assert.strictEqual(notOrigin.status, 403, origin)
          assert.notProperty(notOrigin.headers, "access-control-allow-origin")
        }
        const upper = yield* post(port, ping, { origin: "HTTPS://APP.EXAMPLE.COM" })
        assert.deepStrictEqual([upper.status, upper.headers["access-control-allow-origin"]], [200, "https://app.example.com"])
      }
    }).pipe(Effect.scoped))

  it.effect("the RFC 9728 metadata and /mcp/oauth answer an allowed origin's preflight and requests; /ping is not for browsers", () =>
    Effect.gen(function*() {
      const port = yield* startMcp()
      const origin = "http://localhost:6274"
      for (const path of ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"]) {
        const preflight = yield* preflightFrom(port, origin, { "access-control-request-method": "GET" }, path)
        assert.strictEqual(preflight.status, 204, path)
        assert.strictEqual(preflight.headers["access-control-allow-origin"], origin, path)
        assert.deepStrictEqual(tokens(preflight.headers["access-control-allow-methods"]), ["get"], path)
        const metadata = yield* exactRequest(port, { method: "GET", path, headers: { origin } })
        assert.strictEqual(metadata.status, 200, path)
        assert.strictEqual(metadata.headers["access-control-allow-origin"], origin, path)
        const foreign = yield* exactRequest(port, { method: "GET", path, headers: { origin: "http://evil.example.com" } })
        assert.strictEqual(foreign.status, 200, "public metadata, served; only not granted to a disallowed origin")
        assert.notProperty(foreign.headers, "access-control-allow-origin")
      }
      const oauthPreflight = yield* preflightFrom(port, origin, {}, "/mcp/oauth")
      assert.strictEqual(oauthPreflight.status, 204)
      assert.strictEqual(oauthPreflight.headers["access-control-allow-origin"], origin)
      const oauth = yield* exactRequest(port, { method: "GET", path: "/mcp/oauth", headers: { origin } })
      assert.deepStrictEqual([oauth.status, oauth.headers["access-control-allow-origin"]], [404, origin])
      const ping = yield* exactRequest(port, { method: "GET", path: "/ping", headers: { origin } })
      assert.strictEqual(ping.status, 200)
      assert.notProperty(ping.headers, "access-control-allow-origin")
    }).pipe(Effect.scoped))
})

describe("POST /mcp: JSON the MCP SDK's message schema refuses", () => {
  it.effect("is -32600 naming the fault, with the request's id, never -32700 (valid JSON is no parse error)", () =>
    Effect.gen(function*() {
      const port = yield* startMcp()
      const cases: ReadonlyArray<readonly [string, unknown, string]> = [
        [
          `{"jsonrpc":"2.0","id":1,"method":"ping","extra":1}`,
          1,
          `Invalid Request: the message has a member JSON-RPC 2.0 does not define: "extra"`
        ],
        [
          `{"jsonrpc":"2.0","id":"a","method":"ping","params":{"_meta":{"progressToken":{}}}}`,
          "a",
          `Invalid Request: "params._meta.progressToken" must be a string or an integer, not object`
        ],
        // a response's id names a request of the server's: never echoed
        [
          `{"jsonrpc":"2.0","id":1,"result":{},"extra":1}`,
          null,
          `Invalid Request: the message has a member JSON-RPC 2.0 does not define: "extra"`
        ],
        [
          `[{"jsonrpc":"2.0","id":1,"method":"ping","extra":1}]`,
          null,
          `Invalid Request: message 1 of the batch: the message has a member JSON-RPC 2.0 does not define: "extra"`
        ],
        [`{"jsonrpc":"2.0","method":"notifications/initialized","a":1,"b":2}`, null, `members JSON-RPC 2.0 does not define: "a", "b"`]
      ]
      for (const [body, id, message] of cases) {
        const answer = yield* post(port, body)
        assert.strictEqual(answer.status, 400, body)
        assert.deepStrictEqual([answer.body.error.code, answer.body.id], [-32600, id], body)
        assert.include(answer.body.error.message, message, body)
      }
      // what the schema takes still reaches the SDK
      const ping = yield* post(port, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"progressToken":"t"}}}`)
      assert.deepStrictEqual([ping.status, ping.body], [200, { jsonrpc: "2.0", id: 1, result: {} }])
    }).pipe(Effect.scoped))
})

describe("POST /mcp: a batch holding an initialize", () => {
  it.effect("is refused saying an initialize must be sent alone (not 'Only one initialization request is allowed')", () =>
    Effect.gen(function*() {
      const port = yield* startMcp()
      const initialize = {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "t", version: "1" } }
      }
      const list = { jsonrpc: "2.0", id: 2, method: "tools/list" }
      for (const [batch, at] of [[[initialize, list], 1], [[list, initialize], 2]] as const) {
        const answer = yield* post(port, JSON.stringify(batch))
        assert.deepStrictEqual([answer.status, answer.body.error.code, answer.body.id], [400, -32600, null])
        assert.strictEqual(
          answer.body.error.message,
          `Invalid Request: message ${at} of the batch is an initialize, which must be sent alone, not in a batch with other messages: send it, then the rest`
        )
      }
      // alone (in a batch of one, 2025-03-26 style), it is served
      const alone = yield* post(port, JSON.stringify([initialize]))
      assert.strictEqual(alone.status, 200, alone.text)
      assert.isString(alone.body[0].result.serverInfo.name)
    }).pipe(Effect.scoped))
})
