/**
 * `JsonBody.charsetProblem`: the suite's one rule for the charset of a JSON body (RFC 8259 §8.1: JSON
 * between systems is UTF-8). A `Content-Type` naming another charset is refused, naming it; none, or
 * UTF-8 (its alias `utf8`) or US-ASCII (a subset of UTF-8), in any case, quoted or not, is read.
 */
import { assert, describe, it } from "@effect/vitest"
import { charsetProblem } from "../../src/JsonBody.ts"

describe("JsonBody.charsetProblem", () => {
  it("reads a body with no Content-Type, no charset, or a UTF-8 one (any case, quoted, utf8, US-ASCII)", () => {
    for (
      const type of [
        undefined,
        null,
        "",
        "application/json",
        "application/json; charset=utf-8",
        "application/json;charset=UTF-8",
        "Application/JSON ; CHARSET=\"Utf-8\" ",
        "application/json; charset=utf8",
        "application/json; charset=us-ascii",
        "application/json; charset=ASCII",
        "application/json; boundary=x",
        // a quoted value of another parameter is not a charset
        "application/json; note=\"a; charset=utf-16\"; charset=utf-8"
      ]
    ) {
      assert.isUndefined(charsetProblem(type), String(type))
    }
  })

  it("refuses another charset naming it as sent, and says what to send", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["application/json; charset=utf-16", "utf-16"],
      ["application/json; charset=UTF-16LE", "UTF-16LE"],
      ["application/json; charset=\"iso-8859-1\"", "iso-8859-1"],
      ["application/json;charset=Shift_JIS;x=1", "Shift_JIS"],
      ["application/json; Charset = windows-1252", "windows-1252"],
      // a second charset, which would be read by whichever parameter a reader takes
      ["application/json; charset=utf-8; charset=utf-16", "utf-16"],
      ["application/json; charset=", ""],
      ["application/json; charset=\"utf\\-32\"", "utf-32"]
    ]
    for (const [type, named] of cases) {
      assert.strictEqual(
        charsetProblem(type),
        `Content-Type charset ${JSON.stringify(named)} is not supported: send the JSON body as UTF-8 (charset=utf-8, or no charset; RFC 8259)`,
        type
      )
    }
    // a long value is cut
    assert.isBelow(charsetProblem(`application/json; charset=${"x".repeat(5000)}`)!.length, 200)
  })
})
