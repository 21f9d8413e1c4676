/**
 * The MCP server over stateless Streamable HTTP, driven by the MCP SDK's own Client, against the real
 * REST API v2 (real sockets, a real database with indexed libraries): tools/list schemas, both tools
 * with canonical arguments and every alias, failures as tool results, 405s, ping, 404, the RFC 9728
 * metadata, the cancelled-in-batch rule, and the caller's key reaching the API.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Database, serve } from "@svc/platform"
import { Context, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { SqlClient } from "effect/sql"
import { spawn, spawnSync } from "node:child_process"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { Indexer } from "../src/Indexer.ts"
import * as RunLocks from "../src/RunLocks.ts"
import { DocsClient } from "../src/mcp/DocsClient.ts"
import { routes as mcpRoutes } from "../src/mcp/McpHttp.ts"
import { Client, docsFolder, socketClient, stack } from "./support.ts"

const bin = new URL("../../cli/src/bin.ts", import.meta.url).pathname

const retryDocs = {
  "README.md": "# HTTP client\n\nSend HTTP requests from Node.js with a small fluent API.\n",
  "retries.md": "# Retries\n\nRetry failed requests automatically with exponential backoff.\n\n" +
    "```ts\nclient.get(url, { retry: { times: 3, backoff: \"exponential\" } })\n```\n",
  "svc.json": JSON.stringify({ rules: ["Give every request a timeout"] })
}

const Seeded = Layer.effectDiscard(Effect.gen(function*() {
  const indexer = yield* Indexer
  yield* indexer.add(yield* docsFolder(retryDocs), { id: "/acme/http-client", version: "1.0.0" })
  const sql = yield* SqlClient.SqlClient
  yield* sql`INSERT INTO docs.libraries (id, title, source_kind, source_location, default_version)
             VALUES ('/acme/pending', 'pending', 'folder', '/nowhere', '0.1.0')`
  yield* sql`INSERT INTO docs.versions (library_id, version, state) VALUES ('/acme/pending', '0.1.0', 'indexing')`
}))

/** What reached the REST API: the Authorization header of each request (a proxy in front of it). */
class SeenKeys extends Context.Service<SeenKeys, Array<string | undefined>>()("test/SeenKeys") {}

class Mcp extends Context.Service<Mcp, { readonly baseUrl: string; readonly apiProxyUrl: string }>()("test/Mcp") {}

/** A recording proxy in front of the REST API, and the MCP HTTP server calling the API through it. */
const McpLive = Layer.unwrap(Effect.gen(function*() {
  const api = yield* Client
  const seen: Array<string | undefined> = []
  const proxy = yield* Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<Http.Server>((resolve) => {
        const server = Http.createServer(async (req, res) => {
          seen.push(req.headers["authorization"])
          const answer = await fetch(api.baseUrl + req.url, { headers: { accept: String(req.headers["accept"] ?? "*/*") } })
          res.writeHead(answer.status, Object.fromEntries(answer.headers)).end(Buffer.from(await answer.arrayBuffer()))
        })
        server.listen(0, "127.0.0.1", () => resolve(server))
      })
    ),
    (server) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
  )
  const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
  const mcpServer = serve(mcpRoutes, { name: "mcp", port: 0, host: "127.0.0.1" }).pipe(
    Layer.provide(DocsClient.layer({ baseUrl: proxyUrl, timeout: "5 seconds" }))
  )
  return Layer.mergeAll(
    Layer.succeed(SeenKeys, seen),
    Layer.effect(Mcp, Effect.gen(function*() {
      const { address } = yield* HttpServer.HttpServer
      return { baseUrl: `http://127.0.0.1:${address._tag === "UnixPathAddress" ? 0 : address.port}`, apiProxyUrl: proxyUrl }
    })).pipe(Layer.provide(mcpServer))
  )
}))

const TestLayer = McpLive.pipe(
  Layer.provideMerge(socketClient),
  Layer.provideMerge(Seeded),
  Layer.provideMerge(stack)
) as Layer.Layer<Mcp | SeenKeys | Client | Database | SqlClient.SqlClient, unknown>

/** An MCP SDK client connected over Streamable HTTP, closed with the scope. */
const connect = (headers: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* Mcp
    const client = new McpClient({ name: "svc-test", version: "1.0.0" })
    const transport = new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), { requestInit: { headers } })
    yield* Effect.acquireRelease(Effect.promise(() => client.connect(transport)), () => Effect.promise(() => client.close()))
    return client
  })

const textOf = (result: any): string => result.content.map((item: any) => item.text).join("\n")

const post = (body: unknown, headers: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* Mcp
    return yield* Effect.promise(() =>
      fetch(`${baseUrl}/mcp`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
        body: JSON.stringify(body)
      })
    )
  })

layer(TestLayer, { excludeTestServices: true, timeout: 60_000 })("MCP over HTTP", (it) => {
  it.effect("tools/list: both tools with canonical schemas and the 3-calls instruction", () =>
    Effect.gen(function*() {
      const client = yield* connect()
      const { tools } = yield* Effect.promise(() => client.listTools())
      assert.deepStrictEqual(tools.map((tool) => tool.name), ["resolve-library-id", "query-docs"])
      const [resolve, query] = tools
      assert.deepStrictEqual(Object.keys(resolve!.inputSchema.properties!).sort(), ["libraryName", "query"])
      assert.deepStrictEqual([...resolve!.inputSchema.required!].sort(), ["libraryName", "query"])
      assert.deepStrictEqual(Object.keys(query!.inputSchema.properties!).sort(), ["libraryId", "query"])
      assert.deepStrictEqual([...query!.inputSchema.required!].sort(), ["libraryId", "query"])
      for (const tool of tools) assert.match(tool.description!, /more than 3 times/)
      // titles and annotations for the client's UI and its confirmation rules: both tools only read
      assert.deepStrictEqual(tools.map((tool) => tool.title), ["Resolve library ID", "Query documentation"])
      for (const tool of tools) {
        assert.strictEqual(tool.annotations?.readOnlyHint, true, tool.name)
        assert.strictEqual(tool.annotations?.destructiveHint, false, tool.name)
        assert.strictEqual(tool.annotations?.openWorldHint, true, tool.name)
      }
      // the initialize result's instructions: the order of the calls
      const instructions = client.getInstructions() ?? ""
      assert.match(instructions, /1\. Call resolve-library-id[\s\S]*2\. Call query-docs/)
    }).pipe(Effect.scoped))

  it.effect("get-library-docs (Context7's old name) answers like query-docs and is not listed", () =>
    Effect.gen(function*() {
      const client = yield* connect()
      const { tools } = yield* Effect.promise(() => client.listTools())
      assert.notInclude(tools.map((tool) => tool.name), "get-library-docs")
      const result = yield* Effect.promise(() =>
        client.callTool({
          name: "get-library-docs",
          arguments: { context7CompatibleLibraryID: "/acme/http-client", topic: "exponential backoff", tokens: 2000 }
        })
      )
      assert.isUndefined(result.isError)
      assert.include(textOf(result), "backoff: \"exponential\"")
    }).pipe(Effect.scoped))

  it.effect("a malformed library id (react) says what is wrong and what to do, and reaches no API", () =>
    Effect.gen(function*() {
      const client = yield* connect()
      const seen = yield* SeenKeys
      seen.length = 0
      const result = yield* Effect.promise(() =>
        client.callTool({ name: "query-docs", arguments: { libraryId: "react", query: "useEffect cleanup" } })
      )
      assert.isTrue(result.isError)
      assert.match(textOf(result), /^"react" is not a library ID: .*\/owner\/repo.*Call resolve-library-id first \(libraryName "react"\)/)
      assert.notMatch(textOf(result), /try again/i)
      assert.deepStrictEqual(seen, [], "refused before any API call")
    }).pipe(Effect.scoped))

  it.effect("resolve-library-id with canonical arguments and each alias finds the library", () =>
    Effect.gen(function*() {
      const client = yield* connect()
      for (const args of [
        { query: "retry requests", libraryName: "http-client" },
        { userQuery: "retry requests", libraryName: "http-client" },
        { question: "retry requests", libraryName: "http-client" }
      ]) {
        const result = yield* Effect.promise(() => client.callTool({ name: "resolve-library-id", arguments: args }))
        assert.isUndefined(result.isError, JSON.stringify(args))
        assert.include(textOf(result), "Library ID: /acme/http-client", JSON.stringify(args))
      }
      const none = yield* Effect.promise(() =>
        client.callTool({ name: "resolve-library-id", arguments: { query: "x", libraryName: "zzqqxx-nothing" } })
      )
      assert.isTrue(none.isError)
      assert.match(textOf(none), /No indexed library matches "zzqqxx-nothing"/)
    }).pipe(Effect.scoped))

  it.effect("query-docs with canonical arguments and each alias answers with the snippet", () =>
    Effect.gen(function*() {
      const client = yield* connect()
      for (const args of [
        { libraryId: "/acme/http-client", query: "retry with exponential backoff" },
        { libraryId: "/acme/http-client", userQuery: "retry with exponential backoff" },
        { libraryId: "/acme/http-client", question: "retry with exponential backoff" },
        { svcCompatibleLibraryID: "/acme/http-client", query: "retry with exponential backoff" },
        { libraryID: "/acme/http-client", query: "retry with exponential backoff" },
        { libraryName: "/acme/http-client", query: "retry with exponential backoff" }
      ]) {
        const result = yield* Effect.promise(() => client.callTool({ name: "query-docs", arguments: args }))
        assert.isUndefined(result.isError, JSON.stringify(args))
        assert.include(textOf(result), "backoff: \"exponential\"", JSON.stringify(args))
        // the library's rules (its svc.json) come first, as Context7 answers with a library's rules
        assert.isTrue(textOf(result).startsWith("### Rules for /acme/http-client/1.0.0\n\n- Give every request a timeout\n"), textOf(result).slice(0, 200))
      }
    }).pipe(Effect.scoped))

  it.effect("failures are tool results: missing argument, unknown library, queued or being indexed", () =>
    Effect.gen(function*() {
      const client = yield* connect()
      const missing = yield* Effect.promise(() => client.callTool({ name: "query-docs", arguments: { query: "x" } }))
      assert.isTrue(missing.isError)
      assert.match(textOf(missing), /libraryId must be a non-empty string/)
      // get-library-docs' refusals name its own arguments (Context7's), or the alias the caller sent
      const legacy = (args: Record<string, unknown>) => Effect.promise(() => client.callTool({ name: "get-library-docs", arguments: args }))
      assert.strictEqual(
        textOf(yield* legacy({ topic: "x" })),
        "Invalid arguments for get-library-docs: context7CompatibleLibraryID must be a non-empty string. Required arguments: context7CompatibleLibraryID."
      )
      assert.match(textOf(yield* legacy({ libraryID: 7 })), /^Invalid arguments for get-library-docs: libraryID must be a non-empty string\. Required arguments: libraryID\.$/)
      const longTopic = textOf(yield* legacy({ context7CompatibleLibraryID: "/acme/http-client", topic: "x".repeat(5000) }))
      assert.include(longTopic, `at ["topic"]`)
      assert.notInclude(longTopic, `["query"]`)
      const unknown = yield* Effect.promise(() =>
        client.callTool({ name: "query-docs", arguments: { libraryId: "/nobody/nothing", query: "x" } })
      )
      assert.isTrue(unknown.isError)
      assert.match(textOf(unknown), /No library has the ID \/nobody\/nothing.*resolve-library-id/)
      const pending = yield* Effect.promise(() =>
        client.callTool({ name: "query-docs", arguments: { libraryId: "/acme/pending", query: "x" } })
      )
      assert.isTrue(pending.isError)
      // stored `indexing` with no run holding its lock (RunLocks.ts): a run that died, waiting to be taken up
      assert.strictEqual(
        textOf(pending),
        "The documentation of /acme/pending is queued for indexing (state: queued). Try again in a minute, or answer without it."
      )
      // the same row while a run holds its lock: a live run
      const [row] = yield* (yield* SqlClient.SqlClient)<{ readonly id: string }>`
        SELECT id::text FROM docs.versions WHERE library_id = '/acme/pending'`
      const locks = yield* RunLocks.make((yield* Database).url)
      assert.strictEqual(yield* locks.take(row!.id), "taken")
      const live = yield* Effect.promise(() => client.callTool({ name: "query-docs", arguments: { libraryId: "/acme/pending", query: "x" } }))
        .pipe(Effect.ensuring(locks.release(row!.id)))
      assert.isTrue(live.isError)
      assert.strictEqual(
        textOf(live),
        "The documentation of /acme/pending is being indexed (state: indexing). Try again in a minute, or answer without it."
      )
    }).pipe(Effect.scoped))

  it.effect("an unknown tool is a protocol error, -32602 with the request's id (MCP 2025-11-25), not a tool result", () =>
    Effect.gen(function*() {
      const client = yield* connect()
      const refused = yield* Effect.promise(() =>
        client.callTool({ name: "no-such-tool", arguments: {} }).then(
          (result) => ({ result }),
          (error: { readonly code?: unknown; readonly message: string }) => ({ error })
        )
      )
      assert.notProperty(refused, "result", JSON.stringify(refused))
      const error = (refused as { readonly error: { readonly code?: unknown; readonly message: string } }).error
      assert.strictEqual(error.code, -32602)
      // said once: the SDK's client puts "MCP error -32602:" in front itself
      assert.strictEqual(
        error.message,
        `MCP error -32602: Unknown tool: "no-such-tool"; the tools are resolve-library-id and query-docs`
      )
      const raw = yield* post(
        { jsonrpc: "2.0", id: 41, method: "tools/call", params: { name: "x".repeat(500), arguments: {} } },
        { "mcp-protocol-version": "2025-11-25" }
      )
      assert.strictEqual(raw.status, 200)
      const answer = yield* Effect.promise(() => raw.json())
      assert.strictEqual(answer.id, 41)
      assert.strictEqual(answer.error.code, -32602)
      // a long name is cut in the message
      assert.strictEqual(answer.error.message, `Unknown tool: "${"x".repeat(100)}…"; the tools are resolve-library-id and query-docs`)
      // the alias is not unknown
      const legacy = yield* Effect.promise(() =>
        client.callTool({ name: "get-library-docs", arguments: { context7CompatibleLibraryID: "/acme/http-client", topic: "backoff" } })
      )
      assert.isUndefined(legacy.isError)
    }).pipe(Effect.scoped))

  it.effect("the caller's key reaches the API, from each of the three headers", () =>
    Effect.gen(function*() {
      const seen = yield* SeenKeys
      for (const [headers, key] of [
        [{ authorization: "Bearer svcsk_one" }, "svcsk_one"],
        [{ "x-svc-api-key": "svcsk_two" }, "svcsk_two"],
        [{ "x-api-key": "svcsk_three" }, "svcsk_three"]
      ] as const) {
        const client = yield* connect(headers)
        seen.length = 0
        yield* Effect.promise(() =>
          client.callTool({ name: "resolve-library-id", arguments: { query: "q", libraryName: "http-client" } })
        )
        assert.deepStrictEqual(seen, [`Bearer ${key}`])
      }
      // and none when the caller sent none
      const anonymous = yield* connect()
      seen.length = 0
      yield* Effect.promise(() =>
        anonymous.callTool({ name: "resolve-library-id", arguments: { query: "q", libraryName: "http-client" } })
      )
      assert.deepStrictEqual(seen, [undefined])
    }).pipe(Effect.scoped))

  it.effect("stateless: no Mcp-Session-Id; every method but POST and OPTIONS is 405; ping; JSON 404; RFC 9728 metadata", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* Mcp
      const list = yield* post({ jsonrpc: "2.0", id: 1, method: "tools/list" })
      assert.strictEqual(list.status, 200)
      assert.isNull(list.headers.get("mcp-session-id"))
      const listed = yield* Effect.promise(() => list.json())
      assert.strictEqual(listed.result.tools.length, 2)
      // every method but POST and OPTIONS: one 405, one Allow (PUT once listed GET and DELETE there)
      for (const method of ["GET", "DELETE", "PUT", "PATCH", "HEAD"]) {
        const response = yield* Effect.promise(() => fetch(`${baseUrl}/mcp`, { method }))
        assert.strictEqual(response.status, 405, method)
        assert.strictEqual(response.headers.get("allow"), "POST, OPTIONS", method)
        if (method !== "HEAD") assert.strictEqual((yield* Effect.promise(() => response.json())).error.code, -32000, method)
      }
      const ping = yield* Effect.promise(() => fetch(`${baseUrl}/ping`).then((r) => r.json()))
      assert.deepStrictEqual(ping, { status: "ok", message: "pong" })
      const missing = yield* Effect.promise(() => fetch(`${baseUrl}/nope`))
      assert.strictEqual(missing.status, 404)
      assert.strictEqual((yield* Effect.promise(() => missing.json())).code, "not_found")
      const metadata = yield* Effect.promise(() => fetch(`${baseUrl}/.well-known/oauth-protected-resource`).then((r) => r.json()))
      // the default public URL: localhost and the port served, whatever Host the request named
      assert.strictEqual(metadata.resource, `${baseUrl.replace("127.0.0.1", "localhost")}/mcp`)
      assert.deepStrictEqual(metadata.bearer_methods_supported, ["header"])
      // there is no OAuth server: none is named
      assert.notProperty(metadata, "authorization_servers")
      const oauth = yield* Effect.promise(() => fetch(`${baseUrl}/mcp/oauth`))
      assert.strictEqual(oauth.status, 404)
      assert.strictEqual((yield* Effect.promise(() => oauth.json())).code, "oauth_not_supported")
    }))

  it.effect("JSON that is not JSON-RPC is -32600 naming the fault; tools/call params the tools cannot take -32602", () =>
    Effect.gen(function*() {
      const answer = (body: unknown, raw?: string) =>
        Effect.gen(function*() {
          const response = raw === undefined ? yield* post(body) : yield* Effect.gen(function*() {
            const { baseUrl } = yield* Mcp
            return yield* Effect.promise(() =>
              fetch(`${baseUrl}/mcp`, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream" }, body: raw })
            )
          })
          return { status: response.status, body: yield* Effect.promise(() => response.json()) as Effect.Effect<any> }
        })
      const invalid: ReadonlyArray<readonly [unknown, string]> = [
        [{ jsonrpc: "2.0", id: 1.5, method: "ping" }, `"id" must be a string or an integer, not 1.5`],
        [{ jsonrpc: "2.0", id: null, method: "ping" }, `"id" must be a string or an integer, not null`],
        [{ jsonrpc: "2.0", id: { a: 1 }, method: "ping" }, `"id" must be a string or an integer`],
        [{ jsonrpc: "1.0", id: 1, method: "ping" }, `"jsonrpc" must be "2.0"`],
        [{ jsonrpc: "2.0", id: 1, method: "tools/list", params: [1] }, `"params" must be an object, not an array`],
        [{ jsonrpc: "2.0", id: 1 }, `a message needs a "method"`],
        ["ping", "a message must be a JSON object, not string"],
        [[], "an empty batch"],
        [[{ jsonrpc: "2.0", id: 1, method: "ping" }, { jsonrpc: "2.0", id: "x" }], `message 2 of the batch: a message needs a "method"`],
        [{ jsonrpc: "2.0", id: 1, method: "ping", result: {} }, `a message has a "method" (a request) or a "result" or "error" (a response), not both`],
        [{ jsonrpc: "2.0", id: 1, result: 5 }, `"result" must be an object, not number`],
        [{ jsonrpc: "2.0", id: 1, error: "boom" }, `"error" must be an object with an integer "code" and a string "message"`],
        [{ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "query-docs", _meta: "x" } }, `"params._meta" must be an object, not string`],
        [[{ jsonrpc: "2.0", id: 1, method: "ping" }, { jsonrpc: "2.0", id: 1, method: "tools/list" }], `the id 1 is given to two requests of the batch`]
      ]
      for (const [body, problem] of invalid) {
        const { body: error, status } = yield* answer(body)
        assert.strictEqual(status, 400, JSON.stringify(body))
        assert.strictEqual(error.error.code, -32600, JSON.stringify(body))
        assert.include(error.error.message, `Invalid Request: ${problem}`, JSON.stringify(body))
        // the request's id when it has a usable one (a single request), else null (a batch, a response, a bad id)
        const request = body as any
        const usable = !Array.isArray(body) && typeof request?.method === "string" &&
          (typeof request.id === "string" || Number.isSafeInteger(request.id))
        assert.strictEqual(error.id, usable ? request.id : null, JSON.stringify(body))
      }
      // an id past 2^53 is not an integer JSON can carry exactly
      const huge = yield* answer(undefined, `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`)
      assert.deepStrictEqual([huge.status, huge.body.error.code], [400, -32600])
      for (const [args, problem] of [[null, "not null"], [[1], "not an array"], ["x", "not string"]] as const) {
        const { body, status } = yield* answer({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "resolve-library-id", arguments: args } })
        assert.strictEqual(status, 200)
        assert.deepStrictEqual(body, {
          jsonrpc: "2.0",
          id: 7,
          error: { code: -32602, message: `Invalid params: the tool's "arguments" must be an object, ${problem}` }
        })
      }
      const noName = yield* answer({ jsonrpc: "2.0", id: 8, method: "tools/call", params: { arguments: {} } })
      assert.strictEqual(noName.body.error.message, `Invalid params: tools/call needs the tool's "name" as a string`)
      // params the SDK's own schema refuses: -32602 naming the first issue, not -32603 and zod's list
      const noParams = yield* answer({ jsonrpc: "2.0", id: 9, method: "initialize" })
      assert.strictEqual(noParams.status, 200)
      assert.strictEqual(noParams.body.error.code, -32602)
      assert.match(noParams.body.error.message, /^Invalid params: params[.:]/)
      assert.notInclude(noParams.body.error.message, "[")
      const badCursor = yield* answer({ jsonrpc: "2.0", id: 10, method: "tools/list", params: { cursor: 5 } })
      assert.deepStrictEqual([badCursor.body.error.code, badCursor.body.id], [-32602, 10])
      assert.match(badCursor.body.error.message, /^Invalid params: params\.cursor: /)
      // still JSON-RPC: served as before
      const pong = yield* answer({ jsonrpc: "2.0", id: "p", method: "ping" })
      assert.deepStrictEqual([pong.status, pong.body.result], [200, {}])
    }))

  it.effect("a batch that cancels its own request: no answer for it, 202 when nothing is left", () =>
    Effect.gen(function*() {
      const cancelled = { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 7, reason: "user" } }
      const alone = yield* post([{ jsonrpc: "2.0", id: 7, method: "tools/list" }, cancelled])
      assert.strictEqual(alone.status, 202)
      assert.strictEqual(yield* Effect.promise(() => alone.text()), "")
      const mixed = yield* post([
        { jsonrpc: "2.0", id: 7, method: "tools/list" },
        { jsonrpc: "2.0", id: 8, method: "tools/list" },
        cancelled
      ])
      assert.strictEqual(mixed.status, 200)
      const answers = yield* Effect.promise(() => mixed.json())
      const ids = (Array.isArray(answers) ? answers : [answers]).map((answer: any) => answer.id)
      assert.deepStrictEqual(ids, [8])
    }))

  it.effect("stdio: `svc mcp --transport stdio` spawned by the SDK's client, key from --api-key or SVC_API_KEY", () =>
    Effect.gen(function*() {
      const { apiProxyUrl } = yield* Mcp
      const seen = yield* SeenKeys
      for (const [args, env, key] of [
        [["--api-key", "svcsk_flag"], {}, "svcsk_flag"],
        [[], { SVC_API_KEY: "svcsk_env" }, "svcsk_env"],
        // from a file written on Windows
        [[], { SVC_API_KEY: "svcsk_crlf\r" }, "svcsk_crlf"]
      ] as const) {
        seen.length = 0
        const client = new McpClient({ name: "svc-test-stdio", version: "1.0.0" })
        const transport = new StdioClientTransport({
          command: process.execPath,
          args: [bin, "mcp", "--transport", "stdio", ...args],
          env: { ...process.env as Record<string, string>, DOCS_API_URL: apiProxyUrl, LOG_LEVEL: "debug", ...env },
          stderr: "pipe"
        })
        yield* Effect.acquireRelease(Effect.promise(() => client.connect(transport)), () => Effect.promise(() => client.close()))
        const { tools } = yield* Effect.promise(() => client.listTools())
        assert.deepStrictEqual(tools.map((tool) => tool.name), ["resolve-library-id", "query-docs"])
        assert.match(client.getInstructions() ?? "", /Call resolve-library-id/)
        const result = yield* Effect.promise(() =>
          client.callTool({ name: "query-docs", arguments: { libraryName: "/acme/http-client", question: "exponential backoff" } })
        )
        assert.isUndefined(result.isError)
        assert.include(textOf(result), "backoff: \"exponential\"")
        assert.deepStrictEqual(seen, [`Bearer ${key}`])
      }
    }).pipe(Effect.scoped))

  it.effect("stdio: stdin closed right after the requests: each is answered, then the process exits 0", () =>
    Effect.gen(function*() {
      const { apiProxyUrl } = yield* Mcp
      const child = spawn(process.execPath, [bin, "mcp", "--transport", "stdio"], {
        env: { ...process.env, DOCS_API_URL: apiProxyUrl },
        stdio: ["pipe", "pipe", "pipe"]
      })
      let stdout = ""
      let stderr = ""
      child.stdout.on("data", (chunk: Buffer) => stdout += chunk.toString("utf8"))
      child.stderr.on("data", (chunk: Buffer) => stderr += chunk.toString("utf8"))
      const call = (id: number, question: string) => ({
        jsonrpc: "2.0",
        id,
        method: "tools/call",
        params: { name: "query-docs", arguments: { libraryId: "/acme/http-client", query: question } }
      })
      // what `printf '…' | svc mcp --transport stdio` sends: the requests, then the end of stdin
      child.stdin.end([
        { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "pipe", version: "1" } } },
        { jsonrpc: "2.0", method: "notifications/initialized" },
        call(2, "exponential backoff"),
        { jsonrpc: "2.0", id: 3, method: "ping" },
        // a request cancelled at once gets no answer (MCP), and must not keep the process
        call(4, "retries"),
        { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 4, reason: "gone" } }
      ].map((message) => JSON.stringify(message)).join("\n") + "\n")
      const code = yield* Effect.promise(() => new Promise<number | null>((resolve) => child.once("exit", resolve))).pipe(
        Effect.timeoutOrElse({ duration: "30 seconds", orElse: () => Effect.sync(() => (child.kill(), -1)) })
      )
      assert.strictEqual(code, 0, stderr)
      const answers = new Map(stdout.split("\n").filter((line) => line !== "").map((line) => {
        const answer = JSON.parse(line)
        return [answer.id, answer] as const
      }))
      assert.isString(answers.get(1)?.result?.serverInfo?.name, stdout)
      assert.include(textOf(answers.get(2)?.result), "backoff: \"exponential\"", stdout)
      assert.deepStrictEqual(answers.get(3)?.result, {}, stdout)
    }))
})

/**
 * `svc mcp --transport stdio` written to line by line, and what it answers, parsed as it comes. No API
 * is reached (DOCS_API_URL is a closed port): initialize and the refusals are the server's own.
 */
const rawStdio = (env: Record<string, string> = {}) => {
  const child = spawn(process.execPath, [bin, "mcp", "--transport", "stdio"], {
    env: { ...process.env, DOCS_API_URL: "http://127.0.0.1:9", ...env },
    stdio: ["pipe", "pipe", "pipe"]
  })
  const answers: Array<any> = []
  let pending = ""
  child.stdout.on("data", (chunk: Buffer) => {
    pending += chunk.toString("utf8")
    const lines = pending.split("\n")
    pending = lines.pop()!
    answers.push(...lines.filter((line) => line !== "").map((line) => JSON.parse(line)))
  })
  return { child, answers }
}

describe("svc mcp over stdio, a line that is not a message", () => {
  it("is answered in JSON-RPC's terms, and the session goes on", async () => {
    const { answers, child } = rawStdio()
    try {
      const initialize = { jsonrpc: "2.0", id: 9, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } }
      child.stdin.write(
        [
          "not json",
          "",
          JSON.stringify({ jsonrpc: "2.0", id: 1 }),
          JSON.stringify([{ jsonrpc: "2.0", id: 2, method: "ping" }]),
          JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { arguments: {} } }),
          JSON.stringify({ jsonrpc: "2.0", id: 4, method: "initialize", params: {} }),
          // a lone surrogate, as POST /mcp refuses it (stdio accepted it and echoed it back), answered
          // with the request's id: with id null the client never learnt which request it was
          '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"resolve-library-id","arguments":{"libraryName":"ef\\ud800","query":"q"}}}',
          // not JSON-RPC, but a request whose id can be read: answered with it too
          JSON.stringify({ jsonrpc: "2.0", id: 6, method: "tools/list", params: [] }),
          // the id given twice: which one to answer is unknown, so null
          '{"jsonrpc":"2.0","id":7,"id":8,"method":"ping"}',
          // a tool there is not: a protocol error with the request's id, as over HTTP
          JSON.stringify({ jsonrpc: "2.0", id: 10, method: "tools/call", params: { name: "nope", arguments: {} } }),
          JSON.stringify(initialize)
        ].join("\n") + "\n"
      )
      const deadline = Date.now() + 30_000
      while (answers.length < 10 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
      const byId = (id: unknown) => answers.filter((answer) => answer.id === id)
      assert.deepStrictEqual(byId(null).map((answer) => answer.error.code).sort(), [-32700, -32700, -32600, -32600].sort())
      assert.isTrue(byId(null).some((answer) => answer.error.code === -32700 && /not JSON/.test(answer.error.message)))
      assert.isTrue(byId(null).some((answer) => answer.error.code === -32700 && /id is given twice/.test(answer.error.message)))
      assert.deepStrictEqual(byId(5).map((answer) => answer.error), [{
        code: -32700,
        message: "Parse error: the line's params.arguments.libraryName holds an unpaired surrogate (\\ud800 at character 2), which UTF-8 cannot carry: it would be stored as U+FFFD, not as sent"
      }])
      assert.deepStrictEqual(byId(6).map((answer) => answer.error.code), [-32600])
      assert.isTrue(byId(null).some((answer) => /batch/.test(answer.error.message)))
      assert.isTrue(byId(null).some((answer) => /method/.test(answer.error.message)), JSON.stringify(byId(null)))
      assert.deepStrictEqual(byId(3).map((answer) => answer.error.code), [-32602])
      // the SDK's own refusal, in words instead of zod's issue list
      assert.deepStrictEqual(byId(4).map((answer) => answer.error.code), [-32602])
      assert.match(byId(4)[0].error.message, /^Invalid params: params.protocolVersion: /)
      assert.deepStrictEqual(byId(10).map((answer) => answer.error), [{
        code: -32602,
        message: `Unknown tool: "nope"; the tools are resolve-library-id and query-docs`
      }])
      assert.isString(byId(9)[0]?.result?.serverInfo?.name, JSON.stringify(answers))
      assert.strictEqual(answers.length, 10)
    } finally {
      child.kill()
    }
  }, 60_000)

  it("bytes that are not UTF-8 are -32700 with the request's id, as POST /mcp refuses them, not read as U+FFFD", async () => {
    const { answers, child } = rawStdio()
    try {
      const call = (id: number, libraryName: Buffer) =>
        Buffer.concat([
          Buffer.from(`{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"resolve-library-id","arguments":{"libraryName":"`),
          libraryName,
          Buffer.from(`","query":"q"}}}\n`)
        ])
      // 0xff is no UTF-8 byte; ED A0 80 is a surrogate half written as bytes; C0 80 an overlong NUL.
      // Each was read as U+FFFD and searched for ("No indexed library matches \"����\"").
      child.stdin.write(call(1, Buffer.from([0x65, 0x66, 0xff])))
      child.stdin.write(call(2, Buffer.from([0xed, 0xa0, 0x80])))
      child.stdin.write(call(3, Buffer.from([0xc0, 0x80])))
      // a line cut in two writes in the middle of a character is still one character
      const emoji = call(4, Buffer.from("🎉"))
      const cut = emoji.indexOf(0xf0) + 2
      child.stdin.write(emoji.subarray(0, cut))
      await new Promise((resolve) => setTimeout(resolve, 100))
      child.stdin.write(emoji.subarray(cut))
      // CRLF ends a line as LF does
      child.stdin.write('{"jsonrpc":"2.0","id":5,"method":"ping"}\r\n')
      const deadline = Date.now() + 30_000
      while (answers.length < 5 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
      const byId = (id: unknown) => answers.filter((answer) => answer.id === id)
      for (const id of [1, 2, 3]) {
        assert.deepStrictEqual(byId(id).map((answer) => answer.error), [{
          code: -32700,
          message: "Parse error: the line is not valid UTF-8: a JSON body must be UTF-8 (RFC 8259)"
        }], JSON.stringify(answers))
      }
      // the emoji reached the tool whole: it answered (the API is unreachable here), no parse error
      assert.strictEqual(byId(4).length, 1, JSON.stringify(answers))
      assert.isUndefined(byId(4)[0].error, JSON.stringify(answers))
      assert.deepStrictEqual(byId(5).map((answer) => answer.result), [{}])
    } finally {
      child.kill()
    }
  }, 60_000)

  it("a line longer than MCP_MAX_BODY_BYTES is -32600 with its id, and the session goes on", async () => {
    // past the SDK transport's own 10 MiB, the session ended without a word: no answer to it or to any
    // later request, and the process lived on
    const huge = (size: number) => "x".repeat(size)
    const sdkStyle = (id: number, size: number) =>
      JSON.stringify({ method: "tools/call", params: { name: "resolve-library-id", arguments: { libraryName: huge(size), query: "q" } }, jsonrpc: "2.0", id })
    const headFirst = (id: string, size: number) =>
      JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "query-docs", arguments: { libraryId: "/a/b", query: huge(size) } } })
    for (const [env, lines, refused] of [
      [{}, [sdkStyle(1, 11 * 1_048_576)], [1]],
      [{ MCP_MAX_BODY_BYTES: "2000" }, [
        sdkStyle(1, 5000),
        headFirst("two", 5000) + "\r",
        // the id in neither end: null
        JSON.stringify({ jsonrpc: "2.0", method: "tools/call", params: { name: "x", arguments: { q: huge(5000) } }, id: 3, extra: true }),
        // a nested "id" at the end is not the message's
        JSON.stringify({ jsonrpc: "2.0", method: "x", params: { q: huge(5000), id: 4 } }),
        // an id JSON cannot read (a leading zero): null, and the process lives on
        `{"id":007,"jsonrpc":"2.0","method":"ping","params":{"q":"${huge(5000)}"}}`
      ], [1, "two", null, null, null]]
    ] as const) {
      const { answers, child } = rawStdio(env)
      try {
        for (const line of lines) child.stdin.write(line + "\n")
        child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 99, method: "ping" }) + "\n")
        const deadline = Date.now() + 30_000
        while (answers.length < lines.length + 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
        const limit = "MCP_MAX_BODY_BYTES" in env ? 2000 : 1_048_576
        assert.deepStrictEqual(
          answers.filter((answer) => answer.id !== 99).map((answer) => [answer.id, answer.error.code]),
          refused.map((id) => [id, -32600]),
          JSON.stringify(answers).slice(0, 1000)
        )
        for (const answer of answers.filter((answer) => answer.id !== 99)) {
          assert.match(answer.error.message, new RegExp(`^Invalid Request: the line is \\d+ bytes, more than the ${limit} this server reads in one message \\(MCP_MAX_BODY_BYTES\\)$`))
        }
        assert.deepStrictEqual(answers.filter((answer) => answer.id === 99).map((answer) => answer.result), [{}])
      } finally {
        child.kill()
      }
    }
  }, 120_000)

  it("a question cut in the middle of an emoji is refused at once to the SDK's client, not left to its timeout", async () => {
    const client = new McpClient({ name: "stdio-surrogate", version: "1" })
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [bin, "mcp", "--transport", "stdio"],
        env: { ...process.env, DOCS_API_URL: "http://127.0.0.1:9" } as Record<string, string>,
        stderr: "ignore"
      })
    )
    try {
      const question = "how do I greet 🎉".slice(0, -1) // JSON.stringify sends the half as \ud83c
      const refused = await client.callTool(
        { name: "query-docs", arguments: { libraryId: "/acme/greeter", query: question } },
        undefined,
        { timeout: 15_000 }
      ).then(() => undefined, (error: { code?: number; message?: string }) => error)
      assert.strictEqual(refused?.code, -32700, refused?.message)
      assert.match(refused?.message ?? "", /params\.arguments\.query holds an unpaired surrogate/)
    } finally {
      await client.close()
    }
  }, 60_000)
})

describe("svc mcp options", () => {
  it("--api-key over http, --port over stdio and a port that is none are refused with one line", () => {
    for (const [args, message] of [
      [["--transport", "http", "--api-key", "k"], /--api-key is for --transport stdio/],
      [["--transport", "stdio", "--port", "9999"], /--port is for --transport http/],
      // a key a header cannot carry failed every call as "could not be reached"
      [["--transport", "stdio", "--api-key", "svcsk_a\r\nX-Injected: 1"], /--api-key \(or SVC_API_KEY\) holds a space or a character a header cannot carry/],
      [["--transport", "stdio", "--api-key", "svcsk_a b"], /holds a space/],
      // -1 was "unexpected error", 99999 "ports 99999 to 100018 are all taken", 0 a random port
      [["--transport", "http", "--port", "-1"], /--port must be a whole number in decimal digits, not "-1"/],
      ...["0", "65536", "99999"].map((port) => [["--transport", "http", "--port", port], /--port must be a port from 1 to 65535/] as const)
    ] as const) {
      const run = spawnSync(process.execPath, [bin, "mcp", ...args], { encoding: "utf8", timeout: 30_000 })
      assert.strictEqual(run.status, 1, run.stderr)
      assert.match(run.stderr, message)
      assert.strictEqual(run.stderr.trim().split("\n").length, 1, run.stderr)
    }
    // eight CLI starts one after another: about 45 s on 2 shared cores, past vitest's 60 s under load
  }, 240_000)
})
