/**
 * `normalize`: values Postgres cannot store are settled per record, so one record never fails the batch
 * of up to 2,000 it travels in (a NUL in a title, a date before 4713 BC each failed theirs).
 */
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import { normalize } from "../../src/Normalize.ts"
import { record } from "../contracts/fixtures.ts"

describe("normalize", () => {
  it("a NUL in a text field counts as whitespace", () => {
    const normalized = Result.getOrThrow(normalize("feed", record({ title: "Audi\u0000A4", location: "\u0000Kraków\u0000" })))
    assert.strictEqual(normalized.row.title, "Audi A4")
    assert.strictEqual(normalized.row.location, "Kraków")
    assert.notInclude(JSON.stringify(normalized.row), "\\u0000")
  })

  it("a date outside the years 1 to 9999 rejects the record, naming the field", () => {
    for (const [field, value] of [["updatedAt", "-010000-01-01T00:00:00Z"], ["expiresAt", "+010000-01-01T00:00:00Z"], ["updatedAt", -8.64e15]] as const) {
      const refused = normalize("feed", record({ [field]: value }))
      assert.isTrue(Result.isFailure(refused), `${field} ${value}`)
      assert.strictEqual(Result.isFailure(refused) && refused.failure, `${field} is not a date between the years 1 and 9999`)
    }
    assert.isTrue(Result.isFailure(normalize("feed", record({ updatedAt: "yesterday" }))))
    assert.strictEqual(
      Result.getOrThrow(normalize("feed", record({ updatedAt: "0001-01-01T00:00:00Z", expiresAt: "9999-12-31T23:59:59Z" }))).row.updated_at,
      -62_135_596_800_000
    )
  })
})
