/**
 * The ListingsApi handlers (src/http.ts) over the memory layers, in-process through a web handler:
 * no socket, no database. Offers listed and fetched by id (ETag and 304), filters and warnings, an
 * invalid query (400 naming the parameter), an unknown id (404), the import directory, and an admin
 * ingest of a small mock feed (401 without the token) whose run shows in GET /sources.
 */
import { assert, describe, it } from "@effect/vitest"
import { apiRoutes, toWebHandler } from "@svc/platform"
import { databaseDown } from "@svc/platform/testing"
import { CarOffer, ImportServicesResponse, ListingsApi, listingsOpenApi, OffersResponse, SourcesResponse } from "@svc/schema"
import { Effect, Layer, Option, Redacted, Schema, type Scope } from "effect"
import { HttpClient, HttpClientError } from "effect/http"
import { ApiHandlers } from "../../src/http.ts"
import { ImageCacher } from "../../src/Images.ts"
import { ImportServices } from "../../src/ImportServices.ts"
import { Ingest } from "../../src/Ingest.ts"
import { IngestRuns } from "../../src/IngestRuns.ts"
import { Leases } from "../../src/Leases.ts"
import { ListingsConfig } from "../../src/ListingsConfig.ts"
import { ListingsMemory } from "../../src/memory/ListingsMemory.ts"
import { Offers } from "../../src/Offers.ts"
import { OfferStore } from "../../src/OfferStore.ts"
import { SourceHealthLookup } from "../../src/SourceHealth.ts"
import { Sources } from "../../src/Sources.ts"
import { minute, record, write } from "../contracts/fixtures.ts"

const TOKEN = "unit-admin-token"

/** No feed in these tests needs the network: any outbound request is a defect. */
const noNetwork = Layer.succeed(
  HttpClient.HttpClient,
  HttpClient.make((request) =>
    Effect.fail(new HttpClientError.HttpClientError({ reason: new HttpClientError.TransportError({ request, description: "no network in unit tests" }) }))
  )
)

const directory = [
  { id: "b", name: "Beta Import", region: "slaskie", city: null, services: ["import"], website: null, phone: null, email: null, description: "B" },
  { id: "a", name: "Alpha Trans", region: "mazowieckie", city: "Warszawa", services: ["transport"], website: null, phone: null, email: null, description: "A" }
]

const configuredSources = [
  { id: "alpha", adapter: "json", url: "http://127.0.0.1:9/alpha.json" },
  { id: "mock", adapter: "mock", count: 40 }
] as const

/**
 * Every service the handlers need, in memory, over one set of tables; `leases` may stand for a
 * database that is down; `mockEnabled` is `ENABLE_MOCK_SOURCE`.
 */
const servicesWith = (leases: Layer.Layer<Leases, never, ListingsMemory>, mockEnabled = true) => Layer.mergeAll(
  Offers.layerMemory,
  SourceHealthLookup.layerMemory,
  ImportServices.layerMemory(directory),
  Ingest.layerNoDeps
).pipe(
  Layer.provideMerge(Layer.mergeAll(OfferStore.layerMemory, leases, IngestRuns.layerMemory)),
  Layer.provideMerge(ListingsMemory.layer),
  Layer.provide([ImageCacher.layerDisabled, noNetwork]),
  Layer.provideMerge(
    Layer.mergeAll(
      ListingsConfig.layerTest({ adminToken: Option.some(Redacted.make(TOKEN)), answerCacheBytes: 0 }),
      Sources.layerStatic(configuredSources, { mockEnabled })
    )
  )
)
const memoryServices = servicesWith(Leases.layerMemory)

/** Leases over a database that refuses connections, as the SQL layer dies with it (`atDatabaseBoundary`). */
const leasesDown = Layer.succeed(Leases, Leases.of({
  holder: "test",
  acquire: () => Effect.die(databaseDown()),
  renew: () => Effect.succeed(false),
  release: () => Effect.void
}))

/** The API over the services in the context, as a web `fetch`. */
const api = Effect.gen(function*() {
  const services = yield* Effect.context<Offers | SourceHealthLookup | ImportServices | Ingest | ListingsConfig>()
  const { handler } = yield* Effect.acquireRelease(
    Effect.sync(() =>
      toWebHandler(
        apiRoutes({ api: ListingsApi, handlers: ApiHandlers }).pipe(Layer.provide(Layer.succeedContext(services)))
      )
    ),
    ({ dispose }) => Effect.promise(dispose)
  )
  return (path: string, init?: RequestInit) =>
    Effect.promise(async () => {
      const response = await handler(new Request(`http://listings.test${path}`, init))
      const text = await response.text()
      return { status: response.status, headers: response.headers, body: text === "" ? undefined : JSON.parse(text) }
    })
})

const test = (
  title: string,
  body: () => Effect.Effect<void, unknown, Offers | OfferStore | SourceHealthLookup | ImportServices | Ingest | ListingsConfig | Scope.Scope>
) => it.live(title, () => Effect.provide(Effect.scoped(body()), memoryServices))

const market = Effect.all([
  write("alpha", [
    record({ nativeId: "golf", make: "Volkswagen", model: "Golf", mileage: 90_000, updatedAt: new Date(minute(2)).toISOString() }),
    record({ nativeId: "polo", make: "Volkswagen", model: "Polo", mileage: 30_000, updatedAt: new Date(minute(1)).toISOString() }),
    record({ nativeId: "yaris", make: "Toyota", model: "Yaris", fuel: "hybrid", updatedAt: new Date(minute(3)).toISOString() })
  ])
])

describe("listings HTTP handlers (memory layers)", () => {
  test("GET /offers lists newest first with the count; the same answer again is 304 with its ETag", () =>
    Effect.gen(function*() {
      yield* market
      const get = yield* api
      const list = yield* get("/offers?limit=2")
      assert.strictEqual(list.status, 200)
      const body = Schema.decodeUnknownSync(OffersResponse)(list.body)
      assert.deepStrictEqual([body.count, body.offers.map((offer) => offer.id), body.warnings], [3, ["alpha:yaris", "alpha:golf"], null])
      const etag = list.headers.get("etag")
      assert.isNotNull(etag)
      assert.strictEqual(list.headers.get("cache-control"), "no-cache")
      const again = yield* get("/offers?limit=2", { headers: { "if-none-match": etag! } })
      assert.strictEqual(again.status, 304)
    }))

  test("filters and sorts reach the reads; unknown sources are warned about", () =>
    Effect.gen(function*() {
      yield* market
      const get = yield* api
      const vw = Schema.decodeUnknownSync(OffersResponse)((yield* get("/offers?make=VOLKSWAGEN&sort=MILEAGE_ASC")).body)
      assert.deepStrictEqual(vw.offers.map((offer) => offer.id), ["alpha:polo", "alpha:golf"])
      const hybrid = Schema.decodeUnknownSync(OffersResponse)((yield* get("/offers?fuelTypes=Hybrid&query=yar")).body)
      assert.deepStrictEqual(hybrid.offers.map((offer) => offer.id), ["alpha:yaris"])
      const warned = Schema.decodeUnknownSync(OffersResponse)((yield* get("/offers?sources=alpha,nope")).body)
      assert.deepStrictEqual([warned.count, warned.warnings], [3, ["Unknown source id: nope"]])
    }))

  test("a query parameter GET /offers does not take is named in warnings, the rest applied", () =>
    Effect.gen(function*() {
      yield* market
      const get = yield* api
      const misspelt = Schema.decodeUnknownSync(OffersResponse)((yield* get("/offers?make=toyota&fuelType=diesel&Make=vw")).body)
      assert.deepStrictEqual(misspelt.offers.map((offer) => offer.id), ["alpha:yaris"])
      assert.deepStrictEqual(misspelt.warnings, ["Unknown query parameters ignored: fuelType, Make"])
      const both = Schema.decodeUnknownSync(OffersResponse)((yield* get("/offers?sources=nope&_=1&_=2")).body)
      assert.deepStrictEqual(both.warnings, ["Unknown source id: nope", "Unknown query parameter ignored: _"])
      const many = Array.from({ length: 12 }, (_, i) => `x${i}=1`).join("&")
      assert.deepStrictEqual(
        (yield* get(`/offers?limit=0&${many}`)).body.warnings,
        ["Unknown query parameters ignored: x0, x1, x2, x3, x4, x5, x6, x7, x8, x9 and 2 more"]
      )
      // every documented parameter is taken without a warning
      const all = "query=golf&make=volkswagen&model=golf&minPrice=1&maxPrice=2&minYear=2000&maxYear=2030&maxMileageKm=100000" +
        "&fuelTypes=petrol&transmissions=manual&regions=mazowieckie&sources=alpha&sort=NEWEST&dedup=true&complete=false&limit=5&offset=0"
      const full = yield* get(`/offers?${all}`)
      assert.deepStrictEqual([full.body.count, full.body.warnings], [1, null])
    }))

  test("an invalid query is 400 invalid_request naming the parameter", () =>
    Effect.gen(function*() {
      const get = yield* api
      const bad = yield* get("/offers?limit=ten&sort=CHEAPEST")
      assert.strictEqual(bad.status, 400)
      assert.strictEqual(bad.body.code, "invalid_request")
      assert.include(JSON.stringify(bad.body), "limit")
      assert.include(JSON.stringify(bad.body), "sort")
      // The range of a page is checked once the query is well formed (complete=true ignores it).
      const outside = yield* get("/offers?limit=201&offset=-1")
      assert.strictEqual(outside.status, 400)
      assert.deepStrictEqual(outside.body.issues.map((issue: { parameter: string }) => issue.parameter), ["limit", "offset"])
      assert.strictEqual((yield* get("/offers?complete=true&limit=201&offset=-1")).status, 200)
      // beyond int4 too, the problem tells the range a page takes (it told int4's, -2147483648 to 2147483647)
      const huge = yield* get(`/offers?limit=${"9".repeat(400)}&offset=-1000000000000`)
      assert.strictEqual(huge.status, 400)
      assert.deepStrictEqual(huge.body.issues.map((issue: { problem: string }) => issue.problem), [
        "is out of range: must be an integer from 0 to 200",
        "is out of range: must be an integer from 0 to 2147483647"
      ])
    }))

  test("the numbers of the /offers query are decimal digits: 1e1, 10.0, +5, ' 10', 0x10 are a 400 naming the parameter and the value", () =>
    Effect.gen(function*() {
      yield* market
      const get = yield* api
      // JavaScript's number parsing read these as 10, 10, 5 and 2000 (an outside audit)
      const integers = ["1e1", "10.0", "+5", " 10", "10 ", "0x10", "", "1_0", "Infinity", "2e3"]
      const decimals = ["1e1", "+5", " 10", "0x10", "", ".5", "5.", "-1", "1,5", "Infinity"]
      const cases: ReadonlyArray<readonly [string, ReadonlyArray<string>, string]> = [
        ["limit", integers, "must be an integer from 0 to 200 in decimal digits"],
        ["offset", integers, "must be an integer from 0 to 2147483647 in decimal digits"],
        ["minYear", [...integers, "-5"], "must be a whole number from 0 to 9999 in decimal digits only"],
        ["maxYear", [...integers, "-5"], "must be a whole number from 0 to 9999 in decimal digits only"],
        ["minPrice", decimals, "must be a number from 0 to 10000000000 in decimal digits"],
        ["maxPrice", decimals, "must be a number from 0 to 10000000000 in decimal digits"],
        ["maxMileageKm", decimals, "must be a number from 0 to 2147483647 in decimal digits"]
      ]
      for (const [name, values, rule] of cases) {
        for (const value of values) {
          // complete=true too: there limit and offset take any integer, but not another syntax
          for (const extra of name === "limit" || name === "offset" ? ["", "&complete=true"] : [""]) {
            const path = `/offers?${name}=${encodeURIComponent(value)}${extra}`
            const refused = yield* get(path)
            assert.strictEqual(refused.status, 400, `${path}: ${JSON.stringify(refused.body)}`)
            assert.strictEqual(refused.body.code, "invalid_request", path)
            assert.deepStrictEqual(refused.body.issues.map((issue: any) => issue.parameter), [name], path)
            assert.include(refused.body.issues[0].problem, rule, path)
            assert.include(refused.body.issues[0].problem, `got ${JSON.stringify(value)}`, path)
          }
        }
      }
      // what they take: digits, a fraction for prices and mileage, a '-' for limit and offset (the
      // handler names the range; complete=true ignores them)
      for (const query of ["limit=02&offset=0", "minYear=2000&maxYear=2030", "minPrice=12500.50&maxPrice=99999", "maxMileageKm=90000.5", "complete=true&limit=-3&offset=-0"]) {
        const answer = yield* get(`/offers?${query}`)
        assert.strictEqual(answer.status, 200, `${query}: ${JSON.stringify(answer.body)}`)
      }
      assert.strictEqual((yield* get("/offers?limit=02")).body.offers.length, 2)
      assert.deepStrictEqual((yield* get("/offers?maxMileageKm=30000.5")).body.offers.map((offer: any) => offer.id), ["alpha:polo"])
    }))

  test("/openapi.json: every numeric query parameter carries the decimal-digits pattern, none JavaScript's number syntax", () =>
    Effect.sync(() => {
      const document: any = listingsOpenApi()
      const numeric: Array<string> = []
      for (const [path, operations] of Object.entries<any>(document.paths)) {
        for (const operation of Object.values<any>(operations)) {
          for (const parameter of operation.parameters ?? []) {
            if (parameter.in !== "query") continue
            const pattern: string | undefined = parameter.schema?.pattern
            assert.isFalse(pattern !== undefined && /[Ee]/.test(pattern), `${path} ${parameter.name}: ${pattern}`)
            if (pattern !== undefined && pattern.startsWith("^") && pattern.includes("[0-9]+")) numeric.push(`${path} ${parameter.name} ${pattern}`)
          }
        }
      }
      assert.sameMembers(numeric, [
        "/offers minPrice ^[0-9]+(?:\\.[0-9]+)?$",
        "/offers maxPrice ^[0-9]+(?:\\.[0-9]+)?$",
        "/offers minYear ^[0-9]+$",
        "/offers maxYear ^[0-9]+$",
        "/offers maxMileageKm ^[0-9]+(?:\\.[0-9]+)?$",
        "/offers limit ^-?[0-9]+$",
        "/offers offset ^-?[0-9]+$"
      ])
    }))

  test("GET /offers/:id answers the CarOffer; an unknown id is 404 offer_not_found", () =>
    Effect.gen(function*() {
      yield* market
      const get = yield* api
      const found = yield* get("/offers/alpha:golf")
      assert.strictEqual(found.status, 200)
      const offer = Schema.decodeUnknownSync(CarOffer)(found.body)
      assert.deepStrictEqual([offer.id, offer.make, offer.model, offer.sourceId], ["alpha:golf", "Volkswagen", "Golf", "alpha"])
      const missing = yield* get("/offers/alpha:nope")
      assert.strictEqual(missing.status, 404)
      assert.strictEqual(missing.body.code, "offer_not_found")
    }))

  test("GET /import-services lists the directory by region, then name; a region filters", () =>
    Effect.gen(function*() {
      const get = yield* api
      const all = Schema.decodeUnknownSync(ImportServicesResponse)((yield* get("/import-services")).body)
      assert.deepStrictEqual(all.services.map((service) => service.id), ["a", "b"])
      const one = Schema.decodeUnknownSync(ImportServicesResponse)((yield* get("/import-services?region=SLASKIE")).body)
      assert.deepStrictEqual(one.services.map((service) => service.id), ["b"])
    }))

  it.live("a start without ENABLE_MOCK_SOURCE removes the demo offers an earlier start with it left; real offers stay", () =>
    Effect.gen(function*() {
      yield* market
      yield* write("mock", [record({ nativeId: "demo-1" }), record({ nativeId: "demo-2" })])
      const get = yield* api
      assert.strictEqual((yield* get("/offers")).body.count, 5)
      yield* (yield* Ingest).retireDemoOffers
      const after = Schema.decodeUnknownSync(OffersResponse)((yield* get("/offers")).body)
      assert.deepStrictEqual(after.offers.map((offer) => offer.id).sort(), ["alpha:golf", "alpha:polo", "alpha:yaris"])
      assert.strictEqual((yield* get("/offers/mock:demo-1")).status, 404)
      // Nothing left to unlist: a second start changes nothing.
      yield* (yield* Ingest).retireDemoOffers
      assert.strictEqual((yield* get("/offers")).body.count, 3)
    }).pipe(Effect.scoped, Effect.provide(servicesWith(Leases.layerMemory, false))))

  it.live("POST /admin/ingest while the database is down is 503 with Retry-After, not a run 'skipped, already_running'", () =>
    Effect.gen(function*() {
      const get = yield* api
      const answer = yield* get("/admin/ingest?sources=mock&wait=true", { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } })
      assert.strictEqual(answer.status, 503, JSON.stringify(answer.body))
      assert.strictEqual(answer.body.code, "service_unavailable")
      assert.strictEqual(answer.headers.get("retry-after"), "5")
    }).pipe(Effect.scoped, Effect.provide(servicesWith(leasesDown))))

  test("POST /admin/ingest needs the token; a run's statistics show in GET /sources and the offers", () =>
    Effect.gen(function*() {
      const get = yield* api
      const before = Schema.decodeUnknownSync(SourcesResponse)((yield* get("/sources")).body)
      assert.deepStrictEqual(before.sources.map((source) => [source.id, source.offerCount, source.lastCompletedOk]), [["alpha", 0, null], ["mock", 0, null]])
      const refused = yield* get("/admin/ingest?sources=mock&wait=true", { method: "POST" })
      assert.strictEqual(refused.status, 401)
      const run = yield* get("/admin/ingest?sources=mock&wait=true", { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } })
      assert.strictEqual(run.status, 200)
      assert.strictEqual(run.body.runs[0].status, "finished")
      assert.strictEqual(run.body.runs[0].outcome.offersUpserted, 40)
      const unknown = yield* get("/admin/ingest?sources=nope", { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } })
      assert.deepStrictEqual([unknown.status, unknown.body.code], [400, "unknown_sources"])
      const after = Schema.decodeUnknownSync(SourcesResponse)((yield* get("/sources")).body)
      const mock = after.sources.find((source) => source.id === "mock")
      assert.deepStrictEqual([mock?.offerCount, mock?.lastCompletedOk, mock?.lastOffersUpserted], [40, true, 40])
      const offers = Schema.decodeUnknownSync(OffersResponse)((yield* get("/offers?sources=mock&dedup=false&limit=0")).body)
      assert.strictEqual(offers.count, 40)
    }))
})
