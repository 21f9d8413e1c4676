/**
 * No 500 on any input at the docs REST API v2 (issue 16, items 16-17): the sweep's 500
 * (`/api/v2/libs/search?libraryName=%00`) and its kin are 400s naming the parameter, a question of
 * long words never breaks the tsquery, and property-based requests (fast-check) at the library
 * search, the context, the key headers and the operators' RPC never get a 5xx, get the suite's
 * error body, and never see a stack, SQL or a path. A real server on a fresh database, over a socket.
 */
import { assert, layer } from "@effect/vitest"
import { RequestFuzz } from "@svc/platform/testing"
import { DocsRpcs } from "@svc/schema"
import { Effect, Layer } from "effect"
import { Indexer } from "../src/Indexer.ts"
import { DocsClient } from "../src/mcp/DocsClient.ts"
import { callTool } from "../src/mcp/McpServer.ts"
import { Client, docsFolder, get, socketClientWith, stack } from "./support.ts"

const { fc } = RequestFuzz

const ADMIN_TOKEN = "fuzz-admin-token"

const page = (title: string, text: string, code: string) =>
  `# ${title}\n\n${text}\n\nFor example:\n\n\`\`\`ts\n${code}\n\`\`\`\n`

const Seeded = Layer.effectDiscard(Effect.gen(function*() {
  const indexer = yield* Indexer
  yield* indexer.add(
    yield* docsFolder({
      "README.md": page("HTTP client", "Send HTTP requests with retries and timeouts.", "client.get(url, { retry: 3 })"),
      "errors.md": page("Errors", "Every failure is a typed error you can catch by tag.", "Effect.catchTag(\"Timeout\", f)")
    }),
    { id: "/acme/http-client", version: "1.0.0" }
  )
  yield* indexer.add(
    yield* docsFolder({ "README.md": page("Greeter", "Greets people in many languages.", "greet(\"pl\")") }),
    { id: "/acme/greeter", version: "2.0.0" }
  )
}))

const TestLayer = socketClientWith({
  DOCS_RATE_LIMIT_ANONYMOUS: "1000000",
  DOCS_RATE_LIMIT_KEYED: "1000000",
  DOCS_ADMIN_TOKEN: ADMIN_TOKEN
}).pipe(Layer.provideMerge(Seeded), Layer.provideMerge(stack)) as Layer.Layer<Client, unknown>

const request = (client: Client["Service"], path: string, init?: RequestInit): Promise<void> =>
  Effect.runPromise(client.fetch(path, init)).then((response) => RequestFuzz.checkResponse(init?.method ?? "GET", path, response)).then(() => undefined)

const expectInvalid = (path: string, parameter: string) =>
  Effect.map(get(path), (answer) => RequestFuzz.checkInvalid(`GET ${path}`, answer, parameter))

/** A library id: a seeded one, one of the right shape, or anything. */
const libraryId = fc.oneof(
  fc.constantFrom("/acme/http-client", "/acme/greeter", "/acme/greeter/2.0.0", "/acme/greeter/9.9.9", "/nope/nope"),
  fc.tuple(RequestFuzz.hostileString, RequestFuzz.hostileString).map(([owner, repo]) => `/${owner}/${repo}`),
  RequestFuzz.hostileString
)

/** The API key headers: none, a malformed or unknown key, hostile values. */
const keyHeaders = fc.oneof(
  { arbitrary: fc.constant<Record<string, string>>({}), weight: 4 },
  {
    arbitrary: fc.tuple(
      fc.constantFrom("authorization", "x-svc-api-key", "x-api-key"),
      fc.oneof(
        fc.constantFrom("Bearer svcsk_nope", "svcsk_", "svcsk_0123456789abcdef", "Bearer", "Basic eA==", "Bearer  "),
        // what a header can carry (and fetch sends): visible ASCII and Latin-1 letters, no surrounding spaces
        fc.string({
          unit: fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0xa0, max: 0xff }))
            .map((code) => String.fromCharCode(code)),
          maxLength: 80
        }).map((value) => value.trim()).filter((value) => value !== "")
      )
    ).map(([name, value]) => ({ [name]: value })),
    weight: 1
  }
)

layer(TestLayer, { timeout: 180_000, excludeTestServices: true })("docs API: no 500 on any input", (it) => {
  it.effect("a NUL in libraryName, libraryId or a question is 400 naming the parameter", () =>
    Effect.gen(function*() {
      yield* expectInvalid("/api/v2/libs/search?libraryName=%00", "libraryName")
      yield* expectInvalid("/api/v2/libs/search?libraryName=http&query=a%00b", "query")
      yield* expectInvalid("/api/v2/context?libraryId=/acme/http%00client", "libraryId")
      yield* expectInvalid("/api/v2/context?libraryId=/acme/http-client&query=retry%00", "query")
      yield* expectInvalid(`/api/v2/libs/search?libraryName=${"a".repeat(201)}`, "libraryName")
      yield* expectInvalid(`/api/v2/context?libraryId=/acme/http-client&query=${"q".repeat(2001)}`, "query")
      yield* expectInvalid("/api/v2/context?libraryId=/acme/http-client&tokens=99999999999", "tokens")
    }))

  it.effect("a question of words longer than Postgres takes in a tsquery is answered", () =>
    Effect.gen(function*() {
      // 1,990 characters of two bytes each: one 3,980-byte word (tsquery words stop at 2,047 bytes)
      const word = encodeURIComponent("é".repeat(1990))
      const search = yield* get(`/api/v2/libs/search?libraryName=http&query=${word}`)
      assert.strictEqual(search.status, 200, search.text.slice(0, 300))
      assert.strictEqual(search.body.results[0]?.id, "/acme/http-client")
      for (const type of ["txt", "json"]) {
        const context = yield* get(`/api/v2/context?libraryId=/acme/http-client&type=${type}&query=retry+${word}`)
        assert.strictEqual(context.status, 200, context.text.slice(0, 300))
      }
    }))

  it.effect("MCP tools refuse arguments the API would refuse, with a sentence naming the limit", () =>
    Effect.gen(function*() {
      const unreachable = Layer.succeed(DocsClient, DocsClient.of({
        searchLibraries: () => Effect.die(new Error("the API must not be called")),
        context: () => Effect.die(new Error("the API must not be called"))
      }))
      for (
        const [tool, args, limit] of [
          ["query-docs", { libraryId: "/acme/http-client", query: "q".repeat(2001) }, "2000"],
          ["query-docs", { libraryId: "/acme/http-client", query: "retry\u0000" }, "NUL"],
          ["resolve-library-id", { libraryName: "n".repeat(201), query: "q" }, "200"]
        ] as const
      ) {
        const result = yield* callTool(tool, args).pipe(Effect.provide(unreachable))
        assert.isTrue(result.isError, tool)
        const text = (result.content[0] as { readonly text: string }).text
        assert.include(text, `Invalid arguments for ${tool}`)
        assert.include(text, limit)
      }
    }))

  it.effect("property: GET /api/v2/libs/search with any query and key headers", () =>
    Effect.gen(function*() {
      const client = yield* Client
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(
            RequestFuzz.queryString(["libraryName", "query"]),
            keyHeaders,
            (query, headers) => request(client, `/api/v2/libs/search${query}`, { headers })
          ),
          RequestFuzz.fuzzParameters(250)
        )
      )
    }))

  it.effect("property: GET /api/v2/context with any query", () =>
    Effect.gen(function*() {
      const client = yield* Client
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(
            libraryId,
            RequestFuzz.queryString(["query", "type", "tokens"]),
            keyHeaders,
            (id, query, headers) =>
              request(client, `/api/v2/context${query === "" ? "?" : `${query}&`}libraryId=${RequestFuzz.percentEncode(id)}`, {
                headers
              })
          ),
          RequestFuzz.fuzzParameters(250)
        )
      )
    }))

  it.effect("property: NULs and huge values in every text parameter", () =>
    Effect.gen(function*() {
      const client = yield* Client
      const value = RequestFuzz.nulOrHuge.filter((text) => !RequestFuzz.LEAK_MARKERS.some((marker) => marker.test(text)))
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(
            fc.constantFrom(
              (v: string) => `/api/v2/libs/search?libraryName=${v}`,
              (v: string) => `/api/v2/libs/search?libraryName=http&query=${v}`,
              (v: string) => `/api/v2/context?libraryId=${v}`,
              (v: string) => `/api/v2/context?libraryId=/acme/http-client&query=${v}`,
              (v: string) => `/api/v2/context?libraryId=/acme/http-client&type=json&query=${v}`
            ),
            value,
            // under node's 16 KiB request line, so that the API (not node's parser) answers
            (route, text) => request(client, route(RequestFuzz.percentEncode(text.slice(0, 1_500))))
          ),
          RequestFuzz.fuzzParameters(150)
        )
      )
    }))

  it.effect("property: any method at any path", () =>
    Effect.gen(function*() {
      const client = yield* Client
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(
            RequestFuzz.anyRequest(
              ["", "/api", "/api/v2", "/api/v2/libs", "/api/v2/context", "/health", "/openapi.json"],
              ["libraryName", "libraryId", "query", "tokens"]
            ),
            ({ init, path }) => request(client, path, init)
          ),
          RequestFuzz.fuzzParameters(200)
        )
      )
    }))

  it.effect("property: the operators' RPC with hostile library ids (never AddLibrary: it may fetch)", () =>
    Effect.gen(function*() {
      const client = yield* Client
      const payload = fc.oneof(
        fc.tuple(fc.constantFrom("Refresh", "Remove"), libraryId.filter((id) => !id.startsWith("/acme/")).map((id) => ({ libraryId: id }))),
        fc.tuple(fc.constantFrom("List"), fc.constant({})),
        fc.tuple(fc.constantFrom("Nope", "Refresh"), fc.jsonValue({ maxDepth: 2 }))
      )
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(payload, fc.boolean(), fc.constantFrom(`Bearer ${ADMIN_TOKEN}`, "Bearer wrong", ""), ([tag, payload], envelope, authorization) =>
            Effect.runPromise(client.fetch("/rpc", {
              method: "POST",
              headers: { "content-type": "application/ndjson", ...(authorization === "" ? {} : { authorization }) },
              body: envelope
                ? `${JSON.stringify({ _tag: "Request", id: "1", tag, payload, headers: [] })}\n`
                : `${JSON.stringify(payload)}\n`
            })).then(async (response) =>
              RequestFuzz.checkRpcAnswer(
                `RPC ${tag} ${JSON.stringify(payload).slice(0, 300)}`,
                await RequestFuzz.readAnswer(response),
                { malformed: !envelope || !DocsRpcs.requests.has(tag) }
              )
            )),
          RequestFuzz.fuzzParameters(150)
        )
      )
    }))
})
