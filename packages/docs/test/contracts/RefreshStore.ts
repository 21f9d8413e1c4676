/**
 * The contract of `RefreshStore` (the scheduled refresh's claim and revisions), run against
 * `layerMemory` (test/unit) and Postgres (test/RefreshStore.contract.test.ts). Live time: a lease
 * expires by the clock. Each test builds a fresh layer (with an `IndexStore` on the same index).
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, type Layer, Option } from "effect"
import { IndexStore } from "../../src/IndexStore.ts"
import { RefreshStore } from "../../src/RefreshStore.ts"

const hour = { interval: Duration.hours(1), lease: Duration.minutes(5) }
const register = (libraryId: string, kind: "git" | "npm" | "folder", location: string, version: string) =>
  Effect.flatMap(IndexStore, (store) =>
    store.register({ kind, location, libraryId, title: libraryId, description: "", version }, "queued", { makeDefault: true }))

export const refreshStoreContract = (name: string, layer: Layer.Layer<RefreshStore | IndexStore, unknown>) =>
  describe(`RefreshStore contract (${name})`, () => {
    const test = (title: string, body: () => Effect.Effect<void, unknown, RefreshStore | IndexStore>) =>
      it.live(title, () => Effect.provide(body(), layer))

    test("one holder at a time: a due pass is claimed once; renew and release belong to the holder", () =>
      Effect.gen(function*() {
        const store = yield* RefreshStore
        const claims = yield* Effect.all([store.claim("a", hour), store.claim("b", hour), store.claim("c", hour)], { concurrency: "unbounded" })
        assert.strictEqual(claims.filter(Boolean).length, 1)
        const winner = ["a", "b", "c"][claims.indexOf(true)]!
        const loser = winner === "a" ? "b" : "a"
        assert.isTrue(yield* store.renew(winner, Duration.minutes(5)))
        assert.isFalse(yield* store.renew(loser, Duration.minutes(5)))
        yield* store.release(loser)
        assert.isFalse(yield* store.claim(loser, { interval: Duration.zero, lease: Duration.minutes(5) }), "the holder's lease stands")
        yield* store.release(winner)
        assert.isFalse(yield* store.renew(winner, Duration.minutes(5)), "released")
        assert.isFalse(yield* store.claim(loser, hour), "the next pass is an hour away")
      }))

    test("due again after the interval; a lease that expired (its holder died) is taken over", () =>
      Effect.gen(function*() {
        const store = yield* RefreshStore
        // a lease long enough that the second claim (a round trip later, however busy the machine) meets it
        const brief = { interval: Duration.seconds(2), lease: Duration.seconds(2) }
        assert.isTrue(yield* store.claim("a", brief))
        assert.isFalse(yield* store.claim("b", brief))
        yield* Effect.sleep("2100 millis")
        assert.isTrue(yield* store.claim("b", { interval: Duration.zero, lease: Duration.minutes(5) }), "a never released: its lease expired")
        assert.isFalse(yield* store.renew("a", Duration.minutes(5)))
        yield* store.release("b")
        assert.isTrue(yield* store.claim("a", { interval: Duration.zero, lease: Duration.minutes(5) }), "released and due")
      }))

    test("the git and npm libraries; revisions recorded for existing libraries only", () =>
      Effect.gen(function*() {
        const store = yield* RefreshStore
        yield* register("/acme/repo", "git", "https://git.example/acme/repo.git#main", "v1.0.0")
        yield* register("/npm/he", "npm", "npm:he", "1.2.0")
        yield* register("/local/docs", "folder", "/srv/docs", "latest")
        assert.deepStrictEqual(yield* store.libraries, [
          { id: "/acme/repo", kind: "git", location: "https://git.example/acme/repo.git#main", defaultVersion: "v1.0.0" },
          { id: "/npm/he", kind: "npm", location: "npm:he", defaultVersion: "1.2.0" }
        ])
        assert.deepStrictEqual(yield* store.revision("/acme/repo"), Option.none())
        yield* store.setRevision("/acme/repo", "abc123")
        yield* store.setRevision("/acme/repo", "def456")
        yield* store.setRevision("/acme/gone", "abc123")
        assert.deepStrictEqual(yield* store.revision("/acme/repo"), Option.some("def456"))
        assert.deepStrictEqual(yield* store.revision("/acme/gone"), Option.none())
      }))
  })
