/**
 * API keys, rate limits and team settings of the REST API v2: the `ApiKeys` service (create, list,
 * revoke, stored hashed), the key in each of the three headers, 401 for wrong/revoked/malformed keys
 * with no data, anonymous callers allowed, 429 with Retry-After per address while a key is still
 * served, team settings restricting search and context with `searchFilterApplied`, the OpenAPI
 * document, and the MCP server's tool results for a refused key and a rate-limited caller. Real
 * Postgres, real sockets.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { serve } from "@svc/platform"
import { Context, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { SqlClient } from "effect/sql"
import { createHash } from "node:crypto"
import { ApiKeys, type CreateApiKeyOptions } from "../src/ApiKeys.ts"
import { Indexer } from "../src/Indexer.ts"
import { DocsClient } from "../src/mcp/DocsClient.ts"
import { routes as mcpRoutes } from "../src/mcp/McpHttp.ts"
import { Client, docsFolder, get, socketClient, socketClientWith, stack } from "./support.ts"

const page = (title: string, text: string) => `# ${title}\n\n${text}\n`

/** Three folder libraries (two of acme's, one of another owner) and one npm package. */
const Seeded = Layer.effectDiscard(Effect.gen(function*() {
  const indexer = yield* Indexer
  yield* indexer.add(
    yield* docsFolder({ "README.md": page("Widgets", "Acme widgets render dashboards with configurable widget options.") }),
    { id: "/acme/widgets", version: "1.0.0" }
  )
  yield* indexer.add(
    yield* docsFolder({ "README.md": page("Gadgets", "Acme gadgets are small helpers around widgets and dashboards.") }),
    { id: "/acme/gadgets", version: "1.0.0" }
  )
  yield* indexer.add(
    yield* docsFolder({ "README.md": page("Widgets", "Other widgets: a competing widget library with its own options.") }),
    { id: "/other/widgets", version: "1.0.0" }
  )
  yield* indexer.add("npm:he")
}))

const keyPattern = /^svcsk_[A-Za-z0-9_-]{43}$/

/** A well-formed key nobody created. */
const unknownKey = "svcsk_" + "A".repeat(43)

const search = (libraryName: string, headers: Record<string, string> = {}) =>
  get(`/api/v2/libs/search?libraryName=${encodeURIComponent(libraryName)}`, { headers })

const context = (libraryId: string, headers: Record<string, string> = {}) =>
  get(`/api/v2/context?${new URLSearchParams({ libraryId, type: "json" })}`, { headers })

const bearer = (key: string) => ({ authorization: `Bearer ${key}` })

const newKey = (options: CreateApiKeyOptions = {}) =>
  Effect.gen(function*() {
    const { key } = yield* (yield* ApiKeys).create(options)
    return key
  })

/**
 * The MCP HTTP server on a real socket, calling the API under test directly; returns a function that
 * calls `query-docs` through the MCP SDK's client with the given request headers.
 */
const mcpQueryDocs = Effect.gen(function*() {
  const api = yield* Client
  const mcp = yield* Layer.build(
    serve(mcpRoutes, { name: "mcp", port: 0, host: "127.0.0.1" }).pipe(
      Layer.provide(DocsClient.layer({ baseUrl: api.baseUrl, timeout: "5 seconds" }))
    )
  )
  const { address } = Context.get(mcp, HttpServer.HttpServer)
  const mcpUrl = new URL(`http://127.0.0.1:${address._tag === "UnixPathAddress" ? 0 : address.port}/mcp`)
  return (headers: Record<string, string>) =>
    Effect.gen(function*() {
      const client = new McpClient({ name: "svc-test", version: "1.0.0" })
      const transport = new StreamableHTTPClientTransport(mcpUrl, { requestInit: { headers } })
      yield* Effect.acquireRelease(Effect.promise(() => client.connect(transport)), () => Effect.promise(() => client.close()))
      return yield* Effect.promise(() =>
        client.callTool({ name: "query-docs", arguments: { libraryId: "/acme/widgets", query: "widget options" } })
      ) as Effect.Effect<any>
    })
})

const textOf = (result: any): string => result.content.map((item: any) => item.text).join("\n")

layer(stack, { timeout: 60_000 })("ApiKeys service", (it) => {
  it.effect("create prints a svcsk_ key once, stores only its SHA-256, list shows the prefix and settings", () =>
    Effect.gen(function*() {
      const keys = yield* ApiKeys
      const { key, record } = yield* keys.create({
        name: " ci ",
        team: "acme",
        libraries: ["/Acme/*", "/other/widgets", "/acme/*"],
        sources: ["folder", "npm"]
      })
      assert.match(key, keyPattern)
      assert.strictEqual(record.prefix, key.slice(0, 14))
      assert.strictEqual(record.name, "ci")
      assert.strictEqual(record.team, "acme")
      assert.deepStrictEqual(record.settings, { libraries: ["/acme/*", "/other/widgets"], sources: ["folder", "npm"] })
      assert.isNull(record.revokedAt)

      const sql = yield* SqlClient.SqlClient
      const [stored] = yield* sql<{ key_hash: string }>`SELECT key_hash FROM docs.api_keys WHERE id = ${record.id}`
      assert.strictEqual(stored!.key_hash, createHash("sha256").update(key).digest("hex"))
      const everything = yield* sql`SELECT * FROM docs.api_keys`
      assert.notInclude(JSON.stringify(everything, (_, v) => typeof v === "bigint" ? String(v) : v), key.slice(14), "the key's secret part is stored nowhere")

      const listed = yield* keys.list
      const mine = listed.find((entry) => entry.id === record.id)
      assert.deepStrictEqual(mine, record)
      assert.notInclude(JSON.stringify(listed), key.slice(14))

      const other = yield* keys.create()
      assert.notStrictEqual(other.key, key)
      assert.deepStrictEqual(other.record.settings, { libraries: [], sources: [] })
      assert.isNull(other.record.team)
      assert.strictEqual((yield* keys.list)[0]!.id, other.record.id, "newest first")
    }))

  it.effect("authenticate finds live keys only; revoke by prefix, id or the key itself; bad input is refused", () =>
    Effect.gen(function*() {
      const keys = yield* ApiKeys
      const first = yield* keys.create({ name: "first" })
      const second = yield* keys.create({ name: "second" })
      const third = yield* keys.create({ name: "third" })
      assert.strictEqual((yield* keys.authenticate(first.key))._tag, "Some")
      assert.strictEqual((yield* keys.authenticate(unknownKey))._tag, "None")
      assert.strictEqual((yield* keys.authenticate("not-a-key"))._tag, "None")

      const revoked = yield* keys.revoke(first.record.prefix)
      assert.instanceOf(revoked.revokedAt, Date)
      assert.strictEqual((yield* keys.authenticate(first.key))._tag, "None")
      const again = yield* keys.revoke(first.record.prefix)
      assert.deepStrictEqual(again.revokedAt, revoked.revokedAt, "revoking twice keeps the first time")

      yield* keys.revoke(second.record.id)
      assert.strictEqual((yield* keys.authenticate(second.key))._tag, "None")
      yield* keys.revoke(third.key)
      assert.strictEqual((yield* keys.authenticate(third.key))._tag, "None")

      const missing = yield* Effect.flip(keys.revoke("svcsk_nothing1"))
      assert.strictEqual(missing._tag, "ApiKeyNotFound")
      const missingKey = yield* Effect.flip(keys.revoke(unknownKey))
      assert.notInclude(missingKey.message, unknownKey, "a key is never echoed")

      const badLibrary = yield* Effect.flip(keys.create({ libraries: ["acme"] }))
      assert.strictEqual(badLibrary._tag, "InvalidApiKeyOptions")
      assert.include(badLibrary.message, `"acme"`)
      const badSource = yield* Effect.flip(keys.create({ sources: ["ftp" as any] }))
      assert.include(badSource.message, `"ftp" is not one of folder, npm, git, website, openapi`)
    }))
})

layer(socketClient.pipe(Layer.provideMerge(Seeded), Layer.provideMerge(stack)), { timeout: 120_000 })(
  "REST API with keys",
  (it) => {
    it.effect("the key in Authorization: Bearer, X-Svc-API-Key or X-API-Key; none is anonymous", () =>
      Effect.gen(function*() {
        const key = yield* newKey({ name: "headers" })
        for (const headers of [bearer(key), { "x-svc-api-key": key }, { "x-api-key": key }, { authorization: `bearer  ${key}` }]) {
          const answer = yield* search("widgets", headers)
          assert.strictEqual(answer.status, 200, JSON.stringify(headers))
          assert.includeMembers(answer.body.results.map((r: any) => r.id), ["/acme/widgets", "/other/widgets"])
          assert.isFalse(answer.body.searchFilterApplied, "a key without settings filters nothing")
        }
        const anonymous = yield* search("widgets")
        assert.strictEqual(anonymous.status, 200)
        assert.isFalse(anonymous.body.searchFilterApplied)
        assert.strictEqual((yield* context("/acme/widgets")).status, 200)
      }))

    it.effect("/openapi.json documents the three key headers (optional) and the 401 and 429 answers", () =>
      Effect.gen(function*() {
        const { body } = yield* get("/openapi.json")
        // the three a client may send its key in, and the operators' DOCS_ADMIN_TOKEN (POST /rpc only)
        assert.deepStrictEqual(Object.keys(body.components.securitySchemes).sort(), ["adminToken", "apiKey", "bearer", "svcApiKey"])
        assert.strictEqual(body.components.securitySchemes.svcApiKey.name, "X-Svc-API-Key")
        assert.deepStrictEqual(
          Object.entries<any>(body.paths).flatMap(([path, item]) =>
            Object.values<any>(item).some((operation) => (operation.security ?? []).some((scheme: object) => "adminToken" in scheme)) ? [path] : []
          ),
          ["/rpc"],
          "the admin token is asked on /rpc alone"
        )
        for (const path of ["/api/v2/libs/search", "/api/v2/context"]) {
          const operation = body.paths[path].get
          assert.deepStrictEqual(operation.security[0], {}, "anonymous allowed")
          assert.includeMembers(Object.keys(operation.responses), ["401", "429"])
        }
        assert.deepStrictEqual(body.paths["/health"].get.security ?? [], [], "health needs no key")
      }))

    it.effect("a wrong, malformed, revoked, empty or wrongly supplied key is 401 unauthorized with no data", () =>
      Effect.gen(function*() {
        const revokedKey = yield* newKey({ name: "to revoke" })
        assert.strictEqual((yield* search("widgets", bearer(revokedKey))).status, 200)
        yield* (yield* ApiKeys).revoke(revokedKey)
        for (
          const headers of [
            bearer(unknownKey),
            bearer(revokedKey),
            bearer("nope"),
            { "x-svc-api-key": unknownKey },
            { "x-api-key": "svcsk_short" },
            { "x-api-key": "" },
            { authorization: "Bearer" },
            { authorization: `Basic ${Buffer.from("user:pass").toString("base64")}` },
            { authorization: unknownKey }
          ]
        ) {
          for (const answer of [yield* search("widgets", headers), yield* context("/acme/widgets", headers)]) {
            assert.strictEqual(answer.status, 401, JSON.stringify(headers))
            assert.strictEqual(answer.body.code, "unauthorized")
            assert.isString(answer.body.message)
            assert.deepStrictEqual(Object.keys(answer.body).sort(), ["code", "message"], "no data beside the error")
            assert.notInclude(answer.text, unknownKey)
            assert.notInclude(answer.text, revokedKey)
          }
        }
      }))

    it.effect("two key headers must hold the same key: a valid bearer beside a wrong X-API-Key, or one header sent twice, is 401", () =>
      Effect.gen(function*() {
        const key = yield* newKey({ name: "two headers" })
        const same = yield* search("widgets", { ...bearer(key), "x-api-key": key, "x-svc-api-key": key })
        assert.strictEqual(same.status, 200, "the same key in every header is that key")
        // Two lines of one header reach the handler joined with ", " (as fetch sends them appended).
        for (const headers of [{ ...bearer(key), "x-api-key": unknownKey }, { "x-svc-api-key": key, "x-api-key": "" }, { "x-api-key": `${key}, ${key}` }]) {
          for (const answer of [yield* search("widgets", headers), yield* context("/acme/widgets", headers)]) {
            assert.strictEqual(answer.status, 401, JSON.stringify(headers))
            assert.include(answer.body.message, "no API key, or more than one")
            assert.notInclude(answer.text, key)
          }
        }
      }))

    it.effect("team settings: the library filter and source access restrict search and context; searchFilterApplied", () =>
      Effect.gen(function*() {
        const ids = (answer: { body: any }) => answer.body.results.map((result: any) => result.id)

        const acme = yield* newKey({ team: "acme", libraries: ["/acme/*"] })
        const acmeSearch = yield* search("widgets", bearer(acme))
        assert.deepStrictEqual(ids(acmeSearch), ["/acme/widgets"])
        assert.isTrue(acmeSearch.body.searchFilterApplied)
        // look-alike names (a typo) go through the same filter
        assert.includeMembers(ids(yield* search("widgts")), ["/acme/widgets", "/other/widgets"])
        assert.deepStrictEqual(ids(yield* search("widgts", bearer(acme))), ["/acme/widgets"])
        // active settings are reported even when nothing was left out
        const gadgets = yield* search("gadgets", bearer(acme))
        assert.deepStrictEqual(ids(gadgets), ["/acme/gadgets"])
        assert.isTrue(gadgets.body.searchFilterApplied)
        assert.strictEqual((yield* context("/acme/widgets", bearer(acme))).status, 200)
        assert.strictEqual((yield* context("/acme/widgets/1.0.0", bearer(acme))).status, 200)
        // outside the filter: exactly the answer for a library that does not exist
        for (const libraryId of ["/other/widgets", "/other/widgets/1.0.0"]) {
          const hidden = yield* context(libraryId, bearer(acme))
          assert.strictEqual(hidden.status, 404)
          assert.deepStrictEqual(hidden.body, {
            code: "library_not_found",
            message: `No library with id ${libraryId}: find its id with GET /api/v2/libs/search?libraryName=<name> or the resolve-library-id tool`,
            libraryId
          })
        }
        // the anonymous caller still sees everything
        assert.strictEqual((yield* context("/other/widgets")).status, 200)

        const exact = yield* newKey({ libraries: ["/other/widgets"] })
        assert.deepStrictEqual(ids(yield* search("widgets", bearer(exact))), ["/other/widgets"])
        assert.strictEqual((yield* context("/acme/widgets", bearer(exact))).status, 404)

        const npmOnly = yield* newKey({ sources: ["npm"] })
        const npmWidgets = yield* search("widgets", bearer(npmOnly))
        assert.deepStrictEqual(ids(npmWidgets), [])
        assert.isTrue(npmWidgets.body.searchFilterApplied)
        assert.deepStrictEqual(ids(yield* search("he", bearer(npmOnly))), ["/mathiasbynens/he"])
        assert.strictEqual((yield* context("/mathiasbynens/he", bearer(npmOnly))).status, 200)
        assert.strictEqual((yield* context("/acme/widgets", bearer(npmOnly))).status, 404)

        const both = yield* newKey({ libraries: ["/acme/*"], sources: ["npm"] })
        assert.deepStrictEqual(ids(yield* search("widgets", bearer(both))), [])
        assert.deepStrictEqual(ids(yield* search("he", bearer(both))), [])
      }))

    it.effect("the MCP server forwarding a refused key: the tool result says the key was refused, a header holding no key too (as the API answers it)", () =>
      Effect.gen(function*() {
        const callWith = yield* mcpQueryDocs
        const noKey = [{ authorization: "Basic YTpi" }, { authorization: "Bearer" }, { "x-api-key": "" }]
        for (const headers of [bearer(unknownKey), { "x-api-key": "svcsk_wrong" }, ...noKey]) {
          const refused = yield* callWith(headers)
          assert.isTrue(refused.isError)
          assert.match(textOf(refused), /refused the API key \(401\)/)
          assert.notInclude(textOf(refused), unknownKey)
        }
        const key = yield* newKey({ name: "mcp" })
        const served = yield* callWith({ "x-svc-api-key": key })
        assert.isUndefined(served.isError)
        assert.include(textOf(served), "configurable widget options")
      }).pipe(Effect.scoped))
  }
)

layer(
  socketClientWith({ DOCS_RATE_LIMIT_ANONYMOUS: "3", DOCS_RATE_LIMIT_KEYED: "5" }).pipe(
    Layer.provideMerge(Seeded),
    Layer.provideMerge(stack)
  ),
  { timeout: 120_000 }
)("rate limits", (it) => {
  it.effect("anonymous: 429 rate_limited with Retry-After past the limit, while keyed callers are still served", () =>
    Effect.gen(function*() {
      for (let i = 0; i < 3; i++) assert.strictEqual((yield* search("widgets")).status, 200, `request ${i + 1}`)
      const limited = yield* search("widgets")
      assert.strictEqual(limited.status, 429)
      assert.strictEqual(limited.body.code, "rate_limited")
      assert.isString(limited.body.message)
      // 3 per minute: one comes back every 20 seconds
      const retryAfter = Number(limited.headers.get("retry-after"))
      assert.isTrue(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 20, String(retryAfter))
      assert.strictEqual(limited.body.retryAfter, retryAfter)
      assert.notProperty(limited.body, "results")
      // X-Forwarded-For is not trusted without DOCS_TRUST_PROXY: the same address, still limited
      assert.strictEqual((yield* search("widgets", { "x-forwarded-for": "203.0.113.9" })).status, 429)
      // context counts too
      assert.strictEqual((yield* context("/acme/widgets")).status, 429)

      // a key has its own, higher limit
      const key = yield* newKey({ name: "keyed" })
      for (let i = 0; i < 5; i++) assert.strictEqual((yield* search("widgets", bearer(key))).status, 200, `keyed ${i + 1}`)
      const keyLimited = yield* search("widgets", { "x-api-key": key })
      assert.strictEqual(keyLimited.status, 429)
      assert.isAtLeast(Number(keyLimited.headers.get("retry-after")), 1)
      // …per key: another one is still served
      assert.strictEqual((yield* search("widgets", bearer(yield* newKey({ name: "other" })))).status, 200)

      // the MCP server, calling from this same (exhausted) address without a key, says so
      const callWith = yield* mcpQueryDocs
      const throttled = yield* callWith({})
      assert.isTrue(throttled.isError)
      assert.match(textOf(throttled), /rate limiting these requests \(429\); try again in \d+ seconds?\. An API key raises/)
      // with the exhausted key, it says the key's limit is used, not that a key would help
      const keyThrottled = yield* callWith({ authorization: `Bearer ${key}` })
      assert.isTrue(keyThrottled.isError)
      assert.match(textOf(keyThrottled), /rate limiting these requests \(429\); try again in \d+ seconds?\. This API key has used its limit\.$/)
    }).pipe(Effect.scoped))
})

layer(
  socketClientWith({ DOCS_RATE_LIMIT_ANONYMOUS: "1", DOCS_TRUST_PROXY: "true" }).pipe(Layer.provideMerge(stack)),
  { timeout: 60_000 }
)("rate limits behind a proxy", (it) => {
  it.effect("DOCS_TRUST_PROXY=true: the address is the last X-Forwarded-For entry; refused keys are 401, counted against it", () =>
    Effect.gen(function*() {
      const from = (forwardedFor: string, headers: Record<string, string> = {}) =>
        Effect.map(search("widgets", { "x-forwarded-for": forwardedFor, ...headers }), (answer) => answer.status)
      assert.strictEqual(yield* from("198.51.100.1"), 200)
      assert.strictEqual(yield* from("198.51.100.1"), 429)
      assert.strictEqual(yield* from("198.51.100.2"), 200)
      // what the client wrote before the proxy's entry changes nothing
      assert.strictEqual(yield* from("10.9.9.9, 198.51.100.2"), 429)
      // a refused key: 401, and it used up the address's anonymous request
      assert.strictEqual(yield* from("198.51.100.3", bearer(unknownKey)), 401)
      assert.strictEqual(yield* from("198.51.100.3"), 429)
      // the key is checked before the limit: a wrong key while the address is limited is still 401, not 429
      for (const headers of [bearer(unknownKey), { "x-api-key": "svcsk_wrong" }, { authorization: "Basic eDp5" }]) {
        assert.strictEqual(yield* from("198.51.100.3", headers), 401, JSON.stringify(headers))
      }
      // and a good key is served from its own bucket
      assert.strictEqual(yield* from("198.51.100.3", bearer(yield* newKey({ name: "behind-proxy" }))), 200)
    }))
})

describe("key format", () => {
  it("keys are unique and url-safe", async () => {
    const { generateKey, isWellFormedKey, prefixOf } = await import("../src/ApiKeys.ts")
    const keys = new Set(Array.from({ length: 200 }, generateKey))
    assert.strictEqual(keys.size, 200)
    for (const key of keys) {
      assert.match(key, keyPattern)
      assert.isTrue(isWellFormedKey(key))
      assert.match(prefixOf(key), /^svcsk_[A-Za-z0-9_-]{8}$/)
    }
  })
})
