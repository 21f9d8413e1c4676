/**
 * The official Context7 MCP server (`@upstash/context7-mcp`, spawned over stdio by the MCP SDK's
 * client) answering from this REST API: `CONTEXT7_API_URL` pointed at a docs-api started here on
 * 127.0.0.1 (`…/api`), a real database with one indexed library. Both of its tools are called as an
 * agent configured for Context7 would call them, and the key it is given reaches the API. This is
 * how svc serves an agent that already has Context7 configured (packages/docs/README.md).
 */
import { assert, layer } from "@effect/vitest"
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { Context, Effect, Layer } from "effect"
import { createRequire } from "node:module"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { ApiKeys } from "../src/ApiKeys.ts"
import { Indexer } from "../src/Indexer.ts"
import { Client, docsFolder, socketClient, stack } from "./support.ts"

/** The installed Context7 server's entry point (its package.json `bin`). */
const context7Bin = (() => {
  const require = createRequire(import.meta.url)
  const manifest = require.resolve("@upstash/context7-mcp/package.json")
  return path.join(path.dirname(manifest), "dist", "index.js")
})()

const docs = {
  "README.md": "# Queue client\n\nPublish messages to a durable queue and consume them with retries.\n",
  "delays.md": "# Delayed delivery\n\nDelay a message by a number of seconds before it is delivered.\n\n" +
    "```ts\nqueue.publish(message, { delaySeconds: 30 })\n```\n"
}

/** What reached the API: method, path and Authorization of each request (a recording proxy). */
class Seen extends Context.Service<Seen, Array<{ readonly url: string; readonly authorization: string | undefined }>>()(
  "test/context7/Seen"
) {}
class ApiUrl extends Context.Service<ApiUrl, string>()("test/context7/ApiUrl") {}

const Proxy = Layer.unwrap(Effect.gen(function*() {
  const api = yield* Client
  const seen: Array<{ url: string; authorization: string | undefined }> = []
  const server = yield* Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<Http.Server>((resolve) => {
        const proxy = Http.createServer(async (req, res) => {
          seen.push({ url: req.url ?? "", authorization: req.headers["authorization"] })
          const headers: Record<string, string> = {}
          for (const [name, value] of Object.entries(req.headers)) {
            if (typeof value === "string" && name !== "host" && name !== "connection") headers[name] = value
          }
          const answer = await fetch(api.baseUrl + req.url, { headers })
          res.writeHead(answer.status, Object.fromEntries(answer.headers)).end(Buffer.from(await answer.arrayBuffer()))
        })
        proxy.listen(0, "127.0.0.1", () => resolve(proxy))
      })
    ),
    (proxy) => Effect.promise(() => new Promise<void>((resolve) => proxy.close(() => resolve())))
  )
  return Layer.mergeAll(
    Layer.succeed(Seen, seen),
    Layer.succeed(ApiUrl, `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`)
  )
}))

const Seeded = Layer.effectDiscard(Effect.gen(function*() {
  const indexer = yield* Indexer
  yield* indexer.add(yield* docsFolder(docs), { id: "/acme/queue-client", version: "2.1.0" })
}))

const TestLayer = Proxy.pipe(
  Layer.provideMerge(socketClient),
  Layer.provideMerge(Seeded),
  Layer.provideMerge(stack)
) as Layer.Layer<Seen | ApiUrl | ApiKeys, unknown>

const textOf = (result: any): string => result.content.map((item: any) => item.text).join("\n")

/** The Context7 server, spawned with `env` over stdio; closed with the scope. */
const context7 = (env: Record<string, string>, args: ReadonlyArray<string> = []) =>
  Effect.gen(function*() {
    const client = new McpClient({ name: "svc-context7-test", version: "1.0.0" })
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [context7Bin, "--transport", "stdio", ...args],
      // only what it needs: no proxy, no telemetry endpoint, nothing from the test's own environment
      env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/tmp", OTEL_SDK_DISABLED: "true", ...env },
      stderr: "pipe"
    })
    yield* Effect.acquireRelease(Effect.promise(() => client.connect(transport)), () => Effect.promise(() => client.close()))
    return client
  })

layer(TestLayer, { excludeTestServices: true, timeout: 90_000 })("the Context7 MCP server against this API", (it) => {
  it.effect("resolve-library-id and query-docs answer from svc, with CONTEXT7_API_URL=…/api", () =>
    Effect.gen(function*() {
      const apiUrl = yield* ApiUrl
      const seen = yield* Seen
      seen.length = 0
      const client = yield* context7({ CONTEXT7_API_URL: apiUrl })
      const { tools } = yield* Effect.promise(() => client.listTools())
      assert.includeMembers(tools.map((tool) => tool.name), ["resolve-library-id", "query-docs"])

      const resolved = yield* Effect.promise(() =>
        client.callTool({ name: "resolve-library-id", arguments: { query: "delay a message", libraryName: "queue-client" } })
      )
      const listing = textOf(resolved)
      assert.include(listing, "Context7-compatible library ID: /acme/queue-client")
      assert.include(listing, "- Title: Queue client") // its README's first heading
      assert.include(listing, "- Versions: 2.1.0")

      const answer = yield* Effect.promise(() =>
        client.callTool({ name: "query-docs", arguments: { libraryId: "/acme/queue-client", query: "delay delivery by seconds" } })
      )
      assert.isUndefined(answer.isError)
      assert.include(textOf(answer), "queue.publish(message, { delaySeconds: 30 })")
      // a version, as Context7 writes it
      const versioned = yield* Effect.promise(() =>
        client.callTool({ name: "query-docs", arguments: { libraryId: "/acme/queue-client/2.1.0", query: "delaySeconds" } })
      )
      assert.include(textOf(versioned), "delaySeconds: 30")

      // it reached this API, on the paths Context7 uses below …/api
      assert.deepStrictEqual(
        seen.map((request) => request.url.split("?")[0]),
        ["/api/v2/libs/search", "/api/v2/context", "/api/v2/context"]
      )
    }).pipe(Effect.scoped))

  it.effect("an unknown library and a malformed id: the API's own message reaches the agent", () =>
    Effect.gen(function*() {
      const client = yield* context7({ CONTEXT7_API_URL: yield* ApiUrl })
      const unknown = textOf(yield* Effect.promise(() =>
        client.callTool({ name: "query-docs", arguments: { libraryId: "/nobody/nothing", query: "q" } })
      ))
      // the 404 names the tool the agent has, not only an endpoint it cannot call
      assert.include(unknown, "No library with id /nobody/nothing: find its id with GET /api/v2/libs/search?libraryName=<name> or the resolve-library-id tool")
      const malformed = textOf(yield* Effect.promise(() =>
        client.callTool({ name: "query-docs", arguments: { libraryId: "react", query: "q" } })
      ))
      assert.match(malformed, /query parameter "libraryId".*library id like "\/owner\/repo".*resolve-library-id tool, then ask again/)
    }).pipe(Effect.scoped))

  it.effect("an API key given to Context7 (--api-key) is the caller's key at the API", () =>
    Effect.gen(function*() {
      const keys = yield* ApiKeys
      const { key } = yield* keys.create({ name: "context7" })
      const seen = yield* Seen
      seen.length = 0
      const client = yield* context7({ CONTEXT7_API_URL: yield* ApiUrl }, ["--api-key", key])
      const resolved = yield* Effect.promise(() =>
        client.callTool({ name: "resolve-library-id", arguments: { query: "q", libraryName: "queue-client" } })
      )
      assert.include(textOf(resolved), "/acme/queue-client")
      assert.deepStrictEqual(seen.map((request) => request.authorization), [`Bearer ${key}`])
      // a wrong key is refused with the API's message
      const wrong = yield* context7({ CONTEXT7_API_URL: yield* ApiUrl }, ["--api-key", "svcsk_wrongwrongwrong"])
      const refused = textOf(yield* Effect.promise(() =>
        wrong.callTool({ name: "resolve-library-id", arguments: { query: "q", libraryName: "queue-client" } })
      ))
      assert.match(refused, /key/i)
    }).pipe(Effect.scoped))
})
