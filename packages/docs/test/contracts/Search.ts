/**
 * The contract of `Search`, run against `layerMemory` (test/unit) and Postgres
 * (test/Search.contract.test.ts), the index filled through `IndexStore`. Only what both rankings
 * must agree on: a snippet with the question's words is found; answers stay within their library
 * and version; the token budget holds; the same text in two files is answered once; a name that matches nothing finds nothing; a library is
 * found by its name; team settings hide libraries exactly like missing ones; a version without an
 * index yet is "indexing" while a run holds it, else "queued". Each test builds a fresh layer.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import { IndexStore } from "../../src/IndexStore.ts"
import { type ContextAnswer, Search } from "../../src/Search.ts"
import { answerRules, renderRules } from "../../src/ranking/Answer.ts"
import { estimateTokens, SEPARATOR, split, tokensOf } from "../../src/Splitter.ts"
import { greeterDocs, indexed, manualDocs, source, widgetsDocs } from "./fixtures.ts"

const found = (answer: ContextAnswer) => {
  assert.strictEqual(answer._tag, "Found")
  return answer as Extract<ContextAnswer, { readonly _tag: "Found" }>
}

type Entry = Extract<ContextAnswer, { readonly _tag: "Found" }>["snippets"][number]
/** The sections an answer's entry (one file) holds, as `file # heading > path`. */
const sectionsOf = (entry: Entry) => (entry.sections ?? [entry]).map((section) => `${entry.sourcePath} # ${section.headingPath.join(" > ")}`)

export const searchContract = (name: string, layer: Layer.Layer<Search | IndexStore, unknown>) =>
  describe(`Search contract (${name})`, () => {
    const test = (title: string, body: () => Effect.Effect<void, unknown, Search | IndexStore>) =>
      it.effect(title, () => Effect.provide(body(), layer))

    test("context: the snippet with the question's words comes first, from the asked library only", () =>
      Effect.gen(function*() {
        yield* indexed(source("/acme/greeter", "1.0.0"), greeterDocs)
        yield* indexed(source("/acme/widgets", "1.0"), widgetsDocs)
        const search = yield* Search
        const answer = found(yield* search.context({ libraryId: "/acme/greeter", query: "withLanguage polish" }))
        assert.strictEqual(answer.libraryId, "/acme/greeter/1.0.0")
        assert.strictEqual(answer.version, "1.0.0")
        assert.include(answer.snippets[0]!.content, "withLanguage")
        assert.isTrue(answer.snippets.every((snippet) => !snippet.content.includes("gauge")))
        const gauges = found(yield* search.context({ libraryId: "/acme/widgets", query: "gauge thresholds" }))
        assert.isTrue(gauges.snippets.length > 0)
        assert.isTrue(gauges.snippets.every((snippet) => !/greet/i.test(snippet.content)))
      }))

    test("context: /owner/repo/version answers from that version; an unknown version or library is LibraryNotFound", () =>
      Effect.gen(function*() {
        yield* indexed(source("/acme/greeter", "1.0.0"), greeterDocs)
        yield* indexed(source("/acme/greeter", "2.0.0"), widgetsDocs, { makeDefault: false })
        const search = yield* Search
        const old = found(yield* search.context({ libraryId: "/acme/greeter/2.0.0", query: "gauge" }))
        assert.strictEqual(old.libraryId, "/acme/greeter/2.0.0")
        assert.include(old.snippets[0]!.content, "gauge")
        const current = found(yield* search.context({ libraryId: "/acme/greeter" }))
        assert.strictEqual(current.version, "1.0.0")
        const noVersion = yield* Effect.flip(search.context({ libraryId: "/acme/greeter/9.9" }))
        assert.strictEqual(noVersion._tag, "LibraryNotFound")
        assert.include(noVersion.message, "1.0.0, 2.0.0")
        const noLibrary = yield* Effect.flip(search.context({ libraryId: "/nobody/nothing" }))
        assert.strictEqual(noLibrary._tag, "LibraryNotFound")
        assert.strictEqual(noLibrary.libraryId, "/nobody/nothing")
      }))

    test("context: the token budget holds, and totalTokens is what the snippets hold", () =>
      Effect.gen(function*() {
        const snippets = yield* indexed(source("/acme/greeter", "1.0.0"), greeterDocs)
        const search = yield* Search
        const smallest = Math.min(...snippets.map((s) => s.tokens))
        const budget = smallest + 1
        const answer = found(yield* search.context({ libraryId: "/acme/greeter", query: "greeter language farewell", tokens: budget }))
        assert.isAtMost(answer.totalTokens, budget)
        assert.strictEqual(answer.totalTokens, answer.snippets.reduce((sum, s) => sum + s.tokens, 0))
        assert.isTrue(answer.snippets.length >= 1)
        const all = found(yield* search.context({ libraryId: "/acme/greeter", tokens: 50_000 }))
        assert.strictEqual(all.snippets.flatMap(sectionsOf).length, snippets.length)
        const none = found(yield* search.context({ libraryId: "/acme/greeter", tokens: smallest - 1 }))
        assert.deepStrictEqual([none.snippets.length, none.totalTokens], [0, 0])
      }))

    test("context: one entry per file-and-heading section, its snippets merged in document order", () =>
      Effect.gen(function*() {
        const snippets = yield* indexed(source("/acme/manual", "1.0"), manualDocs)
        const installing = snippets.filter((s) => s.headingPath.at(-1) === "Installing the manual")
        assert.isAtLeast(installing.length, 3)
        const answer = found(yield* (yield* Search).context({ libraryId: "/acme/manual", query: "install manual init", tokens: 50_000 }))
        const pairs = answer.snippets.flatMap(sectionsOf)
        assert.strictEqual(new Set(pairs).size, pairs.length, pairs.join("\n"))
        assert.strictEqual(pairs.filter((pair) => pair.endsWith("> Installing the manual")).length, 1)
        const content = answer.snippets[0]!.content
        assert.isBelow(content.indexOf("npm install manual"), content.indexOf("manual init --home"))
        assert.include(content, "initialise it to write its configuration file")
        assert.strictEqual(answer.totalTokens, answer.snippets.reduce((sum, s) => sum + s.tokens, 0))
      }))

    test("context: one entry per file, its sections best first; one section is an entry without a list", () =>
      Effect.gen(function*() {
        const store = yield* IndexStore
        const versionId = yield* store.register(source("/acme/manual", "1.0"), "indexing", { makeDefault: true })
        yield* store.write(versionId, [...split(manualDocs, "docs/manual.md"), ...split(greeterDocs, "docs/greeter.md")])
        const answer = found(yield* (yield* Search).context({ libraryId: "/acme/manual", query: "upgrading configuration farewell", tokens: 50_000 }))
        const files = answer.snippets.map((entry) => entry.sourcePath)
        assert.strictEqual(new Set(files).size, files.length, files.join(", "))
        const manual = answer.snippets.find((entry) => entry.sourcePath === "docs/manual.md")!
        // "upgrading" is in one section's heading: it leads its file's entry; the sections naming "configuration" follow
        assert.strictEqual(manual.title, "Upgrading the manual")
        assert.isAbove(manual.sections!.length, 1)
        assert.deepStrictEqual(manual.sections![0]!.headingPath, ["Manual", "Upgrading the manual"])
        assert.strictEqual(manual.kind, "prose")
        // every section opens at the same place (no line anchors here): one Source line, the entry's
        for (const section of manual.sections!.slice(1)) assert.include(manual.content, `#### ${section.title}\n\n`)
        assert.notInclude(manual.content, "Source:")
        assert.strictEqual(manual.tokens, tokensOf({ ...manual, body: manual.content }))
        // an entry with one section is that section, without a list
        const single = found(yield* (yield* Search).context({ libraryId: "/acme/manual", query: "withLanguage polish", tokens: 50_000 }))
        const greeter = single.snippets.find((entry) => entry.sourcePath === "docs/greeter.md")!
        assert.strictEqual(single.snippets[0], greeter)
        assert.include(greeter.content, "withLanguage")
        assert.strictEqual(answer.totalTokens, answer.snippets.reduce((sum, s) => sum + s.tokens, 0))
      }))

    test("context: the same text in two files (AGENTS.md and CLAUDE.md) is one entry", () =>
      Effect.gen(function*() {
        const store = yield* IndexStore
        const versionId = yield* store.register(source("/acme/agents", "1.0"), "indexing", { makeDefault: true })
        const rules = "# Rules\n\nRun the formatter before every commit; the linter fails on unformatted files.\n"
        yield* store.write(versionId, [...split(rules, "AGENTS.md"), ...split(rules, "CLAUDE.md"), ...split(manualDocs, "README.md")])
        const answer = found(yield* (yield* Search).context({ libraryId: "/acme/agents", query: "formatter commit", tokens: 50_000 }))
        const copies = answer.snippets.filter((s) => s.content.includes("Run the formatter before every commit"))
        assert.strictEqual(copies.length, 1, answer.snippets.map((s) => s.sourcePath).join(", "))
        assert.include(["AGENTS.md", "CLAUDE.md"], copies[0]!.sourcePath)
      }))

    test("context: page 2 holds what page 1 left within the same budget; a page past the end is empty", () =>
      Effect.gen(function*() {
        yield* indexed(source("/acme/manual", "1.0"), manualDocs)
        const search = yield* Search
        const ask = (page: number) => search.context({ libraryId: "/acme/manual", query: "manual configuration file", tokens: 100, page })
        const first = found(yield* ask(1))
        const second = found(yield* ask(2))
        assert.isAbove(first.snippets.length, 0)
        assert.isAbove(second.snippets.length, 0)
        assert.isAtMost(second.totalTokens, 100)
        const titles = (answer: typeof first) => answer.snippets.map((s) => `${s.headingPath.join(" > ")}: ${s.content}`)
        for (const entry of titles(second)) assert.notInclude(titles(first), entry)
        const last = found(yield* ask(10))
        assert.deepStrictEqual([last.snippets.length, last.totalTokens], [0, 0])
      }))

    test("context: a library's rules for agents lead page 1 within the budget; the pages still hold every section once", () =>
      Effect.gen(function*() {
        // long enough to take room a section would have had: page 1 holds less documentation
        const rules = [
          "Always close a greeter with greeter.close() once it has said goodbye, or its phrase engine keeps its timers running.",
          "Prefer withLanguage on one greeter over a new greeter per language: each greeter loads every phrase book it knows."
        ]
        yield* indexed({ ...source("/acme/greeter", "1.0.0"), rules }, greeterDocs)
        yield* indexed(source("/acme/widgets", "1.0"), widgetsDocs)
        const search = yield* Search
        const ask = (page: number) => search.context({ libraryId: "/acme/greeter", query: "greeter language farewell", tokens: 200, page })
        const first = found(yield* ask(1))
        assert.deepStrictEqual(first.rules, rules)
        const room = answerRules("/acme/greeter/1.0.0", rules, 200).tokens
        assert.isAbove(room, 0)
        assert.strictEqual(first.totalTokens, first.snippets.reduce((sum, s) => sum + s.tokens, 0) + room)
        assert.isAtMost(first.totalTokens, 200)
        assert.isAbove(first.snippets.length, 0)
        // page n starts where page n - 1 ended (page 1's rules counted on every page): every matching section once
        const seen: Array<string> = []
        for (let page = 2; page < 50; page++) {
          const next = found(yield* ask(page))
          assert.deepStrictEqual(next.rules, [], `page ${page} shows no rules`)
          if (next.snippets.length === 0) break
          seen.push(...next.snippets.flatMap(sectionsOf))
        }
        seen.push(...first.snippets.flatMap(sectionsOf))
        const all = found(yield* search.context({ libraryId: "/acme/greeter", query: "greeter language farewell", tokens: 50_000 }))
        assert.sameMembers(seen, all.snippets.flatMap(sectionsOf))
        // a library without rules shows none
        assert.deepStrictEqual(found(yield* search.context({ libraryId: "/acme/widgets", query: "gauge" })).rules, [])
      }))

    test("context: rules past half the budget are left out, in their order; the documentation keeps the rest", () =>
      Effect.gen(function*() {
        const rules = Array.from({ length: 30 }, (_, i) => `Rule ${i + 1}: ${"keep widgets small and dispose them ".repeat(13)}`)
        yield* indexed({ ...source("/acme/greeter", "1.0.0"), rules }, greeterDocs)
        const answer = found(yield* (yield* Search).context({ libraryId: "/acme/greeter", query: "greeter language", tokens: 1000 }))
        assert.isAbove(answer.rules.length, 0)
        assert.isBelow(answer.rules.length, rules.length)
        assert.deepStrictEqual(answer.rules, rules.slice(0, answer.rules.length))
        assert.isAtMost(estimateTokens(renderRules("/acme/greeter/1.0.0", answer.rules) + SEPARATOR), 500)
        assert.isAbove(answer.snippets.length, 0)
        assert.isAtMost(answer.totalTokens, 1000)
      }))

    test("context: an id in capitals finds the library stored lower-case (as its repository's links write it); an exact id wins", () =>
      Effect.gen(function*() {
        yield* indexed(source("/acme/greeter", "1.0.0"), greeterDocs)
        const search = yield* Search
        const mixed = found(yield* search.context({ libraryId: "/Acme/Greeter", query: "withLanguage polish" }))
        assert.strictEqual(mixed.libraryId, "/acme/greeter/1.0.0")
        assert.include(mixed.snippets[0]!.content, "withLanguage")
        assert.strictEqual(found(yield* search.context({ libraryId: "/ACME/greeter/1.0.0" })).libraryId, "/acme/greeter/1.0.0")
        // an operator's --id with capitals is found as written; where both exist, the exact one answers
        yield* indexed(source("/Acme/Greeter", "2.0"), widgetsDocs)
        const exact = found(yield* search.context({ libraryId: "/Acme/Greeter", query: "gauge" }))
        assert.strictEqual(exact.libraryId, "/Acme/Greeter/2.0")
        assert.include(exact.snippets[0]!.content, "gauge")
        assert.strictEqual(found(yield* search.context({ libraryId: "/acme/greeter" })).libraryId, "/acme/greeter/1.0.0")
        const unknown = yield* Effect.flip(search.context({ libraryId: "/Nobody/Nothing" }))
        assert.deepStrictEqual([unknown._tag, unknown.libraryId], ["LibraryNotFound", "/Nobody/Nothing"])
      }))

    test("context: a version registered but not indexed yet answers Indexing with its state", () =>
      Effect.gen(function*() {
        yield* (yield* IndexStore).enqueue([source("/acme/later", "1.0")])
        const answer = yield* (yield* Search).context({ libraryId: "/acme/later" })
        assert.deepStrictEqual(answer, { _tag: "Indexing", libraryId: "/acme/later/1.0", version: "1.0", state: "queued" })
      }))

    test("context and search: a version a run holds says indexing; one left indexing with no run holding it (its process died) says queued", () =>
      Effect.scoped(Effect.gen(function*() {
        const store = yield* IndexStore
        const search = yield* Search
        const stateOf = (id: string) =>
          Effect.gen(function*() {
            const answer = yield* search.context({ libraryId: id })
            const listed = (yield* search.libraries(id.split("/")[2]!)).find((result) => result.id === id)
            return [answer._tag === "Indexing" ? answer.state : answer._tag, listed?.state]
          })
        yield* store.claim(source("/acme/running", "1.0"), { makeDefault: true })
        yield* store.register(source("/acme/orphan", "1.0"), "indexing", { makeDefault: true })
        assert.deepStrictEqual(yield* stateOf("/acme/running"), ["indexing", "indexing"])
        assert.deepStrictEqual(yield* stateOf("/acme/orphan"), ["queued", "queued"])
      })))

    test("libraries: found by name with the default version's figures; a name that matches nothing finds nothing", () =>
      Effect.gen(function*() {
        const snippets = yield* indexed(source("/acme/greeter", "1.0.0"), greeterDocs, { trust: 7 })
        yield* indexed(source("/acme/widgets", "1.0"), widgetsDocs)
        const search = yield* Search
        const [first] = yield* search.libraries("greeter")
        assert.deepStrictEqual(
          { ...first!, lastUpdateDate: typeof first!.lastUpdateDate },
          {
            id: "/acme/greeter",
            title: "greeter",
            description: "The docs of /acme/greeter",
            totalSnippets: snippets.length,
            totalTokens: snippets.reduce((sum, s) => sum + s.tokens, 0),
            trustScore: 7,
            versions: ["1.0.0"],
            state: "ready",
            lastUpdateDate: "string"
          }
        )
        assert.strictEqual((yield* search.libraries("widgets", "gauges"))[0]!.id, "/acme/widgets")
        assert.deepStrictEqual(yield* search.libraries("qqxxzzvvkk"), [])
      }))

    test("libraries: a name no library is called finds the libraries whose docs are about it, only those", () =>
      Effect.gen(function*() {
        yield* indexed(source("/acme/greeter", "1.0.0"), greeterDocs)
        yield* indexed(source("/acme/widgets", "1.0"), widgetsDocs)
        const search = yield* Search
        // "gauges" is a heading of widgets' docs, not a word of any library's id or title
        assert.deepStrictEqual((yield* search.libraries("gauges")).map((l) => l.id), ["/acme/widgets"])
        assert.deepStrictEqual((yield* search.libraries("Farewells")).map((l) => l.id), ["/acme/greeter"])
        // every word of the name, not any: "gauges farewells" is about neither library
        assert.deepStrictEqual(yield* search.libraries("gauges farewells"), [])
        // a name that matches a library's name keeps to names: widgets' docs are not searched for "greeter"
        assert.deepStrictEqual((yield* search.libraries("greeter")).map((l) => l.id), ["/acme/greeter"])
        // outside the caller's access, not found this way either
        assert.deepStrictEqual(yield* search.libraries("gauges", undefined, { libraries: ["/acme/greeter"], sources: [] }), [])
      }))

    test("team settings: libraries outside them are neither listed nor answered (LibraryNotFound, like a missing one)", () =>
      Effect.gen(function*() {
        yield* indexed(source("/acme/greeter", "1.0.0"), greeterDocs)
        yield* indexed(source("/other/widgets", "1.0", "npm"), widgetsDocs)
        const search = yield* Search
        const acmeOnly = { libraries: ["/acme/*"], sources: [] }
        assert.deepStrictEqual((yield* search.libraries("widgets", undefined, acmeOnly)).map((l) => l.id), [])
        assert.deepStrictEqual((yield* search.libraries("greeter", undefined, acmeOnly)).map((l) => l.id), ["/acme/greeter"])
        const hidden = yield* Effect.flip(search.context({ libraryId: "/other/widgets", access: acmeOnly }))
        assert.strictEqual(hidden._tag, "LibraryNotFound")
        const npmOnly = { libraries: [], sources: ["npm" as const] }
        assert.deepStrictEqual((yield* search.libraries("widgets", undefined, npmOnly)).map((l) => l.id), ["/other/widgets"])
        assert.strictEqual((yield* Effect.flip(search.context({ libraryId: "/acme/greeter", access: npmOnly })))._tag, "LibraryNotFound")
        const exact = { libraries: ["/other/widgets"], sources: [] }
        assert.strictEqual(found(yield* search.context({ libraryId: "/other/widgets", access: exact })).libraryId, "/other/widgets/1.0")
      }))
  })
