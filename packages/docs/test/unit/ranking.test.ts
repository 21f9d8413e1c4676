/** The ranking's pure parts: the question's words (Search.questionWords) and the identifiers' (ranking/Identifiers.ts). */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { identifierWords, splitIdentifier } from "../../src/ranking/Identifiers.ts"
import { questionWords } from "../../src/Search.ts"

describe("questionWords", () => {
  it("lower-cases, keeps each word once and leaves the ignored words out", () => {
    assert.deepStrictEqual(questionWords("Run the Effect tests, run them", ["effect"]), ["run", "the", "tests", "them"])
  })

  it("also takes a version number written apart joined, as identifiers name it", () => {
    assert.deepStrictEqual(questionWords("enable HTTP/2 and utf-8"), ["enable", "http", "2", "and", "utf", "8", "http2", "utf8"])
    // only a word then a number: a path or two words stay apart
    assert.deepStrictEqual(questionWords("read a/b and x-y 2-3"), ["read", "a", "b", "and", "x", "y", "2", "3"])
  })

  it("also takes the parts of an identifier, as a snippet's headings are indexed (ranking/Identifiers.ts)", () => {
    assert.deepStrictEqual(questionWords("cancel it with an AbortSignal or keepAliveTimeout"), [
      "cancel", "it", "with", "an", "abortsignal", "or", "keepalivetimeout", "abort", "signal", "keep", "alive", "timeout"
    ])
    assert.deepStrictEqual(questionWords("FST_ERR_NOT_FOUND in Effect.gen", ["effect"]), [
      "fst", "err", "not", "found", "in", "gen"
    ])
  })
})

describe("identifierWords", () => {
  /** The single regular expression it replaced: the same identifiers, read from every position again. */
  const BACKTRACKING = /[\p{L}\p{N}]+(?:[_.-]+[\p{L}\p{N}]+)+|[\p{L}\p{N}]*\p{Ll}\p{Lu}[\p{L}\p{N}]*|\p{Lu}{2,}\p{Ll}[\p{L}\p{N}]*/gu
  const reference = (text: string) =>
    [...text.slice(0, 2000).matchAll(BACKTRACKING)].flatMap((match) => splitIdentifier(match[0])).join(" ")

  it("finds the identifiers of titles and headings, split into their words", () => {
    assert.strictEqual(identifierWords("maxRetryAfter and HTTPError, not plain words"), "max retry after http error")
    assert.strictEqual(identifierWords("UND_ERR_HEADERS_TIMEOUT pino.destination 2XXStatus"), "und err headers timeout pino destination xx status")
  })

  it("finds what the single regular expression found, on any text of letters, capitals, digits and separators", () => {
    const character = fc.constantFrom("a", "B", "é", "É", "σ", "Σ", "𝐀", "1", "_", ".", "-", " ", ",")
    fc.assert(
      fc.property(fc.array(character, { maxLength: 40 }).map((chars) => chars.join("")), (text) => {
        assert.strictEqual(identifierWords(text), reference(text), JSON.stringify(text))
      }),
      { numRuns: 5_000 }
    )
  })
})
