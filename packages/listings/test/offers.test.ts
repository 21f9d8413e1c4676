/**
 * The read endpoints on a crafted data set: GET /offers (filters, matching rules, sorts, dedup,
 * complete, count, warnings, 400s), GET /offers/:id, GET /sources (and its fallback), GET /health,
 * GET /import-services, /openapi.json; over a real socket and in-process.
 */
import { assert, describe, layer } from "@effect/vitest"
import { OffersResponse } from "@svc/schema"
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { OfferStore } from "../src/OfferStore.ts"
import { Client, defaultSources, get, inProcessClient, record, seed, services, socketClient, TestDatabase } from "./support.ts"

const T0 = Date.UTC(2025, 5, 1)
const at = (minutes: number) => new Date(T0 + minutes * 60_000).toISOString()

// a1 and b1 are the same car (make, model, year, mileage, price): b1 is newer.
const alpha = [
  record({ nativeId: "a1", title: "Mercedes-Benz C 200 Avantgarde", make: "Mercedes-Benz", model: "C 200", fuel: "diesel", transmission: "automatic", region: "mazowieckie", year: 2019, mileage: 80_000, price: 100_000, updatedAt: at(10) }),
  record({ nativeId: "a2", title: "Škoda Octavia Combi", make: "Škoda", model: "Octavia", fuel: "petrol", transmission: "manual", region: "malopolskie", year: 2015, mileage: 150_000, price: 40_000, updatedAt: at(5) }),
  record({ nativeId: "a3", title: "BMW 320d Touring 2.0 z Łodzi", make: "BMW", model: "320d", fuel: "diesel", transmission: "manual", region: "slaskie", year: 2012, mileage: 220_000, price: 30_000, updatedAt: at(1) }),
  record({ nativeId: "a4", title: "Fiat 500e", make: "Fiat", model: "500", fuel: "electric", transmission: "automatic", region: "mazowieckie", year: null, mileage: null, price: 60_000, updatedAt: at(3), images: [] }),
  record({ nativeId: "a5", title: "Toyota Corolla Hybrid", make: "Toyota", model: "Corolla", fuel: "hybrid", transmission: "automatic", region: "mazowieckie", year: 2021, mileage: 30_000, price: 90_000, updatedAt: at(30) })
]
const beta = [
  record({ nativeId: "b1", title: "Mercedes C200 diesel", make: "Mercedes-Benz", model: "C 200", fuel: "diesel", transmission: "automatic", region: "germany", year: 2019, mileage: 80_000, price: 100_000, updatedAt: at(20) }),
  record({ nativeId: "b2", title: "Toyota Corolla", make: "TOYOTA", model: "corolla", fuel: "Hybrid", transmission: "manual", region: "germany", currency: "EUR", year: 2021, mileage: 30_000, price: 20_000, updatedAt: at(30) })
]

const Seeded = Layer.effectDiscard(Effect.andThen(seed("alpha", alpha), seed("beta", beta)))

const stack = services().pipe(Layer.provideMerge(TestDatabase.layer()))

const ids = (body: any): Array<string> => body.offers.map((offer: any) => offer.id)

type LayerIt = { readonly effect: (name: string, self: () => Effect.Effect<any, any, any>) => any }

const contractTests = (it: LayerIt) => {
  it.effect("GET /health", () =>
    Effect.gen(function*() {
      const { status, body } = yield* get("/health")
      assert.strictEqual(status, 200)
      assert.deepStrictEqual(body, { status: "ok" })
    }))

  it.effect("GET /offers: de-duplicated, NEWEST, count of all matches, warnings null", () =>
    Effect.gen(function*() {
      const { status, body, headers } = yield* get("/offers")
      assert.strictEqual(status, 200)
      // a5 and b2 share updatedAt: id breaks the tie; a1 is hidden behind its newer duplicate b1
      assert.deepStrictEqual(ids(body), ["alpha:a5", "beta:b2", "beta:b1", "alpha:a2", "alpha:a4", "alpha:a3"])
      assert.strictEqual(body.count, 6)
      assert.strictEqual(body.warnings, null)
      const offer = body.offers[0]
      assert.deepStrictEqual(Object.keys(offer).sort(), [
        "currency", "expiresAt", "fuel", "id", "images", "latitude", "location", "longitude", "make", "mileage",
        "model", "originalUrl", "power", "price", "region", "sourceId", "thumbnail", "title", "transmission",
        "updatedAt", "year"
      ])
      assert.strictEqual(offer.sourceId, "alpha")
      assert.strictEqual(offer.updatedAt, at(30))
      assert.match(offer.images[0], /^http:\/\/listings\.test\/images\/[0-9a-f]{64}$/)
      assert.strictEqual(offer.thumbnail, offer.images[0])
      assert.strictEqual(offer.expiresAt, null)
      // the body is exactly the contract's OffersResponse (it is written without the schema's encoder)
      assert.deepStrictEqual(Schema.decodeUnknownSync(OffersResponse)(body), body)
      assert.strictEqual(headers.get("content-type"), "application/json")
    }))

  it.effect("GET /offers/:id and 404 offer_not_found", () =>
    Effect.gen(function*() {
      const found = yield* get("/offers/alpha%3Aa4")
      assert.strictEqual(found.status, 200)
      assert.strictEqual(found.body.id, "alpha:a4")
      assert.strictEqual(found.body.year, null)
      assert.strictEqual(found.body.mileage, null)
      assert.deepStrictEqual(found.body.images, [])
      assert.strictEqual(found.body.thumbnail, null)
      const missing = yield* get("/offers/alpha%3Anope")
      assert.strictEqual(missing.status, 404)
      assert.strictEqual(missing.body.code, "offer_not_found")
      assert.match(missing.body.message, /alpha:nope/)
    }))

  it.effect("malformed parameters are 400 invalid_request naming the parameter", () =>
    Effect.gen(function*() {
      for (const [query, parameter] of [
        ["minYear=abc", "minYear"],
        ["limit=-1", "limit"],
        ["limit=201", "limit"],
        ["offset=1.5", "offset"],
        ["offset=-1", "offset"],
        ["complete=true&limit=ten", "limit"],
        ["sort=CHEAPEST", "sort"],
        ["dedup=maybe", "dedup"],
        ["complete=yes", "complete"],
        ["maxMileageKm=-5", "maxMileageKm"],
        ["minPrice=cheap", "minPrice"]
      ] as const) {
        const { status, body } = yield* get(`/offers?${query}`)
        assert.strictEqual(status, 400, query)
        assert.strictEqual(body.code, "invalid_request")
        assert.include(body.issues.map((issue: any) => issue.parameter), parameter, query)
        assert.include(body.message, parameter)
      }
    }))

  it.effect("GET /import-services, all or by region (case- and accent-insensitive)", () =>
    Effect.gen(function*() {
      const all = yield* get("/import-services")
      assert.strictEqual(all.status, 200)
      assert.isAbove(all.body.services.length, 20)
      const germany = yield* get("/import-services?region=Germany")
      assert.isAbove(germany.body.services.length, 1)
      for (const service of germany.body.services) assert.strictEqual(service.region, "germany")
      assert.deepStrictEqual(Object.keys(germany.body.services[0]).sort(), [
        "city", "description", "email", "id", "name", "phone", "region", "services", "website"
      ])
      // the filter rule of GET /offers: accents and case do not count (the directory writes "lodzkie")
      const lodz = yield* get(`/import-services?region=${encodeURIComponent("Łódzkie")}`)
      assert.deepStrictEqual(lodz.body.services.map((service: any) => service.id), ["ld-lodz-auto-hub"])
      const silesia = yield* get(`/import-services?region=${encodeURIComponent("ŚLĄSKIE")}`)
      assert.strictEqual(silesia.body.services.length, 2)
      const none = yield* get("/import-services?region=atlantis")
      assert.deepStrictEqual(none.body, { services: [] })
    }))

  it.effect("GET /import-services names a parameter it does not take in warnings, as GET /offers does (a misspelt regoin= listed every company without a word)", () =>
    Effect.gen(function*() {
      const all = (yield* get("/import-services")).body
      const misspelt = yield* get("/import-services?regoin=germany")
      assert.strictEqual(misspelt.status, 200)
      assert.deepStrictEqual(misspelt.body, { services: all.services, warnings: ["Unknown query parameter ignored: regoin"] })
      // the others still apply; each unknown name once, as GET /offers names them
      const mixed = yield* get("/import-services?region=germany&Region=x&_=1&_=2")
      assert.isAbove(mixed.body.services.length, 1)
      for (const service of mixed.body.services) assert.strictEqual(service.region, "germany")
      assert.deepStrictEqual(mixed.body.warnings, ["Unknown query parameters ignored: Region, _"])
      assert.deepStrictEqual(
        (yield* get("/offers?Region=x&_=1&_=2")).body.warnings,
        ["Unknown query parameters ignored: Region, _"]
      )
      // only its own parameter: no warnings key at all
      assert.deepStrictEqual(Object.keys((yield* get("/import-services?region=germany")).body), ["services"])
    }))

  it.effect("/openapi.json and a JSON 404 for unknown routes", () =>
    Effect.gen(function*() {
      const openapi = yield* get("/openapi.json")
      assert.strictEqual(openapi.status, 200)
      assert.property(openapi.body.paths, "/offers/{id}")
      const unknown = yield* get("/nope")
      assert.strictEqual(unknown.status, 404)
      assert.strictEqual(unknown.body.code, "not_found")
    }))
}

describe("offers over a socket", () => {
  layer(socketClient(Layer.mergeAll(stack, Seeded.pipe(Layer.provide(stack)))) as Layer.Layer<Client, unknown>)("socket", (it) => contractTests(it))
})

describe("offers in-process", () => {
  layer(
    inProcessClient(Layer.mergeAll(stack, Seeded.pipe(Layer.provide(stack)))).pipe(Layer.provideMerge(stack)) as Layer.Layer<
      Client | SqlClient.SqlClient | OfferStore,
      unknown
    >
  )(
    "in-process",
    (it) => {
      contractTests(it)

      it.effect("dedup=false returns every row", () =>
        Effect.gen(function*() {
          const { body } = yield* get("/offers?dedup=false")
          assert.strictEqual(body.count, 7)
          assert.include(ids(body), "alpha:a1")
        }))

      it.effect("dedup picks among the matches: a filter that excludes the newer duplicate shows the other", () =>
        Effect.gen(function*() {
          assert.deepStrictEqual(ids((yield* get("/offers?make=mercedes-benz")).body), ["beta:b1"])
          assert.deepStrictEqual(ids((yield* get("/offers?make=Mercedes-Benz&regions=mazowieckie")).body), ["alpha:a1"])
          assert.deepStrictEqual(ids((yield* get("/offers?sources=alpha&make=mercedes-benz")).body), ["alpha:a1"])
          assert.deepStrictEqual(ids((yield* get("/offers?query=mercedes")).body), ["beta:b1"])
          assert.deepStrictEqual(ids((yield* get("/offers?query=mercedes&dedup=false")).body), ["beta:b1", "alpha:a1"])
        }))

      it.effect("query: accent- and case-insensitive, word prefixes, over title, make and model", () =>
        Effect.gen(function*() {
          assert.deepStrictEqual(ids((yield* get("/offers?query=merc")).body), ["beta:b1"])
          assert.deepStrictEqual(ids((yield* get("/offers?query=skoda")).body), ["alpha:a2"])
          assert.deepStrictEqual(ids((yield* get("/offers?query=%C5%A0KODA%20octav")).body), ["alpha:a2"])
          assert.deepStrictEqual(ids((yield* get("/offers?query=avantgarde&dedup=false")).body), ["alpha:a1"])
          assert.deepStrictEqual(ids((yield* get("/offers?query=touring")).body), ["alpha:a3"])
          assert.deepStrictEqual(ids((yield* get("/offers?query=volvo")).body), [])
          // a document and a query are split the same way: at dots, and letters without a mark to strip folded
          assert.deepStrictEqual(ids((yield* get("/offers?query=2.0%20touring")).body), ["alpha:a3"])
          assert.deepStrictEqual(ids((yield* get("/offers?query=lodzi")).body), ["alpha:a3"])
          assert.deepStrictEqual(ids((yield* get("/offers?query=%C5%81%C3%B3d")).body), ["alpha:a3"])
          assert.deepStrictEqual(ids((yield* get("/offers?query=2.1")).body), [])
          // punctuation is not query syntax
          assert.strictEqual((yield* get("/offers?query=%27%29%20%7C%20%21")).status, 200)
        }))

      it.effect("make/model: case-insensitive equality, not prefix", () =>
        Effect.gen(function*() {
          assert.deepStrictEqual(ids((yield* get("/offers?make=toyota")).body), ["alpha:a5", "beta:b2"])
          assert.deepStrictEqual(ids((yield* get("/offers?make=toy")).body), [])
          assert.deepStrictEqual(ids((yield* get("/offers?make=Toyota&model=COROLLA")).body), ["alpha:a5", "beta:b2"])
          assert.deepStrictEqual(ids((yield* get("/offers?model=c%20200")).body), ["beta:b1"])
        }))

      it.effect("list filters: case-insensitive membership", () =>
        Effect.gen(function*() {
          assert.deepStrictEqual(ids((yield* get("/offers?fuelTypes=HYBRID,electric")).body), ["alpha:a5", "beta:b2", "alpha:a4"])
          assert.deepStrictEqual(ids((yield* get("/offers?transmissions=Manual")).body), ["beta:b2", "alpha:a2", "alpha:a3"])
          assert.deepStrictEqual(ids((yield* get("/offers?regions=germany,%20SLASKIE")).body), ["beta:b2", "beta:b1", "alpha:a3"])
          assert.deepStrictEqual(ids((yield* get("/offers?fuelTypes=diesel&transmissions=manual")).body), ["alpha:a3"])
        }))

      it.effect("year and mileage bounds; offers without a value do not match them", () =>
        Effect.gen(function*() {
          assert.deepStrictEqual(ids((yield* get("/offers?minYear=2019")).body), ["alpha:a5", "beta:b2", "beta:b1"])
          assert.deepStrictEqual(ids((yield* get("/offers?maxYear=2015")).body), ["alpha:a2", "alpha:a3"])
          assert.deepStrictEqual(ids((yield* get("/offers?minYear=2013&maxYear=2020")).body), ["beta:b1", "alpha:a2"])
          assert.deepStrictEqual(ids((yield* get("/offers?maxMileageKm=80000")).body), ["alpha:a5", "beta:b2", "beta:b1"])
        }))

      it.effect("sources: membership, unknown ids named in warnings", () =>
        Effect.gen(function*() {
          const { status, body } = yield* get("/offers?sources=BETA,nope,zzz")
          assert.strictEqual(status, 200)
          assert.deepStrictEqual(ids(body), ["beta:b2", "beta:b1"])
          assert.deepStrictEqual(body.warnings, ["Unknown source ids: nope, zzz"])
        }))

      it.effect("a parameter GET /offers does not take is named in warnings; the others are applied", () =>
        Effect.gen(function*() {
          const { status, body } = yield* get("/offers?regions=germany&fuelType=electric&sources=beta,nope")
          assert.strictEqual(status, 200)
          assert.deepStrictEqual(ids(body), ["beta:b2", "beta:b1"])
          assert.deepStrictEqual(body.warnings, ["Unknown source id: nope", "Unknown query parameter ignored: fuelType"])
          // remembered apart from the same request without it
          assert.strictEqual((yield* get("/offers?regions=germany&sources=beta,nope")).body.warnings.length, 1)
        }))

      it.effect("sorts: MILEAGE_ASC and YEAR_DESC (nulls last); price sorts and price bounds are not applied", () =>
        Effect.gen(function*() {
          assert.deepStrictEqual(ids((yield* get("/offers?sort=MILEAGE_ASC")).body), [
            "alpha:a5", "beta:b2", "beta:b1", "alpha:a2", "alpha:a3", "alpha:a4"
          ])
          assert.deepStrictEqual(ids((yield* get("/offers?sort=YEAR_DESC")).body), [
            "alpha:a5", "beta:b2", "beta:b1", "alpha:a2", "alpha:a3", "alpha:a4"
          ])
          const newest = ids((yield* get("/offers")).body)
          assert.deepStrictEqual(ids((yield* get("/offers?sort=PRICE_ASC")).body), newest)
          assert.deepStrictEqual(ids((yield* get("/offers?sort=PRICE_DESC&minPrice=1000000&maxPrice=2")).body), newest)
        }))

      it.effect("limit and offset page; count stays the total", () =>
        Effect.gen(function*() {
          const page = (yield* get("/offers?limit=2&offset=1")).body
          assert.deepStrictEqual(ids(page), ["beta:b2", "beta:b1"])
          assert.strictEqual(page.count, 6)
          const beyond = (yield* get("/offers?offset=100")).body
          assert.deepStrictEqual(beyond, { offers: [], count: 6, warnings: null })
          const zero = (yield* get("/offers?limit=0")).body
          assert.deepStrictEqual(zero, { offers: [], count: 6, warnings: null })
          const filteredPage = (yield* get("/offers?regions=mazowieckie&limit=1&offset=1")).body
          assert.deepStrictEqual(ids(filteredPage), ["alpha:a1"])
          assert.strictEqual(filteredPage.count, 3)
        }))

      it.effect("complete=true ignores limit and offset, whatever integers they are", () =>
        Effect.gen(function*() {
          const { body } = yield* get("/offers?complete=true&limit=1&offset=3")
          assert.strictEqual(body.offers.length, 6)
          assert.strictEqual(body.count, 6)
          // Ignored means any integer: a client that always sends its page size is answered.
          for (const query of ["limit=5000", "limit=201", "offset=-1", "limit=-3&offset=999999"]) {
            const whole = yield* get(`/offers?complete=true&${query}`)
            assert.strictEqual(whole.status, 200, query)
            assert.strictEqual(whole.body.offers.length, 6, query)
          }
        }))

      it.effect("GET /sources: configured sources with health", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          yield* sql`INSERT INTO listings.ingest_runs (source_id, trigger, holder, started_at, finished_at, ok, offers_upserted)
            VALUES ('alpha', 'manual', 'h', '2025-01-01T00:00:00Z', '2025-01-01T00:01:00Z', true, 5)`
          const { status, body } = yield* get("/sources")
          assert.strictEqual(status, 200)
          assert.deepStrictEqual(body, {
            sources: [
              { id: "alpha", enabled: true, offerCount: 5, lastCompletedAtEpochMs: Date.UTC(2025, 0, 1, 0, 1), lastCompletedOk: true, lastOffersUpserted: 5 },
              { id: "beta", enabled: true, offerCount: 2, lastCompletedAtEpochMs: null, lastCompletedOk: null, lastOffersUpserted: null },
              { id: "off", enabled: false, offerCount: 0, lastCompletedAtEpochMs: null, lastCompletedOk: null, lastOffersUpserted: null }
            ]
          })
        }))

      it.effect("an offer that changes key moves the winner (OfferStore keeps flags consistent)", () =>
        Effect.gen(function*() {
          // b1 (the newer duplicate) changes its price: a1 is alone again under the old key
          yield* seed("beta", [beta[0]!].map((r) => ({ ...r, price: 99_000 })))
          const { body } = yield* get("/offers?make=mercedes-benz")
          assert.deepStrictEqual(ids(body).sort(), ["alpha:a1", "beta:b1"])
          const store = yield* OfferStore
          // b1 vanishes from a full run of beta that only had b2
          yield* store.expireVanished("beta", ["beta:b2"])
          assert.deepStrictEqual(ids((yield* get("/offers?make=mercedes-benz")).body), ["alpha:a1"])
          const gone = yield* get("/offers/beta%3Ab1")
          assert.strictEqual(gone.status, 200)
          assert.isNotNull(gone.body.expiresAt)
          // and comes back
          yield* seed("beta", [beta[0]!])
          assert.deepStrictEqual(ids((yield* get("/offers?make=mercedes-benz")).body), ["beta:b1"])
        }))

      it.effect("GET /sources when the health lookup fails: static list, null health, no raw error", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          yield* sql`ALTER TABLE listings.ingest_runs RENAME TO ingest_runs_gone`
          const { status, body, text } = yield* get("/sources")
          yield* sql`ALTER TABLE listings.ingest_runs_gone RENAME TO ingest_runs`
          assert.strictEqual(status, 200)
          assert.deepStrictEqual(body.sources.map((s: any) => [s.id, s.enabled]), [["alpha", true], ["beta", true], ["off", false]])
          for (const source of body.sources) {
            assert.strictEqual(source.offerCount, null)
            assert.strictEqual(source.lastCompletedAtEpochMs, null)
            assert.strictEqual(source.lastCompletedOk, null)
            assert.strictEqual(source.lastOffersUpserted, null)
          }
          assert.notMatch(text, /ingest_runs|relation|exist/)
        }))
    }
  )
})

// The longest id an offer can have: a 63-character source id, ':', a 200-character native id (with
// ':' in it, which a client may percent-encode). It is listed, so it must be fetchable by id; the
// router refused every path segment over 100 characters (400 "a segment is longer than 100 characters").
const LONG_SOURCE = `s${"-".repeat(61)}s`
const LONG_NATIVE = `${"n:".repeat(99)}nn`
const longStack = services({ sources: [...defaultSources, { id: LONG_SOURCE, adapter: "json", url: "http://127.0.0.1:9/long.json" }] })
  .pipe(Layer.provideMerge(TestDatabase.layer()))
const SeededLong = Layer.effectDiscard(seed(LONG_SOURCE, [record({ nativeId: LONG_NATIVE, title: "Long id" })]))

const longIdTests = (it: LayerIt) =>
  it.effect("an offer with the longest id (264 characters) is fetched by the id its list gives", () =>
    Effect.gen(function*() {
      const listed = (yield* get(`/offers?sources=${LONG_SOURCE}`)).body
      const id = listed.offers[0].id
      assert.strictEqual(id, `${LONG_SOURCE}:${LONG_NATIVE}`)
      assert.strictEqual(id.length, 264)
      for (const path of [`/offers/${id}`, `/offers/${encodeURIComponent(id)}`]) {
        const { status, body } = yield* get(path)
        assert.strictEqual(status, 200, path)
        assert.strictEqual(body.id, id)
        assert.strictEqual(body.title, "Long id")
      }
      // an id longer than any offer's is refused by the id's own bound, not found by nothing
      const longer = yield* get(`/offers/${"x".repeat(301)}`)
      assert.strictEqual(longer.status, 400)
      assert.include(longer.body.message, "300")
      assert.strictEqual((yield* get(`/offers/${"x".repeat(300)}`)).status, 404)
    }))

describe("offers with the longest ids", () => {
  layer(socketClient(Layer.mergeAll(longStack, SeededLong.pipe(Layer.provide(longStack)))) as Layer.Layer<Client, unknown>)(
    "socket",
    (it) => longIdTests(it)
  )
  layer(inProcessClient(Layer.mergeAll(longStack, SeededLong.pipe(Layer.provide(longStack)))) as Layer.Layer<Client, unknown>)(
    "in-process",
    (it) => longIdTests(it)
  )
})
