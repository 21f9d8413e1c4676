/**
 * The MCP server over stateless Streamable HTTP (spec/2 "Endpoints"):
 *
 * - `POST /mcp`: a fresh server and transport per request, no `Mcp-Session-Id`, JSON answers (no SSE
 *   stream to keep alive); the caller's key (`Authorization: Bearer`, `X-Svc-API-Key` or `X-API-Key`)
 *   is sent on to the REST API.
 * - A batch that carries its own `notifications/cancelled` for one of its requests: the cancelled
 *   request gets no JSON-RPC response (as the spec says). Rather than leave the HTTP exchange hanging
 *   until a gateway reaps it, the server drops the cancelled requests before serving the batch and,
 *   when nothing is left to answer, ends the exchange with 202 and no body.
 * - `GET`/`DELETE /mcp`: 405 (there are no sessions to stream or end).
 * - `GET /ping`, `/.well-known/oauth-protected-resource` (RFC 9728), `/mcp/oauth`; every other path is
 *   the suite's JSON 404.
 */
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import * as McpServer from "./McpServer.ts"

/** The caller's API key, from any of the three headers the spec accepts. */
export const apiKeyOf = (headers: Readonly<Record<string, string | undefined>>): string | undefined => {
  const bearer = /^Bearer\s+(.+)$/i.exec(headers["authorization"] ?? "")?.[1]?.trim()
  const key = bearer ?? headers["x-svc-api-key"] ?? headers["x-api-key"]
  return key === undefined || key.trim() === "" ? undefined : key.trim()
}

type JsonRpcMessage = Record<string, unknown>

const isRequest = (message: JsonRpcMessage) => typeof message["method"] === "string" && "id" in message

/**
 * Removes from a batch the requests it cancels itself (and those notifications). Returns what is left
 * to serve, or `undefined` when nothing in the batch expects an answer any more.
 */
export const withoutSelfCancelled = (body: unknown): unknown => {
  if (!Array.isArray(body)) return body
  const messages = body.filter((item): item is JsonRpcMessage => typeof item === "object" && item !== null)
  const cancelled = new Set<unknown>()
  for (const message of messages) {
    if (message["method"] === "notifications/cancelled") {
      const params = message["params"] as { readonly requestId?: unknown } | undefined
      if (params?.requestId !== undefined) cancelled.add(params.requestId)
    }
  }
  const ownIds = new Set(messages.filter(isRequest).map((message) => message["id"]))
  const cancelsOwn = [...cancelled].some((id) => ownIds.has(id))
  if (!cancelsOwn) return body
  const kept = messages.filter((message) =>
    !(isRequest(message) && cancelled.has(message["id"])) &&
    !(message["method"] === "notifications/cancelled" &&
      ownIds.has((message["params"] as { readonly requestId?: unknown } | undefined)?.requestId))
  )
  return kept.some(isRequest) ? kept : undefined
}

const jsonRpcError = (status: number, code: number, message: string, headers: Record<string, string> = {}) =>
  HttpServerResponse.jsonUnsafe({ jsonrpc: "2.0", error: { code, message }, id: null }, { status, headers })

const handlePost = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const parsed = yield* Effect.result(request.json)
  if (parsed._tag === "Failure") return jsonRpcError(400, -32700, "Parse error: the body is not JSON")
  const body = withoutSelfCancelled(parsed.success)
  if (body === undefined) return HttpServerResponse.empty({ status: 202 })

  const server = yield* McpServer.make(apiKeyOf(request.headers))
  // stateless: without a sessionIdGenerator there is no Mcp-Session-Id and no session check
  const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true })
  return yield* Effect.promise(async () => {
    await server.connect(transport)
    const headers = new Headers()
    for (const [name, value] of Object.entries(request.headers)) if (value !== undefined) headers.set(name, value)
    const response = await transport.handleRequest(
      new Request(`http://mcp.local${request.url}`, { method: "POST", headers }),
      { parsedBody: body }
    )
    // the JSON answer is complete once handleRequest resolves: read it before the server closes
    const text = await response.text()
    return new Response(text === "" ? null : text, { status: response.status, headers: response.headers })
  }).pipe(
    Effect.map(HttpServerResponse.fromWeb),
    Effect.ensuring(Effect.promise(() => server.close()))
  )
})

const methodNotAllowed = Effect.succeed(
  jsonRpcError(405, -32000, "Method not allowed: this server is stateless, send JSON-RPC with POST /mcp", {
    allow: "POST"
  })
)

/** RFC 9728 metadata: the protected resource is `/mcp`; keys go in the Authorization header. */
const protectedResourceMetadata = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const origin = `http://${request.headers["host"] ?? "localhost"}`
  return HttpServerResponse.jsonUnsafe({
    resource: `${origin}/mcp`,
    resource_name: "svc documentation lookup (MCP)",
    authorization_servers: [`${origin}/mcp/oauth`],
    bearer_methods_supported: ["header"],
    resource_documentation: `${origin}/ping`
  }, { headers: { "cache-control": "max-age=3600" } })
})

/** There is no OAuth flow: keys are API keys. Say so, in the suite's error shape. */
const oauth = Effect.succeed(
  HttpServerResponse.jsonUnsafe({
    code: "oauth_not_supported",
    message: "This server takes API keys, not OAuth: send Authorization: Bearer <API_KEY> " +
      "(or X-Svc-API-Key / X-API-Key) with each POST /mcp"
  }, { status: 501 })
)

/** Every route of the MCP HTTP server. Needs `DocsClient`. */
export const routes = Layer.mergeAll(
  HttpRouter.add("POST", "/mcp", handlePost),
  HttpRouter.add("GET", "/mcp", methodNotAllowed),
  HttpRouter.add("DELETE", "/mcp", methodNotAllowed),
  HttpRouter.add("GET", "/ping", Effect.succeed(HttpServerResponse.jsonUnsafe({ status: "ok", message: "pong" }))),
  HttpRouter.add("GET", "/.well-known/oauth-protected-resource", protectedResourceMetadata),
  HttpRouter.add("GET", "/.well-known/oauth-protected-resource/mcp", protectedResourceMetadata),
  HttpRouter.add("*", "/mcp/oauth", oauth)
)
