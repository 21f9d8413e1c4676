/** The words of free-text search: one splitting for documents and queries; the filters' key. */
import { assert, describe, it } from "@effect/vitest"
import * as v8 from "node:v8"
import * as vm from "node:vm"
import { filterKeyList } from "../../src/OfferAnswers.ts"
import { filterKey, searchDocument, searchWords, toPrefixQuery } from "../../src/SearchWords.ts"

describe("search words", () => {
  it("folds case and accents, also letters NFKD leaves whole, and splits at anything but letters and digits", () => {
    assert.deepStrictEqual(searchWords("Škoda Octavia 1.6 TDI"), ["skoda", "octavia", "1", "6", "tdi"])
    assert.deepStrictEqual(searchWords("Audi e-tron, Łódź; Søren's Straße"), ["audi", "e", "tron", "lodz", "soren", "s", "strasse"])
    assert.deepStrictEqual(searchWords("  --  "), [])
  })

  it("a document is its distinct words as tsvector text; words over 200 characters are left out", () => {
    assert.strictEqual(searchDocument("BMW 320d BMW bmw Touring"), "bmw 320d touring")
    assert.strictEqual(searchDocument(`Fiat ${"x".repeat(201)} ${"y".repeat(200)}`), `fiat ${"y".repeat(200)}`)
  })

  it("a query is a prefix match of each word (at most 16), with nothing left for tsquery syntax", () => {
    assert.strictEqual(toPrefixQuery("Merc  Benz"), "merc:* & benz:*")
    assert.strictEqual(toPrefixQuery("') | ! & :*"), "")
    assert.strictEqual(toPrefixQuery(Array.from({ length: 20 }, (_, i) => `w${i}`).join(" "))?.split(" & ").length, 16)
  })

  it("a query word longer than any document word matches nothing (null), and never reaches Postgres", () => {
    assert.strictEqual(toPrefixQuery(`fiat ${"x".repeat(201)}`), null)
    assert.strictEqual(toPrefixQuery(`fiat ${"x".repeat(200)}`), `fiat:* & ${"x".repeat(200)}:*`)
    // folding lengthens a word: NFKD makes six letters of U+3316 (キロメートル)
    assert.strictEqual(toPrefixQuery("\u3316".repeat(33))?.length, 198 + 2)
    assert.strictEqual(toPrefixQuery("\u3316".repeat(34)), null)
  })

  it("a filter key: case, accents and punctuation between words do not count; one key per lower-cased value", () => {
    for (const [text, key] of [
      ["Škoda", "skoda"],
      ["ŠKODA", "skoda"],
      ["Citroën", "citroen"],
      [" Mercedes-Benz ", "mercedes benz"],
      ["mercedes  benz", "mercedes benz"],
      ["Śląskie", "slaskie"],
      ["Île-de-France", "ile de france"],
      ["C4 Cactus", "c4 cactus"],
      ["Łódzkie", "lodzkie"],
      ["-", ""]
    ] as const) assert.strictEqual(filterKey(text), key, text)
    // what the de-duplication key relies on: values equal in lower case have one key
    for (const text of ["İstanbul", "ΟΔΟΣ", "Straße", "K\u212a"]) assert.strictEqual(filterKey(text), filterKey(text.toLowerCase()), text)
  })
})

describe("the remembered filter keys (kept across requests, so bounded)", () => {
  it("hold copies of the values: 19,000 list filters with a new 200-character item each keep well under 50 MB", () => {
    // the isolate's gc, for a heap measured after collection (the flag is a no-op when already set)
    v8.setFlagsFromString("--expose-gc")
    const gc = vm.runInNewContext("gc") as () => void
    const heap = () => (gc(), process.memoryUsage().heapUsed)
    const fixed = Array.from({ length: 49 }, (_, i) => `f${i}`.padEnd(200, "x")).join(",")
    const before = heap()
    // an item of a 10 KiB fuelTypes list, as the route splits it: each kept value held the whole list (188 MB)
    for (let i = 0; i < 19_000; i++) filterKeyList(`${fixed},${`n${i}`.padEnd(200, "y")}`)
    const grown = (heap() - before) / 1024 / 1024
    assert.isBelow(grown, 50, `${grown.toFixed(1)} MB kept`)
  })
})
