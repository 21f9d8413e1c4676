/**
 * The default corpus (issue 19): a library's content is its own. Installed packages of effect's monorepo
 * ship copies of effect's ai-docs, AGENTS.md and CLAUDE.md: indexed once, under effect; each package's
 * README stays its own. A library with few snippets (vitest's npm package ships a badge README) says so
 * in search results and ranks below a library of the same name that can answer.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Indexer } from "../src/Indexer.ts"
import { Search } from "../src/Search.ts"
import { stack } from "./support.ts"

const sourcePaths = (libraryId: string) =>
  Effect.gen(function*() {
    const answer = yield* (yield* Search).context({ libraryId, tokens: 50_000, page: 1 })
    assert.strictEqual(answer._tag, "Found")
    return answer._tag === "Found" ? answer.snippets.map((snippet) => snippet.sourcePath) : []
  })

layer(stack)("default corpus", (it) => {
  it.effect("files a monorepo's main package ships at the same paths are indexed once, under it", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const effect = yield* indexer.add("npm:effect")
      const vitest = yield* indexer.add("npm:@effect/vitest")
      assert.strictEqual(vitest.libraryId, "/effect-ts/vitest")
      const own = yield* sourcePaths(vitest.libraryId)
      assert.include(own, "README.md")
      assert.isTrue(own.every((file) => !file.startsWith("ai-docs/") && file !== "AGENTS.md" && file !== "CLAUDE.md"), own.join(", "))
      assert.isBelow(vitest.files, 5)
      const main = yield* sourcePaths(effect.libraryId)
      assert.isTrue(main.some((file) => file.startsWith("ai-docs/")))
      assert.include(main, "AGENTS.md")
    }))

  it.effect("a library with few snippets says so and ranks below a namesake that can answer", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const thin = yield* indexer.add("npm:vitest")
      yield* indexer.add("npm:@effect/vitest")
      assert.isBelow(thin.snippets, 2)
      const results = yield* (yield* Search).libraries("vitest", "how do I mock a module")
      assert.strictEqual(results[0]!.id, "/effect-ts/vitest")
      const found = results.find((result) => result.id === thin.libraryId)!
      assert.match(found.description, /few snippets/)
    }))
})
