/** The plain view of an answer's sections (src/ranking/PlainView.ts): docs-mcp-server's formula, fused with the answer's order. */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as v8 from "node:v8"
import * as vm from "node:vm"
import { answerPage, type Ranked } from "../../src/ranking/Answer.ts"
import {
  FUSION_K,
  fuseWithView,
  REORDERED_FILES,
  stemCacheSize,
  viewPhrases,
  viewScores,
  viewTokens,
  VIEW_WEIGHT
} from "../../src/ranking/PlainView.ts"
import { tokensOf } from "../../src/Splitter.ts"

const viewed = (sourcePath: string, title: string, body: string) => ({
  title,
  headingPath: [title],
  description: "",
  body,
  sourcePath
})

describe("viewTokens", () => {
  it("reads runs of letters and digits, folds case and accents, and stems as Porter does", () => {
    assert.deepStrictEqual(viewTokens("Connections hang; keep-alive STAYS open (HTTP/2)"), [
      "connect", "hang", "keep", "aliv", "stai", "open", "http", "2"
    ])
    assert.deepStrictEqual(viewTokens("Réponse déjà envoyée"), viewTokens("Reponse deja envoyee"))
    assert.deepStrictEqual(viewTokens("日本語 の ドキュメント"), ["日本語", "の", "ドキュメント"])
    assert.deepStrictEqual(viewTokens("  --> ``` "), [])
  })

  it("keeps the stop words the ranking drops: they are what the view adds", () => {
    assert.deepStrictEqual(viewTokens("only before off own"), ["onli", "befor", "off", "own"])
  })
})

describe("the stem cache (kept across requests, so bounded)", () => {
  it("100,000 + 1,000 distinct words leave at most 100,000 kept, and a long word is never kept", () => {
    for (let i = 0; i < 101_000; i++) viewTokens(`w${i.toString(36)}ing`)
    assert.isAtMost(stemCacheSize().words, 100_000)
    // a question may be one 2,000-character word: stemmed, not kept
    for (let i = 0; i < 200; i++) viewPhrases(`${i.toString(36)}${"a".repeat(1_990)}`)
    assert.isAtMost(stemCacheSize().longest, 40)
    // and is stemmed all the same
    assert.deepStrictEqual(viewTokens(`${"x".repeat(50)}connections`), [`${"x".repeat(50)}connect`])
  })

  it("keeps copies of the words: 20,000 questions of 2,000 characters, a new word each, keep well under 20 MB", () => {
    v8.setFlagsFromString("--expose-gc")
    const gc = vm.runInNewContext("gc") as () => void
    const heap = () => (gc(), process.memoryUsage().heapUsed)
    const before = heap()
    // a word as matched is a cut of the lowercased question, and kept it alive (38 MB)
    for (let i = 0; i < 20_000; i++) viewPhrases(`q${i.toString(36).padStart(12, "a")} ${"the ".repeat(495)}`)
    const grown = (heap() - before) / 1024 / 1024
    assert.isBelow(grown, 20, `${grown.toFixed(1)} MB kept`)
    // ~3 s of CPU alone; several times that on two busy cores (it timed out at 10 s there)
  }, 60_000)
})

describe("viewPhrases", () => {
  it("asks the whole question as a phrase, then each word", () => {
    assert.deepStrictEqual(viewPhrases("close hangs"), [["close", "hang"], ["close"], ["hang"]])
    assert.deepStrictEqual(viewPhrases("keepAliveTimeout"), [["keepalivetimeout"]])
    // a word of punctuation alone asks nothing; a dotted name is a phrase of its parts
    assert.deepStrictEqual(viewPhrases("reply.header ?"), [["repli", "header"], ["repli", "header"]])
    assert.deepStrictEqual(viewPhrases("  "), [])
  })
})

describe("viewScores", () => {
  it("scores a section by the question's words it holds, a rare word above a common one", () => {
    const sections = [
      viewed("a.md", "Routes", "Declare a route with a handler."),
      viewed("b.md", "Hooks", "The onRoute hook runs for every route as it is registered."),
      viewed("c.md", "Logging", "Nothing about the question here.")
    ]
    const [routes, hooks, logging] = viewScores("change every route as it is registered", sections)
    assert.isAbove(hooks!, routes!)
    assert.isAbove(routes!, 0)
    assert.strictEqual(logging, 0)
  })

  it("weighs the file's path: of two sections saying the same, the one whose path names the word wins", () => {
    const [plain, named] = viewScores("redaction", [
      viewed("api.md", "Options", "Redaction hides keys."),
      viewed("redaction.md", "Options", "Redaction hides keys.")
    ])
    assert.isAbove(named!, plain!)
  })

  it("scores nothing for a question without words", () => {
    assert.deepStrictEqual(viewScores("?!", [viewed("a.md", "A", "text")]), [0])
  })
})

describe("fuseWithView", () => {
  const entries = [{ sourcePath: "first.md" }, { sourcePath: "second.md" }, { sourcePath: "third.md" }]

  it("moves down the answer's first file when it holds none of the question and the others do", () => {
    const sections = [
      viewed("first.md", "Setup", "Install the package."),
      viewed("second.md", "Shutdown", "close() waits for keep-alive connections."),
      viewed("third.md", "Timeouts", "A keep-alive timeout.")
    ]
    // first.md: 1 / 6 alone; second.md: 1 / 7 + VIEW_WEIGHT / 6, and third.md: 1 / 8 + VIEW_WEIGHT / 7, are more
    assert.isAbove(1 / (FUSION_K + 3) + VIEW_WEIGHT / (FUSION_K + 2), 1 / (FUSION_K + 1))
    assert.deepStrictEqual(
      fuseWithView("close hangs on keep-alive connections", sections, entries).map((entry) => entry.sourcePath),
      ["second.md", "third.md", "first.md"]
    )
  })

  it("keeps the ranking's order where the view agrees, or disagrees only by a place", () => {
    const sections = [
      viewed("first.md", "Keep-alive", "keep-alive connections"),
      viewed("second.md", "Close", "close() closes keep-alive connections and hangs"),
      viewed("third.md", "Other", "keep-alive")
    ]
    const order = fuseWithView("close hangs on keep-alive connections", sections, entries).map((entry) => entry.sourcePath)
    assert.deepStrictEqual(order, ["first.md", "second.md", "third.md"])
  })

  it("re-orders only the ranking's first five files: a sixth the view prefers stays sixth", () => {
    const files = ["a.md", "b.md", "c.md", "d.md", "e.md", "f.md", "g.md"].map((sourcePath) => ({ sourcePath }))
    const sections = files.map(({ sourcePath }) =>
      sourcePath === "f.md" || sourcePath === "e.md"
        ? viewed(sourcePath, "Shutdown", "close() hangs while keep-alive connections stay open")
        : viewed(sourcePath, "Other", "Nothing of the question here.")
    )
    const order = fuseWithView("close hangs on keep-alive connections", sections, files).map((entry) => entry.sourcePath)
    assert.strictEqual(REORDERED_FILES, 5)
    // e.md, fifth, is the view's first among the five and rises; f.md, sixth, does not enter them
    assert.deepStrictEqual(order.slice(5), ["f.md", "g.md"])
    assert.strictEqual(order[0], "e.md")
  })

  it("changes only the order: the same entries, each once, and one entry or none as they are", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom("a.md", "b.md", "c.md", "d.md"), fc.string({ maxLength: 80 })), { maxLength: 8 }),
        fc.string({ maxLength: 40 }),
        (parts, question) => {
          const files = [...new Set(parts.map(([file]) => file))].map((sourcePath) => ({ sourcePath }))
          const fused = fuseWithView(question, parts.map(([file, body]) => viewed(file, "T", body)), files)
          assert.sameMembers(fused.map((entry) => entry.sourcePath), files.map((entry) => entry.sourcePath))
          assert.strictEqual(fused.length, files.length)
          if (files.length < 2) assert.strictEqual(fused, files)
        }
      )
    )
  })
})

describe("answerPage with the question", () => {
  const ranked = (sourcePath: string, title: string, body: string, ordinal: number, score: number): Ranked => {
    const snippet = { kind: "prose" as const, title, headingPath: [title], description: "", language: null, body, sourcePath }
    return { ...snippet, tokens: tokensOf(snippet), ordinal, score }
  }
  const candidates = [
    ranked("setup.md", "Setup", "Install the package and start the server.", 0, 10),
    ranked("shutdown.md", "Shutdown", "close() only returns once every keep-alive connection is closed.", 1, 9)
  ]

  it("orders the entries by the ranking fused with the view, holding the same sections", () => {
    const plain = answerPage(candidates, 5000)
    const asked = answerPage(candidates, 5000, 1, 0, "why does close only return after keep-alive connections end")
    assert.deepStrictEqual(plain.picked.map((entry) => entry.sourcePath), ["setup.md", "shutdown.md"])
    assert.deepStrictEqual(asked.picked.map((entry) => entry.sourcePath), ["shutdown.md", "setup.md"])
    assert.strictEqual(asked.used, plain.used)
  })
})
