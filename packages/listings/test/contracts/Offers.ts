/**
 * The contract of `Offers` (the reads GET /offers serves), run against `layerMemory`
 * (test/unit/Offers.test.ts) and Postgres (test/Offers.contract.test.ts): filters (free-text word
 * prefixes with folded accents, make/model and list filters by one key (case, accents and
 * punctuation do not count), year and mileage bounds that unknown values never match, sources with the unknown-id warning), the sorts with unknown values last,
 * paging with the full count, and `complete`'s 5,000 boundary (5,000 answered in full, 5,001 is
 * ResultTooLarge, never a cut answer). Each test builds a fresh layer.
 */
import { assert, describe, it } from "@effect/vitest"
import { COMPLETE_LIMIT, ResultTooLarge } from "@svc/schema"
import { Effect, type Layer } from "effect"
import type { OfferSearch } from "../../src/OfferAnswers.ts"
import { Offers } from "../../src/Offers.ts"
import type { OfferStore } from "../../src/OfferStore.ts"
import { decodeAnswer, minute, record, write } from "./fixtures.ts"
import { shown } from "./OfferStore.ts"

const answer = (search: OfferSearch) =>
  Effect.map(Effect.flatMap(Offers, (offers) => offers.search(search)), decodeAnswer)

/** A small market: ids say what they are. */
const market = Effect.gen(function*() {
  yield* write("alpha", [
    record({ nativeId: "skoda", title: "Škoda Octavia 1.6 TDI", make: "Škoda", model: "Octavia", year: 2016, mileage: 150_000, fuel: "diesel", updatedAt: new Date(minute(1)).toISOString() }),
    record({ nativeId: "merc", title: "Mercedes-Benz C 200", make: "Mercedes-Benz", model: "C  Klasse", year: 2020, mileage: 40_000, transmission: "automatic", updatedAt: new Date(minute(5)).toISOString() }),
    record({ nativeId: "nodata", title: "Fiat Panda", make: "Fiat", model: "Panda", year: null, mileage: null, region: "slaskie", updatedAt: new Date(minute(3)).toISOString() })
  ])
  yield* write("beta", [
    record({ nativeId: "golf", title: "VW Golf", make: "Volkswagen", model: "Golf", year: 2018, mileage: 90_000, fuel: "LPG", updatedAt: new Date(minute(4)).toISOString() })
  ])
})

export const offersContract = (name: string, layer: Layer.Layer<OfferStore | Offers, unknown>) =>
  describe(`Offers contract (${name})`, () => {
    const test = (title: string, body: () => Effect.Effect<void, unknown, OfferStore | Offers>, timeout?: number) =>
      it.live(title, () => Effect.provide(body(), layer), timeout)

    test("free text: every word a prefix, accents folded, words ANDed", () =>
      Effect.gen(function*() {
        yield* market
        assert.deepStrictEqual(yield* shown({ query: "merc" }), ["alpha:merc"])
        assert.deepStrictEqual(yield* shown({ query: "SKOD octa" }), ["alpha:skoda"])
        assert.deepStrictEqual(yield* shown({ query: "1.6 tdi" }), ["alpha:skoda"])
        assert.deepStrictEqual(yield* shown({ query: "skoda golf" }), [])
        assert.deepStrictEqual(yield* shown({ query: "x".repeat(201) }), [], "a word no document holds")
        assert.deepStrictEqual(yield* shown({ query: " ,. " }), ["alpha:merc", "beta:golf", "alpha:nodata", "alpha:skoda"], "no words: no condition")
        // ... and the answer says so (`?query=%` answered every offer as if each had matched)
        assert.deepStrictEqual((yield* answer({ query: "%" })).warnings, [`The query "%" has no letters or digits to search for: it filters nothing`])
        assert.deepStrictEqual((yield* answer({ query: "   " })).warnings, null, "a blank query is no query")
        const long = yield* answer({ query: `${"merc ".repeat(16)}tdi` })
        assert.deepStrictEqual(long.warnings, ["Only the first 16 words of the query are searched"])
        assert.deepStrictEqual(long.offers.map((offer) => offer.id), ["alpha:merc"], "the 17th word (tdi) not searched")
        assert.deepStrictEqual((yield* answer({ query: "merc" })).warnings, null)
      }))

    test("make and model: case-insensitive equality, whitespace collapsed", () =>
      Effect.gen(function*() {
        yield* market
        assert.deepStrictEqual(yield* shown({ make: "  mercedes-benz " }), ["alpha:merc"])
        assert.deepStrictEqual(yield* shown({ make: "mercedes-benz", model: "c   KLASSE" }), ["alpha:merc"])
        assert.deepStrictEqual(yield* shown({ model: "GOLF" }), ["beta:golf"])
        assert.deepStrictEqual(yield* shown({ make: "merc" }), [], "no prefix match")
      }))

    test("make, model and list filters: case, accents and punctuation do not count; the feed's spelling is answered", () =>
      Effect.gen(function*() {
        yield* write("alpha", [
          record({ nativeId: "citroen", make: "Citroën", model: "C4 Cactus", fuel: "Électrique", transmission: "Automatyczna", region: "Śląskie", updatedAt: new Date(minute(3)).toISOString() }),
          record({ nativeId: "skoda", make: "ŠKODA", model: "Octavia", fuel: "diesel", region: "Île-de-France", updatedAt: new Date(minute(2)).toISOString() }),
          record({ nativeId: "merc", make: "Mercedes-Benz", model: "C-Klasse", region: "Łódzkie", updatedAt: new Date(minute(1)).toISOString() })
        ])
        // what a phone keyboard gives: no háček, no diaeresis, any case
        assert.deepStrictEqual(yield* shown({ make: "Citroen" }), ["alpha:citroen"])
        assert.deepStrictEqual(yield* shown({ make: "CITROËN" }), ["alpha:citroen"])
        assert.deepStrictEqual(yield* shown({ make: "skoda" }), ["alpha:skoda"])
        assert.deepStrictEqual(yield* shown({ make: "Škoda" }), ["alpha:skoda"])
        assert.deepStrictEqual(yield* shown({ make: "mercedes benz" }), ["alpha:merc"])
        assert.deepStrictEqual(yield* shown({ make: "mercedes-benz", model: "c klasse" }), ["alpha:merc"])
        assert.deepStrictEqual(yield* shown({ make: "citroen", model: "c4-cactus" }), ["alpha:citroen"])
        assert.deepStrictEqual(yield* shown({ make: "citro" }), [], "still equality, no prefix match")
        assert.deepStrictEqual(yield* shown({ make: "skoda", dedup: false }), ["alpha:skoda"])
        // the list filters share the rule (one key function)
        assert.deepStrictEqual(yield* shown({ fuelTypes: "electrique, lpg" }), ["alpha:citroen"])
        assert.deepStrictEqual(yield* shown({ transmissions: "automatyczna" }), ["alpha:citroen"])
        assert.deepStrictEqual(yield* shown({ regions: "slaskie,lodzkie" }), ["alpha:citroen", "alpha:merc"])
        assert.deepStrictEqual(yield* shown({ regions: "ile de france", make: "Skoda" }), ["alpha:skoda"])
        // the answer keeps what the feed wrote
        const [citroen] = (yield* answer({ make: "citroen" })).offers
        assert.deepStrictEqual(
          [citroen!.make, citroen!.model, citroen!.fuel, citroen!.transmission, citroen!.region],
          ["Citroën", "C4 Cactus", "Électrique", "Automatyczna", "Śląskie"]
        )
      }))

    test("year and mileage bounds; unknown values never match them", () =>
      Effect.gen(function*() {
        yield* market
        assert.deepStrictEqual(yield* shown({ minYear: 2018 }), ["alpha:merc", "beta:golf"])
        assert.deepStrictEqual(yield* shown({ maxYear: 2018 }), ["beta:golf", "alpha:skoda"])
        assert.deepStrictEqual(yield* shown({ maxMileageKm: 90_000 }), ["alpha:merc", "beta:golf"])
        assert.deepStrictEqual(yield* shown({ minYear: 2017, maxYear: 2019 }), ["beta:golf"])
      }))

    test("list filters: comma-separated, case-insensitive; unknown sources are warned about", () =>
      Effect.gen(function*() {
        yield* market
        assert.deepStrictEqual(yield* shown({ fuelTypes: "DIESEL, lpg,," }), ["beta:golf", "alpha:skoda"])
        assert.deepStrictEqual(yield* shown({ transmissions: "automatic" }), ["alpha:merc"])
        assert.deepStrictEqual(yield* shown({ regions: "Slaskie" }), ["alpha:nodata"])
        const bySource = yield* answer({ sources: "beta,nope,gone" })
        assert.deepStrictEqual(bySource.offers.map((offer) => offer.id), ["beta:golf"])
        assert.deepStrictEqual(bySource.warnings, ["Unknown source ids: nope, gone"])
        assert.deepStrictEqual((yield* answer({ sources: "alpha" })).warnings, null)
      }))

    test("sorts: NEWEST, MILEAGE_ASC and YEAR_DESC with unknown values last; price sorts are NEWEST", () =>
      Effect.gen(function*() {
        yield* market
        const newest = ["alpha:merc", "beta:golf", "alpha:nodata", "alpha:skoda"]
        assert.deepStrictEqual(yield* shown({}), newest)
        assert.deepStrictEqual(yield* shown({ sort: "PRICE_ASC" }), newest)
        assert.deepStrictEqual(yield* shown({ sort: "MILEAGE_ASC" }), ["alpha:merc", "beta:golf", "alpha:skoda", "alpha:nodata"])
        assert.deepStrictEqual(yield* shown({ sort: "YEAR_DESC" }), ["alpha:merc", "beta:golf", "alpha:skoda", "alpha:nodata"])
      }))

    test("paging: limit and offset over the order, count of every match; the offer as CarOffer", () =>
      Effect.gen(function*() {
        yield* market
        const first = yield* answer({ limit: 2 })
        assert.deepStrictEqual([first.count, first.offers.map((offer) => offer.id)], [4, ["alpha:merc", "beta:golf"]])
        const second = yield* answer({ limit: 2, offset: 2 })
        assert.deepStrictEqual([second.count, second.offers.map((offer) => offer.id)], [4, ["alpha:nodata", "alpha:skoda"]])
        const beyond = yield* answer({ offset: 10 })
        assert.deepStrictEqual([beyond.count, beyond.offers.length], [4, 0])
        const countOnly = yield* answer({ limit: 0, make: "fiat" })
        assert.deepStrictEqual([countOnly.count, countOnly.offers.length], [1, 0])
        const merc = first.offers[0]!
        assert.strictEqual(merc.sourceId, "alpha")
        assert.strictEqual(merc.updatedAt, new Date(minute(5)).toISOString())
        assert.match(merc.images[0]!, /^http:\/\/listings\.test\/images\/[0-9a-f]{64}$/)
        assert.strictEqual(merc.thumbnail, merc.images[0])
        assert.deepStrictEqual(yield* (yield* Offers).byId("alpha:merc"), merc)
      }))

    test(`complete: ${COMPLETE_LIMIT} matches answered in full, one more is ResultTooLarge`, () =>
      Effect.gen(function*() {
        const many = (from: number, n: number) =>
          Array.from({ length: n }, (_, i) => record({ nativeId: `k${from + i}`, make: "Kia", model: `Model ${from + i}` }))
        yield* write("alpha", many(0, 2500))
        yield* write("beta", many(2500, COMPLETE_LIMIT - 2500))
        const full = yield* answer({ make: "kia", complete: true, limit: 1 })
        assert.strictEqual(full.count, COMPLETE_LIMIT)
        assert.strictEqual(full.offers.length, COMPLETE_LIMIT, "limit is ignored by complete")
        assert.strictEqual(new Set(full.offers.map((offer) => offer.id)).size, COMPLETE_LIMIT)
        yield* write("alpha", many(COMPLETE_LIMIT, 1))
        const error = yield* Effect.flip(Effect.flatMap(Offers, (offers) => offers.search({ make: "kia", complete: true })))
        assert.instanceOf(error, ResultTooLarge)
        assert.strictEqual(error.limit, COMPLETE_LIMIT)
        const page = yield* answer({ make: "kia", limit: 10 })
        assert.deepStrictEqual([page.count, page.offers.length], [COMPLETE_LIMIT + 1, 10])
      }), 60_000)
  })
