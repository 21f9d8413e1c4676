/**
 * The MCP tools (resolve-library-id, query-docs) through their `DocsClient` against the REST API over
 * the memory layers, in-process (test/unit/memoryApi.ts): answers, and the failures an agent sees as
 * tool results (unknown library, refused key, still queued, bad arguments). No socket, no database.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { ApiKeys } from "../../src/ApiKeys.ts"
import { IndexStore } from "../../src/IndexStore.ts"
import { CallerApiKey } from "../../src/mcp/DocsClient.ts"
import { callTool } from "../../src/mcp/McpServer.ts"
import { greeterDocs, indexed, source } from "../contracts/fixtures.ts"
import { memoryDocsClient, memoryServices } from "./memoryApi.ts"

const textOf = (result: { readonly content: ReadonlyArray<unknown> }) =>
  result.content.map((item) => (item as { readonly text: string }).text).join("\n")

/** The services in memory with one indexed library and one queued, and the tools' client over them. */
const tools = Layer.provideMerge(
  memoryDocsClient,
  Layer.effectDiscard(Effect.gen(function*() {
    yield* indexed(source("/acme/greeter", "1.0.0"), greeterDocs)
    yield* (yield* IndexStore).enqueue([source("/acme/later", "0.1")])
  })).pipe(Layer.provideMerge(memoryServices))
)

describe("MCP tools over the memory API", () => {
  it.effect("resolve-library-id lists the library; query-docs answers with its snippets", () =>
    Effect.gen(function*() {
      const resolved = yield* callTool("resolve-library-id", { query: "switch language", libraryName: "greeter" })
      assert.isUndefined(resolved.isError)
      assert.include(textOf(resolved), "Library ID: /acme/greeter")
      assert.include(textOf(resolved), "State: ready")
      const answer = yield* callTool("query-docs", { libraryId: "/acme/greeter", query: "withLanguage" })
      assert.isUndefined(answer.isError)
      assert.include(textOf(answer), "withLanguage")
      const nothing = yield* callTool("resolve-library-id", { query: "q", libraryName: "qqxxzzvvkk" })
      assert.isTrue(nothing.isError)
      assert.include(textOf(nothing), "No indexed library matches")
    }).pipe(Effect.provide(tools)))

  it.effect("an unknown library, a queued one, bad arguments: tool results saying what to do", () =>
    Effect.gen(function*() {
      const unknown = yield* callTool("query-docs", { libraryId: "/nobody/nothing", query: "q" })
      assert.isTrue(unknown.isError)
      assert.include(textOf(unknown), "No library has the ID /nobody/nothing (404)")
      const queued = yield* callTool("query-docs", { libraryId: "/acme/later", query: "q" })
      assert.isTrue(queued.isError)
      assert.include(textOf(queued), "is queued for indexing (state: queued)")
      const bad = yield* callTool("query-docs", { libraryId: "", query: "q" })
      assert.isTrue(bad.isError)
      assert.include(textOf(bad), "libraryId must be a non-empty string")
    }).pipe(Effect.provide(tools)))

  it.effect("the caller's key is forwarded: a revoked one is refused (401), a live one served", () =>
    Effect.gen(function*() {
      const keys = yield* ApiKeys
      const live = yield* keys.create({ name: "agent" })
      const revoked = yield* keys.create({ name: "gone" })
      yield* keys.revoke(revoked.record.prefix)
      const refused = yield* callTool("resolve-library-id", { query: "q", libraryName: "greeter" }).pipe(
        Effect.provideService(CallerApiKey, revoked.key)
      )
      assert.isTrue(refused.isError)
      assert.include(textOf(refused), "refused the API key (401)")
      const served = yield* callTool("resolve-library-id", { query: "q", libraryName: "greeter" }).pipe(
        Effect.provideService(CallerApiKey, live.key)
      )
      assert.isUndefined(served.isError)
    }).pipe(Effect.provide(tools)))
})
