/**
 * The REST API v2 handlers over the memory layers, in-process (test/unit/memoryApi.ts): library
 * search, context as text, JSON and 202, and the error answers (404 unknown library or version, 400
 * bad parameters, 401 bad or revoked keys, team settings hiding a library). No socket, no database.
 */
import { assert, describe, it } from "@effect/vitest"
import { ContextResponse, LibrarySearchResponse } from "@svc/schema"
import { Effect, Schema, type Scope } from "effect"
import { ApiKeys } from "../../src/ApiKeys.ts"
import { IndexStore } from "../../src/IndexStore.ts"
import type { Search } from "../../src/Search.ts"
import { greeterDocs, indexed, source, widgetsDocs } from "../contracts/fixtures.ts"
import { memoryApi, memoryServices } from "./memoryApi.ts"

/** A fresh memory index with two libraries (and one still queued), and the API over it. */
const seeded = Effect.gen(function*() {
  yield* indexed(source("/acme/greeter", "1.0.0"), greeterDocs)
  yield* indexed(source("/acme/widgets", "2.0", "npm"), widgetsDocs)
  yield* (yield* IndexStore).enqueue([source("/acme/later", "0.1")])
  return yield* memoryApi
})

const json = (response: Response) => Effect.promise(() => response.json() as Promise<Record<string, any>>)

const test = (title: string, body: () => Effect.Effect<void, unknown, ApiKeys | IndexStore | Search | Scope.Scope>) =>
  it.effect(title, () => Effect.provide(Effect.scoped(body()), memoryServices))

describe("docs REST API v2 handlers (memory layers)", () => {
  test("GET /api/v2/libs/search finds a library by name", () =>
    Effect.gen(function*() {
      const api = yield* seeded
      const response = yield* api.get("/api/v2/libs/search?libraryName=greeter&query=language")
      assert.strictEqual(response.status, 200)
      const body = Schema.decodeUnknownSync(LibrarySearchResponse)(yield* json(response))
      assert.strictEqual(body.searchFilterApplied, false)
      assert.deepStrictEqual(body.results.map((r) => [r.id, r.state, r.versions]), [["/acme/greeter", "ready", ["1.0.0"]]])
    }))

  test("GET /api/v2/context: text by default, JSON with type=json within the budget, 202 while queued", () =>
    Effect.gen(function*() {
      const api = yield* seeded
      const text = yield* api.get("/api/v2/context?libraryId=/acme/greeter&query=withLanguage")
      assert.strictEqual(text.status, 200)
      assert.match(text.headers.get("content-type") ?? "", /^text\/plain/)
      assert.include(yield* Effect.promise(() => text.text()), "withLanguage")

      const asJson = yield* api.get("/api/v2/context?libraryId=/acme/widgets/2.0&query=gauge&type=json&tokens=100")
      assert.strictEqual(asJson.status, 200)
      const body = Schema.decodeUnknownSync(ContextResponse)(yield* json(asJson))
      assert.strictEqual(body.libraryId, "/acme/widgets/2.0")
      assert.strictEqual(body.query, "gauge")
      assert.isAtMost(body.totalTokens, 100)
      assert.isTrue(body.snippets.length > 0)

      const queued = yield* api.get("/api/v2/context?libraryId=/acme/later")
      assert.strictEqual(queued.status, 202)
      assert.deepStrictEqual(yield* json(queued), {
        code: "library_indexing",
        message: "/acme/later/0.1 is queued for indexing; try again in a moment",
        libraryId: "/acme/later/0.1",
        version: "0.1",
        state: "queued"
      })
    }))

  test("GET /api/v2/context: topic focuses the answer (alone or with a question); page gives what the budget left", () =>
    Effect.gen(function*() {
      const api = yield* seeded
      const answer = (query: string) =>
        Effect.flatMap(api.get(`/api/v2/context?libraryId=/acme/greeter&type=json&${query}`), (response) => {
          assert.strictEqual(response.status, 200, query)
          return Effect.map(json(response), (body) => Schema.decodeUnknownSync(ContextResponse)(body))
        })
      const byTopic = yield* answer("topic=farewell")
      assert.include(byTopic.snippets[0]!.content, "farewell")
      // the question answered is echoed: the topic alone is the question (it said null)
      assert.strictEqual(byTopic.query, "farewell")
      const withQuestion = yield* answer("query=how+do+I+say&topic=farewell")
      assert.include(withQuestion.snippets[0]!.content, "farewell")
      assert.strictEqual(withQuestion.query, "how do I say farewell")
      const first = yield* answer("query=greeter+language+farewell&tokens=100")
      const second = yield* answer("query=greeter+language+farewell&tokens=100&page=2")
      assert.isAbove(second.snippets.length, 0)
      for (const snippet of second.snippets) assert.notInclude(first.snippets.map((s) => s.content), snippet.content)
      const past = yield* api.get("/api/v2/context?libraryId=/acme/greeter&query=greeter&page=10")
      assert.strictEqual(past.status, 200)
      assert.include(yield* Effect.promise(() => past.text()), "Page 10 of /acme/greeter/1.0.0 holds no more snippets")
    }))

  test("404 for an unknown library or version, with the library_not_found body", () =>
    Effect.gen(function*() {
      const api = yield* seeded
      const unknown = yield* api.get("/api/v2/context?libraryId=/facebook/react")
      assert.strictEqual(unknown.status, 404)
      assert.deepStrictEqual(yield* json(unknown), {
        code: "library_not_found",
        message: "No library with id /facebook/react: find its id with GET /api/v2/libs/search?libraryName=<name> or the resolve-library-id tool",
        libraryId: "/facebook/react"
      })
      const version = yield* api.get("/api/v2/context?libraryId=/acme/greeter/9.9")
      assert.strictEqual(version.status, 404)
      assert.include((yield* json(version)).message, "indexed versions: 1.0.0")
    }))

  test("400 invalid_request naming the bad parameter", () =>
    Effect.gen(function*() {
      const api = yield* seeded
      for (const [path, parameter] of [
        ["/api/v2/context?libraryId=not-an-id", "libraryId"],
        ["/api/v2/context?libraryId=/acme/greeter&tokens=5", "tokens"],
        ["/api/v2/context?libraryId=/acme/greeter&type=xml", "type"],
        ["/api/v2/context?libraryId=/acme/greeter&page=0", "page"],
        ["/api/v2/context?libraryId=/acme/greeter&page=11", "page"],
        ["/api/v2/context?libraryId=/acme/greeter&page=two", "page"],
        ["/api/v2/context?libraryId=/acme/greeter&page=1.5", "page"],
        // JavaScript's number parsing took these as 10,000 / 5,000 / 2 / 16
        ["/api/v2/context?libraryId=/acme/greeter&tokens=1e4", "tokens"],
        ["/api/v2/context?libraryId=/acme/greeter&tokens=%2B5000", "tokens"],
        ["/api/v2/context?libraryId=/acme/greeter&tokens=5000.0", "tokens"],
        ["/api/v2/context?libraryId=/acme/greeter&page=2.0", "page"],
        ["/api/v2/context?libraryId=/acme/greeter&page=0x2", "page"],
        ["/api/v2/context?libraryId=/acme/greeter&page=", "page"],
        [`/api/v2/context?libraryId=/acme/greeter&topic=${"x".repeat(201)}`, "topic"],
        ["/api/v2/libs/search", "libraryName"],
        ["/api/v2/libs/search?libraryName=%20%20%09", "libraryName"]
      ] as const) {
        const response = yield* api.get(path)
        assert.strictEqual(response.status, 400, path)
        const body = yield* json(response)
        assert.strictEqual(body.code, "invalid_request", path)
        assert.include(body.message, parameter, path)
      }
    }))

  test("400 for an id the indexer could never make (a part . or .., over 100 characters), not a 404 lookup", () =>
    Effect.gen(function*() {
      const api = yield* seeded
      const long = "o".repeat(101)
      for (const [id, part] of [
        ["/acme/greeter/..", `its version is ".."`],
        ["/acme/greeter/.", `its version is "."`],
        ["/acme/../greeter", `its repo is ".."`],
        ["/./greeter", `its owner is "."`],
        [`/${long}/greeter`, "its owner is a 101-character one"],
        ["/acme/greeter/%01", `its version is "\\u0001"`]
      ] as const) {
        const response = yield* api.get(`/api/v2/context?libraryId=${id}`)
        assert.strictEqual(response.status, 400, id)
        const body = yield* json(response)
        assert.strictEqual(body.code, "invalid_request", id)
        assert.deepStrictEqual(body.issues.map((issue: any) => [issue.in, issue.parameter]), [["query", "libraryId"]], id)
        assert.include(body.message, `${part}: each part of a library id (owner, repo, version) holds at most 100 characters`, id)
      }
      // at the limit, an id is looked up
      assert.strictEqual((yield* api.get(`/api/v2/context?libraryId=/${"o".repeat(100)}/greeter`)).status, 404)
    }))

  test("401 for a malformed, unknown or revoked key; a key's team settings hide libraries like missing ones", () =>
    Effect.gen(function*() {
      const api = yield* seeded
      const keys = yield* ApiKeys
      const revoked = yield* keys.create({ name: "old" })
      yield* keys.revoke(revoked.record.prefix)
      for (const headers of [
        { authorization: "Bearer svcsk_bad" },
        { authorization: "Basic abc" },
        { "x-api-key": "" },
        { "x-svc-api-key": revoked.key }
      ]) {
        const response = yield* api.get("/api/v2/libs/search?libraryName=greeter", { headers })
        assert.strictEqual(response.status, 401, JSON.stringify(headers))
        const body = yield* json(response)
        assert.strictEqual(body.code, "unauthorized")
        assert.notInclude(JSON.stringify(body), revoked.key)
      }
      const team = yield* keys.create({ name: "team", sources: ["npm"] })
      const authorization = { authorization: `Bearer ${team.key}` }
      const search = yield* json(yield* api.get("/api/v2/libs/search?libraryName=acme", { headers: authorization }))
      assert.strictEqual(search.searchFilterApplied, true)
      assert.deepStrictEqual(search.results.map((r: { id: string }) => r.id), ["/acme/widgets"])
      const hidden = yield* api.get("/api/v2/context?libraryId=/acme/greeter", { headers: authorization })
      assert.strictEqual(hidden.status, 404)
      assert.strictEqual((yield* json(hidden)).code, "library_not_found")
      const shown = yield* api.get("/api/v2/context?libraryId=/acme/widgets", { headers: authorization })
      assert.strictEqual(shown.status, 200)
    }))

  test("/health, and a JSON 404 for an unknown path", () =>
    Effect.gen(function*() {
      const api = yield* seeded
      assert.deepStrictEqual(yield* json(yield* api.get("/health")), { status: "ok" })
      const missing = yield* api.get("/api/v3/nothing")
      assert.strictEqual(missing.status, 404)
      assert.isString((yield* json(missing)).code)
    }))
})
