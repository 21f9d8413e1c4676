/**
 * The ingest-maintained `dedup_winner` flags against their definition: after every batch and every
 * expiry, each dedup key with listed offers has exactly one winner, the most recently updated (then
 * the lowest id), and nothing else is flagged. Batches are random but seeded, over a small space of
 * keys and timestamps so that duplicates, ties, key changes, removals and revivals all happen. The
 * key's TypeScript and SQL twins agree; and one car that two feeds spell two ways ("Škoda"/"Skoda",
 * "Mercedes-Benz"/"Mercedes Benz") is one offer of GET /offers over a socket, both with dedup=false.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { dedupKeySql, winnerOrderSql } from "../src/Dedup.ts"
import { OfferStore } from "../src/OfferStore.ts"
import { type Client, get, record, seed, services, socketClient, TestDatabase } from "./support.ts"

const stack = services().pipe(Layer.provideMerge(TestDatabase.layer())) as Layer.Layer<OfferStore | SqlClient.SqlClient, unknown>

/** A small deterministic generator (LCG), so a failure can be replayed. */
const generator = (seedValue: number) => {
  let state = seedValue
  const next = () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31
    return state / 2 ** 31
  }
  return { pick: <A>(items: ReadonlyArray<A>): A => items[Math.floor(next() * items.length)]!, chance: (p: number) => next() < p }
}

/** Offers whose flag differs from the definition, as `id: flag` strings (empty when all agree). */
const disagreements = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ readonly id: string; readonly dedup_winner: boolean }>`
    SELECT o.id, o.dedup_winner
    FROM listings.offers o
    LEFT JOIN (
      SELECT DISTINCT ON (dedup_key) id FROM listings.offers
      WHERE removed_at IS NULL ORDER BY dedup_key, ${sql.literal(winnerOrderSql())}
    ) w USING (id)
    WHERE o.dedup_winner <> (w.id IS NOT NULL)`
  return rows.map((row) => `${row.id}: ${row.dedup_winner}`)
})

layer(stack, { excludeTestServices: true, timeout: 120_000 })("dedup winners", (it) => {
  it.effect("stay exactly one per key through random batches, key changes, expiry and revival", () =>
    Effect.gen(function*() {
      const store = yield* OfferStore
      const random = generator(20_251_123)
      const minutes = [0, 1, 2, 3]
      let winners = 0
      for (let round = 0; round < 60; round++) {
        const sourceId = random.pick(["alpha", "beta"])
        if (round > 0 && random.chance(0.15)) {
          // a full run that saw only some of its offers
          const seen = Array.from({ length: 20 }, (_, i) => `${sourceId}:o${i}`).filter(() => random.chance(0.5))
          yield* store.expireVanished(sourceId, seen)
        } else {
          const nativeIds = new Set(Array.from({ length: 1 + Math.floor(random.pick(minutes) * 5) }, () => `o${random.pick([...Array(20).keys()])}`))
          yield* seed(
            sourceId,
            [...nativeIds].map((nativeId) =>
              record({
                nativeId,
                make: random.pick(["Toyota", "Škoda"]),
                model: "Octavia",
                year: random.pick([2018, 2019]),
                mileage: random.pick([50_000, 90_000]),
                price: random.pick([30_000, 31_000]),
                updatedAt: new Date(Date.UTC(2025, 0, 1, 12, random.pick(minutes))).toISOString()
              })
            )
          )
        }
        assert.deepStrictEqual(yield* disagreements, [], `after round ${round}`)
        const sql = yield* SqlClient.SqlClient
        const [count] = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM listings.offers WHERE dedup_winner`
        winners = Math.max(winners, count!.n)
      }
      // the random walk did reach contested keys (16 possible keys, 40 possible offers)
      assert.isAbove(winners, 4)
    }))

  it.effect("stay exactly one per key while four sources write and expire at once", () =>
    Effect.gen(function*() {
      const store = yield* OfferStore
      const sql = yield* SqlClient.SqlClient
      yield* sql`DELETE FROM listings.offers`
      // each source: random batches over the same few keys as the others, now and then an expiry
      const writer = (sourceId: string, seedValue: number) =>
        Effect.gen(function*() {
          const random = generator(seedValue)
          for (let round = 0; round < 25; round++) {
            if (random.chance(0.1)) {
              yield* store.expireVanished(sourceId, Array.from({ length: 30 }, (_, i) => `${sourceId}:o${i}`).filter(() => random.chance(0.7)))
              continue
            }
            const nativeIds = new Set(Array.from({ length: 30 }, () => `o${Math.floor(random.pick([...Array(30).keys()]))}`))
            yield* seed(
              sourceId,
              [...nativeIds].map((nativeId) =>
                record({
                  nativeId,
                  make: random.pick(["Toyota", "Škoda", "Kia"]),
                  model: "Ceed",
                  year: random.pick([2018, 2019]),
                  mileage: random.pick([50_000, 90_000]),
                  price: 30_000,
                  updatedAt: new Date(Date.UTC(2025, 0, 1, 12, random.pick([0, 1, 2]))).toISOString()
                })
              )
            )
          }
        })
      // every statement is one snapshot: no snapshot may ever show a key with two winners or none
      let checks = 0
      const checker = Effect.gen(function*() {
        assert.deepStrictEqual(yield* disagreements, [], "while writing")
        checks++
      }).pipe(Effect.forever)
      yield* Effect.raceFirst(
        Effect.forEach(["s1", "s2", "s3", "s4"], (sourceId, i) => writer(sourceId, 7 + i), { concurrency: "unbounded", discard: true }),
        checker
      )
      assert.deepStrictEqual(yield* disagreements, [])
      assert.isAbove(checks, 3)
      const [contested] = yield* sql<{ readonly n: number }>`
        SELECT count(*)::int AS n FROM (
          SELECT dedup_key FROM listings.offers WHERE removed_at IS NULL GROUP BY dedup_key HAVING count(*) > 1
        ) k`
      // the sources did share keys
      assert.isAbove(contested!.n, 3)
    }))

  it.effect("the key's SQL twin computes from a stored row the key the ingest wrote", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const spellings = [
        ["Škoda", "Octavia Combi"], ["SKODA", "octavia-combi"], [" Mercedes-Benz ", "C 200"], ["Mercedes  Benz", "C200"],
        ["Citroën", "C4 Picasso"], ["ŁADA", "Niva 4x4"], ["Alfa_Romeo", "Giulia|Veloce"], ["BMW", "3er (F30)"]
      ]
      yield* seed("gamma", spellings.map(([make, model], i) =>
        record({ nativeId: `t${i}`, make, model, year: i % 2 === 0 ? null : 2020, mileage: i % 3 === 0 ? null : 1_000 * i, price: 9_999.5 + i })))
      const rows = yield* sql<{ readonly id: string; readonly stored: string; readonly computed: string }>`
        SELECT id, dedup_key AS stored, ${sql.literal(dedupKeySql)} AS computed FROM listings.offers WHERE source_id = 'gamma'`
      assert.strictEqual(rows.length, spellings.length)
      for (const row of rows) assert.strictEqual(row.computed, row.stored, row.id)
      const keys = new Set(rows.map((row) => row.stored.split("|").slice(0, 2).join("|")))
      // Škoda/SKODA and the two Mercedes fold to one make and model each ("c 200" and "c200" stay two)
      assert.deepStrictEqual([...keys].sort(), [
        "alfa romeo|giulia veloce", "bmw|3er f30", "citroen|c4 picasso", "lada|niva 4x4", "mercedes benz|c 200",
        "mercedes benz|c200", "skoda|octavia combi"
      ])
    }))
})

// One car offered by two feeds, spelt two ways; the beta offers are the newer.
const T0 = Date.UTC(2025, 5, 1)
const at = (minutes: number) => new Date(T0 + minutes * 60_000).toISOString()
const car = { year: 2019, mileage: 80_000, price: 100_000, currency: "PLN" }
const twoSpellings = Layer.effectDiscard(Effect.andThen(
  seed("alpha", [
    record({ ...car, nativeId: "skoda", title: "Škoda Octavia", make: "Škoda", model: "Octavia", region: "slaskie", updatedAt: at(10) }),
    record({ ...car, nativeId: "merc", title: "Mercedes-Benz C 200", make: "Mercedes-Benz", model: "C 200", region: "slaskie", updatedAt: at(10) })
  ]),
  seed("beta", [
    record({ ...car, nativeId: "skoda", title: "Skoda Octavia", make: "Skoda", model: "Octavia", region: "germany", updatedAt: at(20) }),
    record({ ...car, nativeId: "merc", title: "Mercedes Benz C 200", make: "Mercedes Benz", model: "C 200", region: "germany", updatedAt: at(20) })
  ])
))
const httpStack = services().pipe(Layer.provideMerge(TestDatabase.layer()))
const ids = (body: any): Array<string> => body.offers.map((offer: any) => offer.id)

describe("dedup across spellings, over HTTP", () => {
  layer(socketClient(Layer.mergeAll(httpStack, twoSpellings.pipe(Layer.provide(httpStack)))) as Layer.Layer<Client, unknown>, {
    excludeTestServices: true
  })("GET /offers", (it) => {
    it.effect("shows one offer per car however the feeds spell make and model; dedup=false shows both", () =>
      Effect.gen(function*() {
        const deduplicated = (yield* get("/offers")).body
        assert.deepStrictEqual(ids(deduplicated), ["beta:merc", "beta:skoda"])
        assert.strictEqual(deduplicated.count, 2)
        // both read paths: the winner flag (make) and the matching duplicates (free text, region)
        assert.deepStrictEqual(ids((yield* get("/offers?make=skoda")).body), ["beta:skoda"])
        assert.deepStrictEqual(ids((yield* get(`/offers?make=${encodeURIComponent("Škoda")}&complete=true`)).body), ["beta:skoda"])
        assert.deepStrictEqual(ids((yield* get("/offers?query=octavia")).body), ["beta:skoda"])
        assert.deepStrictEqual(ids((yield* get("/offers?make=mercedes-benz&regions=slaskie")).body), ["alpha:merc"])
        const all = (yield* get("/offers?dedup=false")).body
        assert.deepStrictEqual(ids(all), ["beta:merc", "beta:skoda", "alpha:merc", "alpha:skoda"])
        assert.strictEqual(all.count, 4)
        assert.deepStrictEqual(ids((yield* get("/offers?make=skoda&dedup=false")).body), ["beta:skoda", "alpha:skoda"])
        // the offers keep their own spelling
        assert.deepStrictEqual(all.offers.map((offer: any) => offer.make), ["Mercedes Benz", "Skoda", "Mercedes-Benz", "Škoda"])
      }))
  })
})
