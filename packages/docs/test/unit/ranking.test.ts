/** The ranking's pure parts: the question's words (Search.questionWords). */
import { assert, describe, it } from "@effect/vitest"
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
