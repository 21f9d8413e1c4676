/** What `svc` prints of text it did not write (src/Terminal.ts): no control character reaches the terminal raw. */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { printable, printableJson } from "../../src/Terminal.ts"

const controls = /[\u0000-\u001f\u007f-\u009f]/

describe("printable", () => {
  it("escapes C0, DEL and C1 controls and leaves the rest as it is", () => {
    assert.strictEqual(printable("red \u001b[31m, CSI \u009b2J, bell \u0007, tab\t"), "red \\u001b[31m, CSI \\u009b2J, bell \\u0007, tab\\u0009")
    assert.strictEqual(printable("Grüße — 日本語"), "Grüße — 日本語")
  })
})

describe("printableJson", () => {
  it("is JSON a reader parses to the same value, with no control character but its own line breaks", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 3 }), fc.string({ unit: "binary" }), (value, text) => {
        const document = { value, text, c1: "\u009b31m\u007f" }
        const printed = printableJson(document)
        assert.deepStrictEqual(JSON.parse(printed), JSON.parse(JSON.stringify(document)))
        assert.notMatch(printed.replaceAll("\n", ""), controls)
      })
    )
  })
})
