/**
 * complete=true: the 5,000-row boundary (5,000 answered, 5,001 is 422 result_too_large, never cut),
 * and answers that stay consistent (count = rows, no duplicate id, one offer per dedup key) while an
 * ingest commits batches concurrently.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { OfferStore } from "../src/OfferStore.ts"
import { type Client, get, inProcessClient, record, seed, services, TestDatabase } from "./support.ts"

const stack = services().pipe(Layer.provideMerge(TestDatabase.layer()))
const TestLayer = inProcessClient(stack).pipe(Layer.provideMerge(stack)) as Layer.Layer<Client | OfferStore | SqlClient.SqlClient, unknown>

const many = (source: string, n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => record({ nativeId: `m${from + i}`, make: "Kia", model: `Model ${from + i}` }))

layer(TestLayer, { excludeTestServices: true, timeout: 120_000 })("complete=true", (it) => {
  it.effect("5,000 matches are answered in full; 5,001 is 422 result_too_large", () =>
    Effect.gen(function*() {
      yield* seed("gamma", many("gamma", 5000))
      const ok = yield* get("/offers?complete=true&make=kia")
      assert.strictEqual(ok.status, 200)
      assert.strictEqual(ok.body.offers.length, 5000)
      assert.strictEqual(ok.body.count, 5000)
      yield* seed("gamma", many("gamma", 1, 5000))
      const tooMany = yield* get("/offers?complete=true&make=kia")
      assert.strictEqual(tooMany.status, 422)
      assert.strictEqual(tooMany.body.code, "result_too_large")
      assert.strictEqual(tooMany.body.limit, 5000)
      // a page is still fine, with the full count
      const page = yield* get("/offers?make=kia&limit=10")
      assert.strictEqual(page.body.count, 5001)
      assert.strictEqual(page.body.offers.length, 10)
    }))

  it.effect("answers stay consistent while an ingest commits batches", () =>
    Effect.gen(function*() {
      // pairs of duplicates across two sources, written batch by batch while readers read
      const pair = (i: number, source: string, minute: number) =>
        record({
          nativeId: `d${i}`, make: "Seat", model: `Leon ${i % 40}`, year: 2015, mileage: 1000 * i, price: 10_000 + i,
          updatedAt: new Date(Date.UTC(2025, 0, 1) + minute * 60_000).toISOString()
        })
      const writer = Effect.forEach(Array.from({ length: 20 }, (_, b) => b), (b) =>
        Effect.andThen(
          seed("delta", Array.from({ length: 100 }, (_, k) => pair(b * 100 + k, "delta", b))),
          seed("epsilon", Array.from({ length: 100 }, (_, k) => pair(b * 100 + k, "epsilon", 1000 - b)))
        ), { discard: true })
      let reads = 0
      const reader = Effect.gen(function*() {
        const { status, body } = yield* get("/offers?complete=true&make=seat")
        assert.strictEqual(status, 200)
        assert.strictEqual(body.count, body.offers.length)
        const idSet = new Set(body.offers.map((o: any) => o.id))
        assert.strictEqual(idSet.size, body.offers.length, "no duplicate ids")
        const keys = new Set(body.offers.map((o: any) => `${o.model}|${o.mileage}|${o.price}`))
        assert.strictEqual(keys.size, body.offers.length, "one offer per dedup key")
        reads++
      }).pipe(Effect.forever)
      yield* Effect.raceFirst(writer, reader)
      assert.isAbove(reads, 3)
      const final = yield* get("/offers?complete=true&make=seat")
      assert.strictEqual(final.body.count, 2000)
      // the epsilon copy is newer for every pair
      assert.isTrue(final.body.offers.every((o: any) => o.sourceId === "epsilon"))
    }))

  it.effect("remembered counts follow every committed batch and expiry, on both dedup paths", () =>
    Effect.gen(function*() {
      const store = yield* OfferStore
      const cupra = (i: number) => record({ nativeId: `c${i}`, make: "Cupra", model: `Born ${i}`, title: `Cupra Born ${i}` })
      const counts = Effect.gen(function*() {
        const result: Array<number> = []
        // twice each: the second answer comes from the remembered count
        for (const path of ["/offers?make=cupra&limit=3", "/offers?query=cupra&limit=3", "/offers?make=cupra&limit=3&offset=3"]) {
          for (let i = 0; i < 2; i++) result.push((yield* get(path)).body.count)
        }
        return result
      })
      for (let b = 0; b < 4; b++) {
        yield* seed("zeta", Array.from({ length: 10 }, (_, k) => cupra(b * 10 + k)))
        assert.deepStrictEqual(yield* counts, Array(6).fill(10 * (b + 1)), `after batch ${b}`)
      }
      yield* store.expireVanished("zeta", Array.from({ length: 15 }, (_, i) => `zeta:c${i}`))
      assert.deepStrictEqual(yield* counts, Array(6).fill(15))
    }))

  it.effect("remembered answers: same body and ETag until a batch commits; If-None-Match is 304", () =>
    Effect.gen(function*() {
      const store = yield* OfferStore
      const dacia = (i: number) => record({ nativeId: `s${i}`, make: "Dacia", model: `Spring ${i}`, price: 20_000 + i })
      yield* seed("eta", [dacia(0), dacia(1)])
      const path = "/offers?make=dacia&sort=MILEAGE_ASC"
      const first = yield* get(path)
      const again = yield* get(path)
      assert.strictEqual(first.status, 200)
      assert.deepStrictEqual(again.body, first.body)
      const etag = first.headers.get("etag")
      assert.match(etag ?? "", /^"[\w-]+"$/)
      assert.strictEqual(again.headers.get("etag"), etag)
      assert.strictEqual(first.headers.get("cache-control"), "no-cache")
      const unchanged = yield* get(path, { headers: { "if-none-match": etag! } })
      assert.strictEqual(unchanged.status, 304)
      assert.strictEqual(unchanged.headers.get("etag"), etag)
      // another request has its own answer and tag
      const other = yield* get("/offers?make=dacia&sort=MILEAGE_ASC&limit=1")
      assert.strictEqual(other.body.offers.length, 1)
      assert.notStrictEqual(other.headers.get("etag"), etag)

      // a committed batch changes the answer: the new offer shows at once, the old tag no longer matches
      yield* seed("eta", [dacia(0), dacia(1), dacia(2)])
      const after = yield* get(path, { headers: { "if-none-match": etag! } })
      assert.strictEqual(after.status, 200)
      assert.strictEqual(after.body.count, 3)
      assert.notStrictEqual(after.headers.get("etag"), etag)
      // and so does an expiry
      yield* store.expireVanished("eta", ["eta:s2"])
      const expired = yield* get(path)
      assert.deepStrictEqual(expired.body.offers.map((o: any) => o.id), ["eta:s2"])

      // the answer really is remembered: a change that does not move the version is not seen...
      const sql = yield* SqlClient.SqlClient
      yield* sql`UPDATE listings.offers SET title = 'Changed behind the version' WHERE id = 'eta:s2'`
      assert.strictEqual((yield* get(path)).body.offers[0].title, expired.body.offers[0].title)
      // ...until the version moves, as every offer-writing transaction moves it
      yield* sql`UPDATE listings.offers_version SET version = version + 1`
      assert.strictEqual((yield* get(path)).body.offers[0].title, "Changed behind the version")
    }))
})

const uncached = services({ answerCacheBytes: 0 }).pipe(Layer.provideMerge(TestDatabase.layer()))
layer(inProcessClient(uncached).pipe(Layer.provideMerge(uncached)) as Layer.Layer<Client | OfferStore | SqlClient.SqlClient, unknown>, {
  excludeTestServices: true
})("OFFERS_CACHE_MB=0", (it) => {
  it.effect("every request runs its statement: a change is seen at once", () =>
    Effect.gen(function*() {
      yield* seed("theta", [record({ nativeId: "t1", make: "Lada", model: "Niva", title: "Lada Niva" })])
      const sql = yield* SqlClient.SqlClient
      assert.strictEqual((yield* get("/offers?make=lada")).body.offers[0].title, "Lada Niva")
      yield* sql`UPDATE listings.offers SET title = 'Lada Niva Legend' WHERE id = 'theta:t1'`
      const after = yield* get("/offers?make=lada")
      assert.strictEqual(after.body.offers[0].title, "Lada Niva Legend")
      assert.match(after.headers.get("etag") ?? "", /^"[\w-]+"$/)
    }))
})
