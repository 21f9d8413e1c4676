/**
 * No 500 on any input (issue 16, items 16-17): the inputs an outside sweep found answered with a 500
 * are now a 400 `invalid_request` naming the parameter, and property-based requests (fast-check) at
 * every public route of listings — hostile strings, numbers, NULs, huge values, unknown parameters,
 * raw escapes — never get a 5xx, always get the suite's error body, and never see a stack, SQL or a
 * path. Against the real handlers on a fresh database, over a socket.
 */
import { assert, layer } from "@effect/vitest"
import { RequestFuzz } from "@svc/platform/testing"
import { Effect, Layer } from "effect"
import { ADMIN_TOKEN, Client, get, record, seed, services, socketClient, TestDatabase } from "./support.ts"

const { fc } = RequestFuzz

const Seeded = Layer.effectDiscard(Effect.andThen(
  seed("alpha", [
    record({ nativeId: "a1", title: "Mercedes-Benz C 200", make: "Mercedes-Benz", model: "C 200", fuel: "diesel" }),
    record({ nativeId: "a2", title: "Škoda Octavia 1.6 TDI", make: "Škoda", model: "Octavia", region: "slaskie" }),
    record({ nativeId: "a3", title: "Toyota Corolla", year: null, mileage: null })
  ]),
  seed("beta", [record({ nativeId: "b1", title: "Fiat 500e", make: "Fiat", model: "500", fuel: "electric" })])
))

// One disabled source: a POST /admin/ingest the fuzz lets through starts no run.
const stack = services({
  adminToken: ADMIN_TOKEN,
  sources: [{ id: "off", adapter: "json", url: "http://127.0.0.1:9/off.json", enabled: false }]
}).pipe(Layer.provideMerge(TestDatabase.layer()))
// Over a real socket, as the sweep was: node's own parsing is part of what a client meets.
const TestLayer = socketClient(Layer.mergeAll(stack, Seeded.pipe(Layer.provide(stack)))) as Layer.Layer<Client, unknown>

const OFFERS_PARAMS = [
  "query", "make", "model", "minPrice", "maxPrice", "minYear", "maxYear", "maxMileageKm", "fuelTypes",
  "transmissions", "regions", "sources", "sort", "dedup", "complete", "limit", "offset"
]

/** Requests a path (already encoded) of the service under test and checks the answer. */
const request = (client: Client["Service"], path: string, init?: RequestInit): Promise<void> =>
  Effect.runPromise(client.fetch(path, init)).then((response) => RequestFuzz.checkResponse(init?.method ?? "GET", path, response)).then(() => undefined)

const expectInvalid = (path: string, parameter: string) =>
  Effect.map(get(path), (answer) => RequestFuzz.checkInvalid(`GET ${path}`, answer, parameter))

layer(TestLayer, { excludeTestServices: true, timeout: 120_000 })("listings: no 500 on any input", (it) => {
  it.effect("a NUL in a text or list filter is 400 naming the parameter", () =>
    Effect.gen(function*() {
      for (const parameter of ["make", "model", "fuelTypes", "transmissions", "regions", "sources", "query"]) {
        yield* expectInvalid(`/offers?${parameter}=a%00b`, parameter)
      }
    }))

  it.effect("a NUL in /offers/:id and /import-services?region is 400 naming the parameter", () =>
    Effect.gen(function*() {
      yield* expectInvalid("/offers/a%00b", "id")
      yield* expectInvalid("/import-services?region=%00", "region")
    }))

  it.effect("a NUL in /images/:key is the same 400 naming the path parameter, never a 404 echoing it", () =>
    Effect.gen(function*() {
      const key = "a".repeat(64)
      for (const path of ["/images/%00", `/images/${key}%00`, `/images/%00${key}`, "/offers/%00"]) {
        const answer = yield* get(path)
        RequestFuzz.checkInvalid(`GET ${path}`, answer, path.startsWith("/images") ? "key" : "id", "path")
        assert.include(answer.body.message, "must not contain a NUL character", path)
        // not echoed: no "key" field, no NUL in any text of the answer
        assert.isUndefined(answer.body.key, path)
        assert.notInclude([answer.body.message, ...answer.body.issues.map((issue: any) => issue.problem)].join(" "), "\u0000", path)
      }
      // not a key, no NUL: still 404
      const unknown = yield* get("/images/nope")
      assert.strictEqual(unknown.status, 404)
      assert.strictEqual(unknown.body.code, "image_not_found")
    }))

  it.effect("a 10 KB word in /offers?query is 400 naming query; a long folded word finds nothing", () =>
    Effect.gen(function*() {
      yield* expectInvalid(`/offers?query=${"a".repeat(10_240)}`, "query")
      // within the length bound but folded into a word longer than any offer's (NFKD: six letters each)
      const folded = yield* get(`/offers?query=${encodeURIComponent("\u3316".repeat(80))}`)
      assert.strictEqual(folded.status, 200, folded.text)
      assert.deepStrictEqual([folded.body.count, folded.body.offers], [0, []])
      // the longest word that can match still searches
      const found = yield* get("/offers?query=octavia")
      assert.strictEqual(found.body.count, 1)
    }))

  it.effect("integers beyond the columns' range are 400 naming the parameter", () =>
    Effect.gen(function*() {
      for (
        const [query, parameter] of [
          ["minYear=99999999999", "minYear"],
          ["maxYear=-99999999999", "maxYear"],
          ["offset=99999999999999999999", "offset"],
          ["maxMileageKm=1e300", "maxMileageKm"],
          ["minPrice=-1", "minPrice"],
          ["limit=1e3", "limit"],
          ["fuelTypes=" + Array.from({ length: 51 }, (_, i) => `f${i}`).join(","), "fuelTypes"],
          ["regions=" + "r".repeat(201), "regions"],
          ["make=" + "m".repeat(201), "make"]
        ] as const
      ) {
        yield* expectInvalid(`/offers?${query}`, parameter)
      }
      // in range: still answered
      const { status } = yield* get("/offers?minYear=1900&maxYear=2100&maxMileageKm=1.5&offset=2147483647")
      assert.strictEqual(status, 200)
    }))

  it.effect("POST /admin/ingest?sources with a NUL is 400 naming sources", () =>
    Effect.gen(function*() {
      const { status, body } = yield* get("/admin/ingest?sources=alpha%00", {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` }
      })
      assert.strictEqual(status, 400)
      assert.include(body.issues.map((issue: any) => issue.parameter), "sources")
    }))

  it.effect("a request line over node's 16 KiB is 431 with the suite's error body (not node's empty answer)", () =>
    Effect.gen(function*() {
      const { status, headers, body } = yield* get(`/offers?query=${"a".repeat(20_000)}`)
      assert.strictEqual(status, 431)
      assert.strictEqual(headers.get("content-type"), "application/json")
      assert.strictEqual(body.code, "request_header_fields_too_large")
      assert.isString(body.message)
    }))

  it.effect("property: GET /offers with any query parameters", () =>
    Effect.gen(function*() {
      const client = yield* Client
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(RequestFuzz.queryString(OFFERS_PARAMS), (query) => request(client, `/offers${query}`)),
          RequestFuzz.fuzzParameters(300)
        )
      )
    }))

  it.effect("property: GET /offers with NULs and huge values in its text and list parameters", () =>
    Effect.gen(function*() {
      const client = yield* Client
      const text = ["query", "make", "model", "fuelTypes", "transmissions", "regions", "sources"]
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(
            fc.constantFrom(...text),
            RequestFuzz.nulOrHuge.filter((value) => !RequestFuzz.LEAK_MARKERS.some((marker) => marker.test(value))),
            (name, value) => request(client, `/offers?${name}=${RequestFuzz.percentEncode(value)}`)
          ),
          RequestFuzz.fuzzParameters(100)
        )
      )
    }))

  it.effect("property: GET /offers/:id, /images/:key, /import-services, /sources, /health, /openapi.json", () =>
    Effect.gen(function*() {
      const client = yield* Client
      const path = fc.oneof(
        fc.tuple(RequestFuzz.pathSegment, RequestFuzz.queryString([])).map(([id, query]) => `/offers/${id}${query}`),
        fc.tuple(RequestFuzz.pathSegment, RequestFuzz.queryString([])).map(([key, query]) => `/images/${key}${query}`),
        RequestFuzz.queryString(["region"]).map((query) => `/import-services${query}`),
        fc.constantFrom("/sources", "/health", "/openapi.json").chain((route) =>
          RequestFuzz.queryString(["x"]).map((query) => `${route}${query}`)
        )
      )
      yield* Effect.promise(() =>
        fc.assert(fc.asyncProperty(path, (path) => request(client, path)), RequestFuzz.fuzzParameters(300))
      )
    }))

  it.effect("property: POST /admin/ingest with any query, token or none", () =>
    Effect.gen(function*() {
      const client = yield* Client
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(
            RequestFuzz.queryString(["sources", "wait"]),
            fc.constantFrom(`Bearer ${ADMIN_TOKEN}`, "Bearer wrong", "", "Basic x"),
            (query, authorization) =>
              request(client, `/admin/ingest${query}`, {
                method: "POST",
                headers: authorization === "" ? {} : { authorization }
              })
          ),
          RequestFuzz.fuzzParameters(150)
        )
      )
    }))

  it.effect("property: any method at any path", () =>
    Effect.gen(function*() {
      const client = yield* Client
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(
            RequestFuzz.anyRequest(["", "/offers", "/images", "/admin", "/import-services"], ["limit", "query"]),
            ({ init, path }) => request(client, path, init)
          ),
          RequestFuzz.fuzzParameters(200)
        )
      )
    }))
})
