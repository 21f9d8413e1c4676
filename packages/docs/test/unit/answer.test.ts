/** An answer's entries (src/ranking/Answer.ts `byFile`): one per file, its sections best first, within the budget. */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { byFile } from "../../src/ranking/Answer.ts"
import { type Snippet, tokensOf } from "../../src/Splitter.ts"

const section = (sourcePath: string, title: string, body: string, kind: Snippet["kind"] = "prose"): Snippet => {
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
  return { ...snippet, tokens: tokensOf(snippet) }
}

describe("byFile", () => {
  it("makes one entry per file, files in the order of their best section, a file's sections best first", () => {
    const picked = [
      section("retries.md", "Backoff", "Retries wait longer each time."),
      section("hooks.md", "beforeRetry", "Runs before each retry."),
      section("retries.md", "Limit", "At most two retries by default.", "code"),
      section("hooks.md", "afterResponse", "Runs after each response.")
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

  it("leaves a file's only section as it is, without a list", () => {
    const alone = section("faq.md", "Why", "Because the answer is short.", "code")
    assert.deepStrictEqual(byFile([alone]), [alone])
    assert.deepStrictEqual(byFile([]), [])
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
})
