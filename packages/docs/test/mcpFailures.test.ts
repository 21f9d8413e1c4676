/**
 * How the MCP tools answer when the REST API fails: a scripted API on a real socket answers 401, 429
 * with Retry-After, 503 then 200 (retried), or never (timeout). Each becomes a tool result the agent
 * can act on, never a crash.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Duration, Effect } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { DocsClient } from "../src/mcp/DocsClient.ts"
import { callTool } from "../src/mcp/McpServer.ts"

/** A server answering each request with the next step of `script` (the last one repeats). */
const scriptedApi = (script: ReadonlyArray<(res: Http.ServerResponse) => void>) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ server: Http.Server; url: string; requests: () => number }>((resolve) => {
        let count = 0
        const server = Http.createServer((_req, res) => {
          const step = script[Math.min(count, script.length - 1)]!
          count++
          step(res)
        })
        server.listen(0, "127.0.0.1", () =>
          resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests: () => count }))
      })
    ),
    ({ server }) => Effect.promise(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  )

const json = (status: number, body: unknown, headers: Record<string, string> = {}) => (res: Http.ServerResponse) =>
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body))

const searchBody = {
  results: [{
    id: "/acme/lib", title: "Lib", description: "A library", totalSnippets: 3, totalTokens: 120, trustScore: 5,
    versions: ["1.0.0"], state: "ready", lastUpdateDate: null
  }],
  searchFilterApplied: false
}

const resolve = (url: string, timeout: Duration.Input = "5 seconds") =>
  callTool("resolve-library-id", { query: "q", libraryName: "lib" }).pipe(
    Effect.provide(DocsClient.layer({ baseUrl: url, timeout }))
  )

const textOf = (result: any): string => result.content.map((item: any) => item.text).join("\n")

describe("MCP tools when the API fails", () => {
  it.live("401: says the key was refused and where keys go", () =>
    Effect.gen(function*() {
      const api = yield* scriptedApi([json(401, { code: "unauthorized", message: "Invalid API key" })])
      const result = yield* resolve(api.url)
      assert.isTrue(result.isError)
      assert.match(textOf(result), /refused the API key \(401\).*SVC_API_KEY/)
      assert.strictEqual(api.requests(), 1, "not retried")
    }).pipe(Effect.scoped))

  it.live("429: says so with the Retry-After seconds, not retried", () =>
    Effect.gen(function*() {
      const api = yield* scriptedApi([json(429, { code: "rate_limited", message: "Slow down" }, { "retry-after": "17" })])
      const result = yield* resolve(api.url)
      assert.isTrue(result.isError)
      assert.match(textOf(result), /rate limiting.*\(429\); try again in 17 seconds/)
      assert.strictEqual(api.requests(), 1)
    }).pipe(Effect.scoped))

  it.live("every 4xx is the request's fault: said with the API's reason, what to fix, never retried or 'try again'", () =>
    Effect.gen(function*() {
      for (const [step, expected] of [
        [json(400, {
          code: "invalid_request",
          message: "Invalid request: query parameter \"libraryId\": Expected a library id like \"/owner/repo\"",
          issues: [{ in: "query", parameter: "libraryId", problem: "Expected a library id" }]
        }), /refused the request \(400\): Invalid request: query parameter "libraryId".*Fix the arguments/],
        [json(403, { code: "forbidden", message: "no" }), /refused the API key \(401\)|refused the API key/],
        [json(404, { code: "not_found", message: "No such route" }), /found nothing for this request \(404\)/],
        [json(405, { code: "method_not_allowed", message: "no" }), /refused the request \(405\).*Fix the arguments/],
        [json(413, { code: "payload_too_large", message: "too large" }), /refused the request \(413\).*Fix the arguments/],
        [json(414, {}), /refused the request \(414\)/],
        [json(422, { code: "unprocessable", message: "no" }), /refused the request \(422\)/]
      ] as const) {
        const api = yield* scriptedApi([step])
        const result = yield* resolve(api.url)
        assert.isTrue(result.isError)
        assert.match(textOf(result), expected)
        assert.notMatch(textOf(result), /try again shortly/i)
        assert.strictEqual(api.requests(), 1, "not retried")
      }
    }).pipe(Effect.scoped))

  it.live("503 then 200: retried, and the answer is used", () =>
    Effect.gen(function*() {
      const api = yield* scriptedApi([json(503, { code: "service_unavailable", message: "busy" }), json(200, searchBody)])
      const result = yield* resolve(api.url)
      assert.isUndefined(result.isError)
      assert.include(textOf(result), "Library ID: /acme/lib")
      assert.strictEqual(api.requests(), 2)
    }).pipe(Effect.scoped))

  it.live("no answer within the timeout: a timeout result", () =>
    Effect.gen(function*() {
      const api = yield* scriptedApi([() => {/* never answers */}])
      const result = yield* resolve(api.url, "300 millis")
      assert.isTrue(result.isError)
      assert.match(textOf(result), /did not answer within 300 ms/)
    }).pipe(Effect.scoped))

  it.live("nothing listening: unavailable", () =>
    Effect.gen(function*() {
      const api = yield* scriptedApi([json(200, searchBody)])
      const url = api.url
      yield* Effect.promise(() => new Promise<void>((done) => api.server.close(() => done())))
      const result = yield* resolve(url)
      assert.isTrue(result.isError)
      assert.match(textOf(result), /could not be reached/)
    }).pipe(Effect.scoped))
})
