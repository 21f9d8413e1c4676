/** An answer's entries (src/ranking/Answer.ts `byFile`): one per file, its sections best first, within the budget. */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { answerPage, byFile, EVIDENCE, type Ranked, type Section } from "../../src/ranking/Answer.ts"
import { type Snippet, tokensOf } from "../../src/Splitter.ts"

const section = (sourcePath: string, title: string, body: string, kind: Snippet["kind"] = "prose", score = 1): Section => {
  const snippet = {
    kind,
    title,
    headingPath: ["Guide", title],
    description: kind === "code" ? `How to ${title.toLowerCase()}:` : "",
    language: kind === "code" ? "ts" : null,
    body,
    sourcePath,
    sourceUrl: `https://example.invalid/${sourcePath}#${title}`
  }
  return { ...snippet, tokens: tokensOf(snippet), score }
}
const withoutScore = ({ score: _, ...snippet }: Section): Snippet => snippet

describe("byFile", () => {
  it("makes one entry per file, files in the order of their best section, a file's sections best first", () => {
    const picked = [
      section("retries.md", "Backoff", "Retries wait longer each time.", "prose", 10),
      section("hooks.md", "beforeRetry", "Runs before each retry.", "prose", 9),
      section("retries.md", "Limit", "At most two retries by default.", "code", 5),
      section("hooks.md", "afterResponse", "Runs after each response.", "prose", 4)
    ]
    const entries = byFile(picked)
    assert.deepStrictEqual(entries.map((entry) => entry.sourcePath), ["retries.md", "hooks.md"])
    const [retries] = entries
    assert.deepStrictEqual(retries!.sections, [
      { title: "Backoff", headingPath: ["Guide", "Backoff"], sourceUrl: "https://example.invalid/retries.md#Backoff" },
      { title: "Limit", headingPath: ["Guide", "Limit"], sourceUrl: "https://example.invalid/retries.md#Limit" }
    ])
    // the first section as it reads alone (its title and Source: line are the entry's), the next under its own
    assert.deepStrictEqual([retries!.kind, retries!.title, retries!.sourceUrl], ["prose", "Backoff", "https://example.invalid/retries.md#Backoff"])
    assert.strictEqual(
      retries!.body,
      "Retries wait longer each time.\n\n#### Limit\n\nSource: https://example.invalid/retries.md#Limit\n\n" +
        "How to limit:\n\n```ts\nAt most two retries by default.\n```"
    )
    assert.strictEqual(retries!.tokens, tokensOf(retries!))
  })

  it("writes a next section's Source line only where it differs from the entry's (a folder's file path)", () => {
    const [entry] = byFile([
      { ...section("guide.md", "Install", "npm install guide"), sourceUrl: "/srv/docs/guide.md" },
      { ...section("guide.md", "Upgrade", "npm update guide"), sourceUrl: "/srv/docs/guide.md" }
    ])
    assert.strictEqual(entry!.body, "npm install guide\n\n#### Upgrade\n\nnpm update guide")
    assert.strictEqual(entry!.sourceUrl, "/srv/docs/guide.md")
  })

  it("leaves a file's only section as it is, without a list", () => {
    const alone = section("faq.md", "Why", "Because the answer is short.", "code")
    assert.deepStrictEqual(byFile([alone]), [withoutScore(alone)])
    assert.deepStrictEqual(byFile([]), [])
  })

  it("ranks a file that answers in several places above one whose single section is a little better", () => {
    const picked = [
      section("options.md", "retry", "The retry option.", "prose", 10),
      section("guide.md", "Retrying", "Retrying requests.", "prose", 9),
      section("guide.md", "Retry limits", "How many retries.", "prose", 9)
    ]
    // guide.md: 9 + 0.1 * 9 = 9.9 < 10: a share of the other sections, not their sum
    assert.strictEqual(EVIDENCE, 0.1)
    assert.deepStrictEqual(byFile(picked).map((entry) => entry.sourcePath), ["options.md", "guide.md"])
    // 9 + 0.1 * 18 = 10.8 > 10
    const more = [...picked, section("guide.md", "Retry hooks", "Hooks around retries.", "prose", 9)]
    assert.deepStrictEqual(byFile(more).map((entry) => entry.sourcePath), ["guide.md", "options.md"])
  })

  it("never costs more tokens than its sections apart, so a budget the sections fit holds", () => {
    const arbitrarySection = fc.record({
      file: fc.constantFrom("a.md", "b.md", "docs/c.md"),
      title: fc.string({ minLength: 1, maxLength: 40 }),
      body: fc.string({ maxLength: 600 }),
      kind: fc.constantFrom<Snippet["kind"]>("prose", "code")
    }).map(({ body, file, kind, title }) => section(file, title, body, kind))
    fc.assert(fc.property(fc.array(arbitrarySection, { maxLength: 12 }), (picked) => {
      const entries = byFile(picked)
      const apart = picked.reduce((sum, s) => sum + s.tokens, 0)
      const together = entries.reduce((sum, e) => sum + e.tokens, 0)
      assert.isAtMost(together, apart)
      assert.strictEqual(entries.reduce((sum, e) => sum + (e.sections?.length ?? 1), 0), picked.length)
    }))
  })

  it("an answer holds more sections than their sizes apart allow, and never more tokens than the budget", () => {
    const arbitraryRanked = fc.record({
      file: fc.constantFrom("a.md", "b.md", "docs/c.md", "d.md"),
      heading: fc.constantFrom("Install", "Usage", "Options", "Errors", "Hooks", "FAQ"),
      body: fc.string({ minLength: 1, maxLength: 900 }),
      kind: fc.constantFrom<Snippet["kind"]>("prose", "code"),
      anchored: fc.boolean()
    }).map(({ anchored, body, file, heading, kind }): Omit<Ranked, "ordinal" | "score"> => {
      const snippet = {
        ...section(file, heading, body, kind),
        sourceUrl: anchored ? `https://example.invalid/${file}#L${body.length}` : `/srv/${file}`
      }
      const { score: _, ...rest } = { ...snippet, tokens: tokensOf(snippet) }
      return rest
    })
    fc.assert(fc.property(fc.array(arbitraryRanked, { maxLength: 40 }), fc.integer({ min: 100, max: 3000 }), (parts, budget) => {
      const ranked = parts.map((part, i) => ({ ...part, ordinal: i, score: parts.length - i }))
      for (const page of [1, 2]) {
        const { picked, used } = answerPage(ranked, budget, page)
        assert.isAtMost(used, budget)
        assert.strictEqual(used, picked.reduce((sum, entry) => sum + entry.tokens, 0))
        for (const entry of picked) assert.strictEqual(entry.tokens, tokensOf(entry))
      }
    }), { numRuns: 300 })
    // three sections of one file, each 40 tokens apart: a budget of 100 holds two apart, all three as sent
    const one = (title: string, ordinal: number): Ranked => {
      // the same length for each title, and different text (the same text twice is answered once)
      const snippet = { ...section("guide.md", title, `${title} ${"x".repeat(114 - title.length)}`), sourceUrl: "/srv/guide.md" }
      const { score: _, ...rest } = snippet
      return { ...rest, tokens: tokensOf(rest), ordinal, score: 10 - ordinal }
    }
    const three = [one("First", 0), one("Second", 1), one("Third", 2)]
    assert.deepStrictEqual(three.map((s) => s.tokens), [three[0]!.tokens, three[0]!.tokens, three[0]!.tokens])
    const budget = three[0]!.tokens * 2 + 20
    const { picked, used } = answerPage(three, budget)
    assert.deepStrictEqual(picked[0]!.sections?.map((s) => s.title), ["First", "Second", "Third"])
    assert.isAtMost(used, budget)
  })

  it("holds a text once across pages: a copy under another file name is left out of page 2 too", () => {
    const at = (sourcePath: string, title: string, body: string, ordinal: number): Ranked => {
      const { score: _, ...snippet } = section(sourcePath, title, body)
      return { ...snippet, ordinal, score: 10 - ordinal }
    }
    const rules = "Run the formatter before every commit; the linter fails on unformatted files."
    const ranked = [at("AGENTS.md", "Rules", rules, 0), at("CLAUDE.md", "Rules", rules.replace(" ", "\n"), 1), at("docs/lint.md", "Lint", "The linter reads lint.json.", 2)]
    // each fits a page alone: the copy, as big as the original, would be page 2 if it were new
    assert.strictEqual(ranked[1]!.tokens, ranked[0]!.tokens)
    const budget = ranked[0]!.tokens + 5
    const pages = [1, 2, 3].map((page) => answerPage(ranked, budget, page).picked.map((entry) => entry.sourcePath))
    assert.deepStrictEqual(pages, [["AGENTS.md"], ["docs/lint.md"], []])
  })

  it("a section larger than a whole page is cut to the page where it comes first, so every section is on some page", () => {
    const at = (sourcePath: string, title: string, body: string, ordinal: number, kind: Snippet["kind"] = "prose"): Ranked => {
      const { score: _, ...snippet } = section(sourcePath, title, body, kind)
      return { ...snippet, ordinal, score: 10 - ordinal }
    }
    const code = Array.from({ length: 80 }, (_, i) => `const step${i} = Effect.retry(task, Schedule.exponential("${i} millis"))`).join("\n")
    const ranked = [
      at("retry.ts", "Retrying", code, 0, "code"),
      at("intro.md", "Intro", "Schedules describe repetition.", 1),
      at("guide.md", "Guide", "word ".repeat(600), 2)
    ]
    const budget = 100
    const pages = [1, 2, 3, 4].map((page) => answerPage(ranked, budget, page))
    assert.deepStrictEqual(pages.map((page) => page.picked.map((entry) => entry.sourcePath)), [["retry.ts"], ["intro.md"], ["guide.md"], []])
    for (const page of pages) assert.isAtMost(page.used, budget)
    const [cut] = pages[0]!.picked
    assert.match(cut!.body, /^How to retrying:\n\n```ts\nconst step0 = Effect\.retry[^\n]*\n(const step\d+ [^\n]*\n)*```\n\n\(Cut/)
    assert.match(cut!.body, /\n```\n\n\(Cut at this page's budget of 100 tokens: ask with tokens=\d+ or more for the whole section\.\)$/)
    // at the default budget nothing is cut
    assert.notInclude(answerPage(ranked, 5000).picked.map((entry) => entry.body).join(""), "Cut at this page's budget")
  })
})
