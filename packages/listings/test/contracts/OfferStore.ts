/**
 * The contract of `OfferStore` (with `Offers` to observe it), run against `layerMemory`
 * (test/unit/OfferStore.test.ts) and Postgres (test/OfferStore.contract.test.ts): what a batch
 * writes (new, changed, revived; unchanged ones not), and the dedup winners: the newest `updated_at`
 * wins, the lowest id breaks a tie, an edit or a removal promotes the next, across batches and
 * sources, on both read paths (the ingest-maintained flag for a make filter, the NOT EXISTS probe for
 * a region filter). Each test builds a fresh layer.
 */
import { assert, describe, it } from "@effect/vitest"
import { OfferNotFound } from "@svc/schema"
import { Effect, type Layer } from "effect"
import type { OfferSearch } from "../../src/OfferAnswers.ts"
import { Offers } from "../../src/Offers.ts"
import { OfferStore } from "../../src/OfferStore.ts"
import { decodeAnswer, minute, record, write } from "./fixtures.ts"

/** Ids shown for a search, in order. */
export const shown = (search: OfferSearch) =>
  Effect.map(Effect.flatMap(Offers, (offers) => offers.search(search)), (answer) =>
    decodeAnswer(answer).offers.map((offer) => offer.id))

/** The same car (one dedup key), listed at minute `m`. */
const twin = (nativeId: string, m: number, overrides: Record<string, unknown> = {}) =>
  record({ nativeId, make: "Skoda", model: "Octavia", year: 2019, mileage: 80_000, price: 60_000, updatedAt: new Date(minute(m)).toISOString(), ...overrides })

/** Both read paths: the flag (make only) and NOT EXISTS (a region filter). */
const bothPaths = (expected: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    assert.deepStrictEqual(yield* shown({ make: "skoda" }), expected, "make filter (winner flag)")
    assert.deepStrictEqual(yield* shown({ make: "skoda", regions: "mazowieckie" }), expected, "region filter (NOT EXISTS)")
  })

export const offerStoreContract = (name: string, layer: Layer.Layer<OfferStore | Offers, unknown>) =>
  describe(`OfferStore contract (${name})`, () => {
    const test = (title: string, body: () => Effect.Effect<void, unknown, OfferStore | Offers>) =>
      it.live(title, () => Effect.provide(body(), layer))

    test("a batch writes new, changed and revived offers, not unchanged ones", () =>
      Effect.gen(function*() {
        const store = yield* OfferStore
        const a = record({ nativeId: "a" })
        const b = record({ nativeId: "b" })
        assert.strictEqual(yield* write("alpha", [a, b]), 2)
        assert.strictEqual(yield* write("alpha", [a, b]), 0, "unchanged")
        assert.strictEqual(yield* write("alpha", [a, { ...b, title: "Edited" }]), 1, "one changed")
        assert.strictEqual(yield* store.upsertBatch("alpha", [], []), 0, "empty batch")
        assert.strictEqual(yield* store.expireVanished("alpha", ["alpha:a"]), 1)
        assert.strictEqual(yield* write("alpha", [a, { ...b, title: "Edited" }]), 1, "revived")
        assert.deepStrictEqual((yield* shown({ sort: "NEWEST", dedup: false })).sort(), ["alpha:a", "alpha:b"])
      }))

    test("the newest updated_at wins; dedup=false shows every duplicate", () =>
      Effect.gen(function*() {
        yield* write("alpha", [twin("old", 10), twin("new", 20)])
        yield* bothPaths(["alpha:new"])
        assert.deepStrictEqual((yield* shown({ make: "skoda", dedup: false })).sort(), ["alpha:new", "alpha:old"])
      }))

    test("at equal updated_at the lowest id wins, across batches and sources", () =>
      Effect.gen(function*() {
        yield* write("beta", [twin("x", 30)])
        yield* write("alpha", [twin("y", 30)])
        yield* bothPaths(["alpha:y"])
        yield* write("alpha", [twin("a", 30)])
        yield* bothPaths(["alpha:a"])
      }))

    test("one car spelt two ways by two feeds is one offer: make and model compare as the filters do", () =>
      Effect.gen(function*() {
        yield* write("alpha", [
          twin("skoda", 10, { make: "Škoda" }),
          twin("merc", 10, { make: "Mercedes-Benz", model: "C-Klasse" }),
          twin("citroen", 30, { make: "Citroën", model: "C4 Picasso", price: 20_000 })
        ])
        yield* write("beta", [
          twin("skoda", 20, { make: "Skoda" }),
          twin("merc", 5, { make: "Mercedes Benz", model: "C Klasse" }),
          twin("citroen", 30, { make: "CITROEN", model: "c4 picasso", price: 20_000 })
        ])
        yield* bothPaths(["beta:skoda"])
        // newest first: the Citroëns tie (the lower id wins), the Mercedes of alpha is the newer
        assert.deepStrictEqual(yield* shown({ sort: "NEWEST" }), ["alpha:citroen", "beta:skoda", "alpha:merc"])
        assert.deepStrictEqual(yield* shown({ make: "mercedes benz", regions: "mazowieckie" }), ["alpha:merc"])
        assert.deepStrictEqual((yield* shown({ make: "skoda", dedup: false })).sort(), ["alpha:skoda", "beta:skoda"])
        assert.deepStrictEqual((yield* shown({ sort: "NEWEST", dedup: false })).sort(), [
          "alpha:citroen", "alpha:merc", "alpha:skoda", "beta:citroen", "beta:merc", "beta:skoda"
        ])
        // each answer keeps the offer's own spelling
        const offers = yield* Effect.flatMap(Offers, (o) => o.search({ make: "skoda" }))
        assert.deepStrictEqual(decodeAnswer(offers).offers.map((offer) => offer.make), ["Skoda"])
      }))

    test("an edit that makes the winner older promotes the next; a new key stands alone", () =>
      Effect.gen(function*() {
        yield* write("alpha", [twin("one", 10)])
        yield* write("beta", [twin("two", 20)])
        yield* bothPaths(["beta:two"])
        yield* write("beta", [twin("two", 5)])
        yield* bothPaths(["alpha:one"])
        // another price: another key, so both are shown
        yield* write("beta", [twin("two", 5, { price: 61_000 })])
        yield* bothPaths(["alpha:one", "beta:two"])
      }))

    test("removal promotes the next; the removed offer still answers by id with its expiry", () =>
      Effect.gen(function*() {
        const store = yield* OfferStore
        const offers = yield* Offers
        yield* write("alpha", [twin("first", 10), twin("second", 20), twin("third", 30)])
        yield* bothPaths(["alpha:third"])
        assert.strictEqual(yield* store.expireVanished("alpha", ["alpha:first", "alpha:second"]), 1)
        yield* bothPaths(["alpha:second"])
        const removed = yield* offers.byId("alpha:third")
        assert.isNotNull(removed.expiresAt)
        assert.strictEqual(yield* store.expireVanished("alpha", ["alpha:first", "alpha:second"]), 0, "nothing more to expire")
        // a revived offer is a candidate again
        yield* write("alpha", [twin("third", 30)])
        yield* bothPaths(["alpha:third"])
      }))

    test("an offer whose expiresAt passed is removed by the next full run even if listed", () =>
      Effect.gen(function*() {
        const store = yield* OfferStore
        yield* write("alpha", [twin("stale", 20, { expiresAt: "2000-01-01T00:00:00Z" }), twin("fresh", 10)])
        assert.strictEqual(yield* store.expireVanished("alpha", ["alpha:stale", "alpha:fresh"]), 1)
        yield* bothPaths(["alpha:fresh"])
        const stale = yield* (yield* Offers).byId("alpha:stale")
        assert.strictEqual(stale.expiresAt, "2000-01-01T00:00:00.000Z", "a past expiry is kept")
      }))

    test("removing a source deletes its offers, listed or removed, promotes another source's twin, and leaves the rest", () =>
      Effect.gen(function*() {
        const store = yield* OfferStore
        const offers = yield* Offers
        yield* write("demo", [twin("winner", 30), twin("gone", 5, { price: 1 })])
        yield* write("alpha", [twin("real", 10)])
        assert.strictEqual(yield* store.expireVanished("demo", ["demo:winner"]), 1)
        yield* bothPaths(["demo:winner"])
        assert.strictEqual(yield* store.removeSource("demo"), 2)
        yield* bothPaths(["alpha:real"])
        for (const id of ["demo:winner", "demo:gone"]) assert.instanceOf(yield* Effect.flip(offers.byId(id)), OfferNotFound)
        assert.strictEqual(yield* store.removeSource("demo"), 0, "nothing left")
        // the source may write again later (a start with the mock source on)
        yield* write("demo", [twin("winner", 30)])
        yield* bothPaths(["demo:winner"])
      }))

    test("an unknown id is OfferNotFound", () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip((yield* Offers).byId("alpha:nope"))
        assert.instanceOf(error, OfferNotFound)
      }))
  })
