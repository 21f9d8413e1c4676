import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { brandedId } from "../../src/Ids.ts"

const OfferId = brandedId("OfferId", { pattern: /^[a-z0-9-]+:.+$/, example: "mock:123" })

describe("brandedId", () => {
  it.effect("accepts a well-formed id and names the expected shape otherwise", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* Schema.decodeUnknownEffect(OfferId)("mock:123"), "mock:123")
      const error = yield* Effect.flip(Schema.decodeUnknownEffect(OfferId)("no-namespace"))
      assert.include(String(error), `Expected a OfferId like "mock:123"`)
      const empty = yield* Effect.flip(Schema.decodeUnknownEffect(OfferId)(""))
      assert.include(String(empty), "OfferId must not be empty")
    }))
})
