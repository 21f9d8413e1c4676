/**
 * The `SigningKeys` contract, written once: `SigningKeys.layerMemory` (test/unit/Stores.test.ts)
 * and `SigningKeys.layer` on Postgres (test/SigningKeys.contract.test.ts): created once on first
 * read, stable, rotated (next becomes current, a new next).
 */
import { assert, describe } from "@effect/vitest"
import { Effect } from "effect"
import { SigningKeys } from "../../src/store/SigningKeys.ts"
import { storeTest, type StoresLayer } from "./fixtures.ts"

export const signingKeysContract = (name: string, layer: StoresLayer): void => {
  const test = storeTest(layer)

  describe(`SigningKeys contract (${name})`, () => {
    test(
      "the first read creates two distinct keys; later reads (even concurrent) give the same",
      Effect.gen(function*() {
        const keys = yield* SigningKeys
        const reads = yield* Effect.all([keys.get, keys.get, keys.get], { concurrency: "unbounded" })
        const first = reads[0]!
        for (const read of reads) assert.deepStrictEqual(read, first)
        assert.match(first.current, /^sig_[A-Za-z0-9_-]{43}$/)
        assert.match(first.next, /^sig_[A-Za-z0-9_-]{43}$/)
        assert.notStrictEqual(first.current, first.next)
        assert.deepStrictEqual(yield* keys.get, first)
      })
    )

    test(
      "rotate: the next key becomes current and a new next is made, before any read too",
      Effect.gen(function*() {
        const keys = yield* SigningKeys
        const rotatedFirst = yield* keys.rotate
        assert.notStrictEqual(rotatedFirst.current, rotatedFirst.next)
        const before = yield* keys.get
        assert.deepStrictEqual(before, rotatedFirst)
        const after = yield* keys.rotate
        assert.strictEqual(after.current, before.next)
        assert.notStrictEqual(after.next, before.next)
        assert.notStrictEqual(after.next, before.current)
        assert.deepStrictEqual(yield* keys.get, after)
      })
    )
  })
}
