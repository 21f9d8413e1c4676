/**
 * The contract of `ApiKeys`, run against `layerMemory` (test/unit) and Postgres
 * (test/ApiKeys.contract.test.ts): create, authenticate, revoke (by prefix, id or key; twice is
 * fine), a revoked, malformed or unknown key is refused, settings are checked and normalised, and
 * the listing never shows a secret. Each test builds a fresh layer.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, type Layer, Option } from "effect"
import { ApiKeys, generateKey, hashKey, isWellFormedKey, prefixOf } from "../../src/ApiKeys.ts"

export const apiKeysContract = (name: string, layer: Layer.Layer<ApiKeys, unknown>) =>
  describe(`ApiKeys contract (${name})`, () => {
    const test = (title: string, body: () => Effect.Effect<void, unknown, ApiKeys>) =>
      it.effect(title, () => Effect.provide(body(), layer))

    test("a created key authenticates as its record; settings are normalised", () =>
      Effect.gen(function*() {
        const keys = yield* ApiKeys
        const { key, record } = yield* keys.create({
          name: " ci ",
          team: "acme",
          libraries: ["/Acme/*", "/vercel/next.js", "/vercel/next.js", " "],
          sources: ["NPM" as "npm", "folder"] // as the CLI passes them: lower-cased here
        })
        assert.isTrue(isWellFormedKey(key))
        assert.strictEqual(record.prefix, prefixOf(key))
        assert.deepStrictEqual([record.name, record.team, record.revokedAt], ["ci", "acme", null])
        assert.deepStrictEqual(record.settings, { libraries: ["/acme/*", "/vercel/next.js"], sources: ["npm", "folder"] })
        const found = yield* keys.authenticate(key)
        assert.isTrue(Option.isSome(found))
        assert.deepStrictEqual(Option.getOrThrow(found).id, record.id)
        assert.deepStrictEqual(Option.getOrThrow(found).settings, record.settings)
        const plain = yield* keys.create()
        assert.deepStrictEqual([plain.record.name, plain.record.team, plain.record.settings], ["", null, { libraries: [], sources: [] }])
      }))

    test("a malformed or unknown key is refused", () =>
      Effect.gen(function*() {
        const keys = yield* ApiKeys
        const { key } = yield* keys.create({ name: "real" })
        for (const wrong of ["", "svcsk_", "svcsk_short", key.slice(0, -1), `${key}x`, key.replace("svcsk_", "sk_"), generateKey()]) {
          assert.isTrue(Option.isNone(yield* keys.authenticate(wrong)), wrong)
        }
      }))

    test("revoke by prefix, id or the key itself; a revoked key is refused; twice keeps the first time", () =>
      Effect.gen(function*() {
        const keys = yield* ApiKeys
        const byPrefix = yield* keys.create({ name: "a" })
        const byId = yield* keys.create({ name: "b" })
        const byKey = yield* keys.create({ name: "c" })
        const revoked = yield* keys.revoke(byPrefix.record.prefix)
        assert.strictEqual(revoked.id, byPrefix.record.id)
        assert.instanceOf(revoked.revokedAt, Date)
        assert.isTrue(Option.isNone(yield* keys.authenticate(byPrefix.key)))
        assert.isTrue(Option.isSome(yield* keys.authenticate(byId.key)))
        const again = yield* keys.revoke(byPrefix.record.prefix)
        assert.strictEqual(again.revokedAt?.getTime(), revoked.revokedAt?.getTime())
        assert.strictEqual((yield* keys.revoke(byId.record.id)).name, "b")
        assert.strictEqual((yield* keys.revoke(byKey.key)).name, "c")
        assert.isTrue(Option.isNone(yield* keys.authenticate(byId.key)))
        assert.isTrue(Option.isNone(yield* keys.authenticate(byKey.key)))
      }))

    test("revoking what does not exist is ApiKeyNotFound, never echoing a whole key", () =>
      Effect.gen(function*() {
        const keys = yield* ApiKeys
        const unknownKey = generateKey()
        const byKey = yield* Effect.flip(keys.revoke(unknownKey))
        assert.strictEqual(byKey._tag, "ApiKeyNotFound")
        assert.notInclude(byKey.message, unknownKey)
        assert.strictEqual((yield* Effect.flip(keys.revoke("svcsk_nothere1")))._tag, "ApiKeyNotFound")
        assert.strictEqual((yield* Effect.flip(keys.revoke("424242")))._tag, "ApiKeyNotFound")
        // nothing given says so (it printed "No API key  (…)")
        for (const blank of ["", "   "]) {
          const none = yield* Effect.flip(keys.revoke(blank))
          assert.strictEqual(none._tag, "ApiKeyNotFound")
          assert.strictEqual(none.message, "No API key given: name one by its id or its prefix (svc docs keys list shows them)")
        }
      }))

    test("bad settings are InvalidApiKeyOptions and create nothing", () =>
      Effect.gen(function*() {
        const keys = yield* ApiKeys
        assert.strictEqual((yield* Effect.flip(keys.create({ libraries: ["acme"] })))._tag, "InvalidApiKeyOptions")
        assert.strictEqual((yield* Effect.flip(keys.create({ sources: ["ftp" as never] })))._tag, "InvalidApiKeyOptions")
        // a name or team over 200 characters (a 100 KB name was printed whole by list)
        const long = yield* Effect.flip(keys.create({ name: "n".repeat(201) }))
        assert.deepInclude(long, { _tag: "InvalidApiKeyOptions", message: "The key's name is 201 characters long, more than 200" })
        assert.strictEqual((yield* Effect.flip(keys.create({ team: "t".repeat(1000) })))._tag, "InvalidApiKeyOptions")
        assert.deepStrictEqual(yield* keys.list, [])
        yield* keys.create({ name: "n".repeat(200) })
      }))

    test("the listing: every key newest first, revoked ones included, never a key or its hash", () =>
      Effect.gen(function*() {
        const keys = yield* ApiKeys
        const first = yield* keys.create({ name: "first" })
        const second = yield* keys.create({ name: "second" })
        yield* keys.revoke(first.record.prefix)
        const listed = yield* keys.list
        assert.deepStrictEqual(listed.map((record) => [record.name, record.revokedAt === null]), [["second", true], ["first", false]])
        const shown = JSON.stringify(listed)
        for (const { key } of [first, second]) {
          assert.notInclude(shown, key)
          assert.notInclude(shown, key.slice(prefixOf(key).length))
          assert.notInclude(shown, hashKey(key))
        }
        assert.deepStrictEqual(Object.keys(listed[0]!).sort(), ["createdAt", "id", "name", "prefix", "revokedAt", "settings", "team"])
      }))
  })
