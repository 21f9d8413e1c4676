/**
 * Ingest against local HTTP feeds: JSON (paginated) and CSV with field mapping, broken records,
 * a feed failing midway, expiry after a successful full run, recorded runs, POST /admin/ingest
 * (auth, 202, wait, unknown and disabled sources), and manual + scheduled at once -> one run.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Duration, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type * as Http from "node:http"
import { Ingest, IngestScheduler } from "../src/Ingest.ts"
import type { ListingsConfig } from "../src/ListingsConfig.ts"
import { ADMIN_TOKEN, Client, get, httpServer, inProcessClient, services, TestDatabase } from "./support.ts"
import type { SourceConfig } from "../src/Sources.ts"

process.env["LISTINGS_TEST_FEED_TOKEN"] = "feed-secret"
// small enough for a test to pass them quickly; the feeds of the other tests stay far below
process.env["FEED_MAX_BYTES"] = "2000000"
process.env["FEED_TIMEOUT"] = "2 seconds"

/** What each feed path answers; tests replace entries. */
const feeds = new Map<string, (req: Http.IncomingMessage, res: Http.ServerResponse) => void>()
const json = (body: unknown, delayMs = 0) => (_req: Http.IncomingMessage, res: Http.ServerResponse) => {
  setTimeout(() => {
    res.writeHead(200, { "content-type": "application/json" })
    res.end(JSON.stringify(body))
  }, delayMs)
}
const text = (body: string) => (_req: Http.IncomingMessage, res: Http.ServerResponse) => {
  res.writeHead(200, { "content-type": "text/csv" })
  res.end(body)
}
const requestsSeen: Array<{ path: string; authorization: string | undefined }> = []

const jsonOffer = (id: string, extra: Record<string, unknown> = {}) => ({
  ref: id,
  name: `Volkswagen Golf ${id}`,
  vehicle: { brand: "Volkswagen", model: "Golf", year: 2017, km: "120 000" },
  pricing: { amount: "45000", currency: "pln" },
  fuel: "diesel",
  gearbox: "manual",
  url: `https://feed.example/${id}`,
  photos: [{ src: `https://img.feed.example/${id}.jpg` }],
  ...extra
})

const makeSources = (base: string): ReadonlyArray<SourceConfig> => [
  {
    id: "jsonfeed",
    adapter: "json",
    url: `${base}/json/page1`,
    auth: { env: "LISTINGS_TEST_FEED_TOKEN" },
    itemsPath: "data.items",
    nextPagePath: "data.next",
    fields: {
      nativeId: "ref",
      title: "name",
      make: "vehicle.brand",
      model: "vehicle.model",
      year: "vehicle.year",
      mileage: "vehicle.km",
      price: "pricing.amount",
      currency: "pricing.currency",
      transmission: "gearbox",
      originalUrl: "url",
      images: "photos[].src"
    },
    defaults: { region: "wielkopolskie" }
  },
  {
    id: "csvfeed",
    adapter: "csv",
    url: `${base}/csv`,
    delimiter: ";",
    fields: { nativeId: "Nr", title: "Tytul", make: "Marka", model: "Model", price: "Cena", year: "Rok", mileage: "Przebieg", originalUrl: "Link", images: "Zdjecia", fuel: "Paliwo" },
    defaults: { currency: "PLN", transmission: "manual", region: "pomorskie" }
  },
  { id: "slow", adapter: "json", url: `${base}/slow` },
  { id: "disabled", adapter: "json", url: `${base}/never`, enabled: false }
]

const FeedServer = Layer.unwrap(Effect.gen(function*() {
  const base = yield* httpServer((req, res) => {
    const path = (req.url ?? "").split("?")[0]!
    requestsSeen.push({ path, authorization: req.headers.authorization })
    const handler = feeds.get(path)
    if (handler === undefined) {
      res.writeHead(404)
      res.end()
    } else handler(req, res)
  })
  return services({ sources: makeSources(base), adminToken: ADMIN_TOKEN, batchSize: 2, feedMaxDuration: Duration.seconds(5) })
}))

const stack = FeedServer.pipe(Layer.provideMerge(TestDatabase.layer()))
const TestLayer = inProcessClient(stack).pipe(Layer.provideMerge(stack)) as Layer.Layer<
  Client | Ingest | SqlClient.SqlClient | ListingsConfig,
  unknown
>

const post = (path: string, token: string | null = ADMIN_TOKEN) =>
  get(path, { method: "POST", headers: token === null ? {} : { authorization: `Bearer ${token}` } })

const runOnce = Effect.fn(function*(source: string) {
  const ingest = yield* Ingest
  const [handle] = yield* ingest.trigger({ sources: [source], trigger: "manual" })
  assert.strictEqual(handle!.run.status, "started")
  return yield* Option.getOrThrow(handle!.outcome)
})

const offersOf = Effect.fn(function*(source: string) {
  const { body } = yield* get(`/offers?sources=${source}&dedup=false&complete=true`)
  return body.offers as Array<any>
})

/** A feed that writes `head`, then `piece` every few milliseconds until the client goes away. */
const endless = (head: string, piece: string, type = "text/csv") => (req: Http.IncomingMessage, res: Http.ServerResponse) => {
  res.writeHead(200, { "content-type": type })
  res.write(head)
  const timer = setInterval(() => res.write(piece), 2)
  req.socket.on("close", () => clearInterval(timer))
}

/** The last run of `source`: ok and failure category. */
const lastRun = (source: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ ok: boolean; failure: string | null }>`
      SELECT ok, failure FROM listings.ingest_runs WHERE source_id = ${source} ORDER BY id DESC LIMIT 1`
    return row
  })

// real clock: runs wait on sockets, lease renewals and timeouts
layer(TestLayer, { excludeTestServices: true })("ingest", (it) => {
  it.effect("a feed without end fails its run, bounded: a field that never ends, a page past FEED_MAX_BYTES, a body that stalls", () =>
    Effect.gen(function*() {
      // a CSV field streamed forever: refused once it passes 1 MiB, long before memory matters
      feeds.set("/csv", endless("Nr;Tytul\nc1;", "x".repeat(65536)))
      let outcome = yield* runOnce("csvfeed").pipe(Effect.timeout("30 seconds"))
      assert.isFalse(outcome.ok)
      assert.deepStrictEqual(yield* lastRun("csvfeed"), { ok: false, failure: "malformed" })
      // whole CSV rows forever: refused at FEED_MAX_BYTES (2 MB here). Long rows (64 KB, under the field
      // cap), so the cap comes after ~30 records: with short ones, validating ~100,000 records on a busy
      // machine outlasted FEED_MAX_DURATION and the run failed as a timeout instead
      feeds.set("/csv", endless("Nr;Tytul;Marka\n", `c;${"x".repeat(65_536)};Opel\n`))
      outcome = yield* runOnce("csvfeed").pipe(Effect.timeout("30 seconds"))
      assert.isFalse(outcome.ok)
      assert.deepStrictEqual(yield* lastRun("csvfeed"), { ok: false, failure: "malformed" })
      // stopped by the byte cap: the rows that fit in 2 MB were read (the field cap reads none)
      assert.isAtLeast(outcome.offersFetched, 20)
      assert.isAtMost(outcome.offersFetched, 31)
      // a JSON page that never ends: the same cap (it was read whole into memory)
      feeds.set("/json/page1", endless("{\"data\":{\"items\":[", `${JSON.stringify(jsonOffer("j"))},`.repeat(200), "application/json"))
      outcome = yield* runOnce("jsonfeed").pipe(Effect.timeout("30 seconds"))
      assert.deepStrictEqual(yield* lastRun("jsonfeed"), { ok: false, failure: "malformed" })
      // headers, then silence: FEED_TIMEOUT (2 s here) between two pieces of the body
      feeds.set("/json/page1", (_req, res) => {
        res.writeHead(200, { "content-type": "application/json" })
        res.write("{\"data\":")
      })
      outcome = yield* runOnce("jsonfeed").pipe(Effect.timeout("30 seconds"))
      assert.deepStrictEqual(yield* lastRun("jsonfeed"), { ok: false, failure: "timeout" })
      // a byte every half second never stalls for FEED_TIMEOUT: FEED_MAX_DURATION (5 s here) ends it
      feeds.set("/csv", (req, res) => {
        res.writeHead(200, { "content-type": "text/csv" })
        res.write("Nr;Tytul;Marka\n")
        const timer = setInterval(() => res.write("x"), 500)
        req.socket.on("close", () => clearInterval(timer))
      })
      outcome = yield* runOnce("csvfeed").pipe(Effect.timeout("30 seconds"))
      assert.deepStrictEqual(yield* lastRun("csvfeed"), { ok: false, failure: "timeout" })
    }))

  it.effect("JSON feed: pages, mapping, defaults, credentials; broken records skipped and counted", () =>
    Effect.gen(function*() {
      feeds.set("/json/page1", json({
        data: {
          items: [
            jsonOffer("j1"),
            jsonOffer("j2", { photos: [] }),
            jsonOffer("bad1", { pricing: { currency: "PLN" } }), // no price
            "not an object"
          ],
          next: "/json/page2"
        }
      }))
      feeds.set("/json/page2", json({
        data: { items: [jsonOffer("j3"), jsonOffer("bad2", { pricing: { amount: 5, currency: "GBP" } })], next: null }
      }))
      const outcome = yield* runOnce("jsonfeed")
      assert.strictEqual(outcome.ok, true)
      assert.strictEqual(outcome.offersFetched, 6)
      assert.strictEqual(outcome.recordsRejected, 3)
      assert.strictEqual(outcome.offersUpserted, 3)
      assert.strictEqual(outcome.offersExpired, 0)
      assert.isTrue(requestsSeen.some((r) => r.path === "/json/page1" && r.authorization === "Bearer feed-secret"))

      const offers = yield* offersOf("jsonfeed")
      assert.deepStrictEqual(offers.map((o) => o.id).sort(), ["jsonfeed:j1", "jsonfeed:j2", "jsonfeed:j3"])
      const j1 = offers.find((o) => o.id === "jsonfeed:j1")
      assert.include(j1, {
        sourceId: "jsonfeed", title: "Volkswagen Golf j1", make: "Volkswagen", model: "Golf", price: 45000,
        currency: "PLN", fuel: "diesel", transmission: "manual", region: "wielkopolskie", year: 2017,
        mileage: 120000, originalUrl: "https://feed.example/j1"
      })
      assert.strictEqual(j1.images.length, 1)

      // an unchanged second run rewrites nothing
      const again = yield* runOnce("jsonfeed")
      assert.strictEqual(again.offersUpserted, 0)

      // j2 vanished from a successful full run: expired, no longer listed
      feeds.set("/json/page2", json({ data: { items: [jsonOffer("j3")], next: null } }))
      feeds.set("/json/page1", json({ data: { items: [jsonOffer("j1")], next: "/json/page2" } }))
      const third = yield* runOnce("jsonfeed")
      assert.strictEqual(third.offersExpired, 1)
      assert.deepStrictEqual((yield* offersOf("jsonfeed")).map((o) => o.id).sort(), ["jsonfeed:j1", "jsonfeed:j3"])
    }))

  it.effect("a feed failing midway: what was read is kept, nothing is expired, the run is recorded as failed", () =>
    Effect.gen(function*() {
      feeds.set("/json/page1", json({ data: { items: [jsonOffer("j1", { name: "changed title" })], next: "/json/page2" } }))
      feeds.set("/json/page2", (_req, res) => {
        res.writeHead(500)
        res.end("boom at /srv/feed.ts")
      })
      const outcome = yield* runOnce("jsonfeed")
      assert.strictEqual(outcome.ok, false)
      assert.strictEqual(outcome.offersExpired, 0)
      const offers = yield* offersOf("jsonfeed")
      // j3 (only on the failed page) is not expired; j1's change landed
      assert.deepStrictEqual(offers.map((o) => o.id).sort(), ["jsonfeed:j1", "jsonfeed:j3"])
      assert.strictEqual(offers.find((o) => o.id === "jsonfeed:j1").title, "changed title")
      const sql = yield* SqlClient.SqlClient
      const [last] = yield* sql<{ ok: boolean; failure: string; offers_upserted: number }>`
        SELECT ok, failure, offers_upserted FROM listings.ingest_runs WHERE source_id = 'jsonfeed'
        ORDER BY id DESC LIMIT 1`
      assert.deepStrictEqual(last, { ok: false, failure: "http_status", offers_upserted: 1 })
      const sources = (yield* get("/sources")).body.sources
      const health = sources.find((s: any) => s.id === "jsonfeed")
      assert.strictEqual(health.lastCompletedOk, false)
      assert.strictEqual(health.offerCount, 2)
      assert.notInclude(JSON.stringify(sources), "boom")
    }))

  it.effect("CSV feed: quoting, delimiter, column mapping, image lists; a bad row is skipped", () =>
    Effect.gen(function*() {
      feeds.set(
        "/csv",
        text(
          "\uFEFFNr;Tytul;Marka;Model;Cena;Rok;Przebieg;Link;Zdjecia;Paliwo\r\n" +
            "c1;\"Audi A4; \"\"Quattro\"\"\nfull options\";Audi;A4;\"55 000\";2016;140000;https://csv.example/c1;https://i.example/c1a.jpg|https://i.example/c1b.jpg;diesel\r\n" +
            "c2;Opel Astra;Opel;Astra;21000,50;abc;90000;https://csv.example/c2;;petrol\r\n" +
            "c3;Opel Corsa;Opel;Corsa;18000;2014;;https://csv.example/c3;;lpg\n"
        )
      )
      const outcome = yield* runOnce("csvfeed")
      assert.deepStrictEqual(
        { ok: outcome.ok, fetched: outcome.offersFetched, rejected: outcome.recordsRejected, upserted: outcome.offersUpserted },
        { ok: true, fetched: 3, rejected: 1, upserted: 2 }
      )
      const offers = yield* offersOf("csvfeed")
      const c1 = offers.find((o) => o.id === "csvfeed:c1")
      assert.strictEqual(c1.title, "Audi A4; \"Quattro\" full options")
      assert.strictEqual(c1.price, 55000)
      assert.strictEqual(c1.images.length, 2)
      assert.strictEqual(c1.region, "pomorskie")
      const c3 = offers.find((o) => o.id === "csvfeed:c3")
      assert.strictEqual(c3.mileage, null)
    }))

  it.effect("a CSV body that breaks off midway fails the run without expiring anything", () =>
    Effect.gen(function*() {
      feeds.set("/csv", (_req, res) => {
        res.writeHead(200, { "content-type": "text/csv", "content-length": "100000" })
        res.write("Nr;Tytul;Marka;Model;Cena;Rok;Przebieg;Link;Zdjecia;Paliwo\nc1;Audi A4;Audi;A4;56000;2016;140000;https://csv.example/c1;;diesel\n")
        setTimeout(() => res.destroy(), 50)
      })
      const outcome = yield* runOnce("csvfeed")
      assert.strictEqual(outcome.ok, false)
      assert.strictEqual(outcome.offersExpired, 0)
      assert.deepStrictEqual((yield* offersOf("csvfeed")).map((o) => o.id).sort(), ["csvfeed:c1", "csvfeed:c3"])
    }))

  it.effect("POST /admin/ingest: 401 without or with a wrong token, 400 unknown source, 202 runs, 200 outcomes with wait=true", () =>
    Effect.gen(function*() {
      const missing = yield* post("/admin/ingest?sources=jsonfeed", null)
      assert.strictEqual(missing.status, 401)
      assert.strictEqual(missing.body.code, "unauthorized")
      const wrong = yield* post("/admin/ingest?sources=jsonfeed", "nope")
      assert.strictEqual(wrong.status, 401)
      const unknown = yield* post("/admin/ingest?sources=jsonfeed,ghost")
      assert.strictEqual(unknown.status, 400)
      assert.strictEqual(unknown.body.code, "unknown_sources")
      assert.deepStrictEqual(unknown.body.sourceIds, ["ghost"])
      // a list naming no source, or a parameter the route does not take, ran every source: refused, nothing run
      const runsBefore = (yield* SqlClient.SqlClient.use((sql) => sql<{ n: number }>`SELECT count(*)::int4 AS n FROM listings.ingest_runs`))[0]!.n
      for (const [query, parameter] of [["sources=", "sources"], ["sources=%20,%20", "sources"], ["sources=%0B", "sources"], ["source=jsonfeed", "source"], ["Sources=jsonfeed", "Sources"], ["wiat=true", "wiat"]]) {
        const refused = yield* post(`/admin/ingest?${query}`)
        assert.strictEqual(refused.status, 400, query)
        assert.strictEqual(refused.body.code, "invalid_request", query)
        assert.deepStrictEqual(refused.body.issues.map((issue: any) => issue.parameter), [parameter], query)
      }
      const runsAfter = (yield* SqlClient.SqlClient.use((sql) => sql<{ n: number }>`SELECT count(*)::int4 AS n FROM listings.ingest_runs`))[0]!.n
      assert.strictEqual(runsAfter, runsBefore)

      feeds.set("/json/page1", json({ data: { items: [jsonOffer("j1")], next: null } }))
      // waited for: 200 with how each run ended (not 202 "started" next to a finished outcome)
      const waited = yield* post("/admin/ingest?sources=jsonfeed,disabled&wait=true")
      assert.strictEqual(waited.status, 200)
      assert.deepStrictEqual(waited.body.runs.map((r: any) => [r.sourceId, r.status, r.reason]), [
        ["jsonfeed", "finished", undefined],
        ["disabled", "skipped", "disabled"]
      ])
      assert.strictEqual(waited.body.runs[0].outcome.ok, true)
      assert.strictEqual(waited.body.runs[0].outcome.offersExpired, 1)
      assert.isAtLeast(waited.body.waitedMs, 0)
      // only skipped runs, waited for: still the 200 answer
      const skippedOnly = yield* post("/admin/ingest?sources=disabled&wait=true")
      assert.strictEqual(skippedOnly.status, 200)
      assert.deepStrictEqual(skippedOnly.body.runs, [{ sourceId: "disabled", status: "skipped", reason: "disabled" }])
      // not waited for: 202, the runs started
      const started = yield* post("/admin/ingest?sources=jsonfeed")
      assert.strictEqual(started.status, 202)
      assert.deepStrictEqual(started.body, { runs: [{ sourceId: "jsonfeed", status: "started" }] })
      yield* (yield* Ingest).awaitIdle
    }))

  it.effect("manual and scheduled ingest of one source at once: exactly one run", () =>
    Effect.gen(function*() {
      feeds.set("/slow", json({ offers: [{ ...jsonOffer("s1"), nativeId: "s1", title: "t", make: "Kia", model: "Ceed", price: 1, currency: "EUR", transmission: "manual", region: "usa", originalUrl: "https://s.example/1" }] }, 600))
      const sql = yield* SqlClient.SqlClient
      const ingest = yield* Ingest
      yield* Effect.scoped(Effect.gen(function*() {
        // the scheduler's first pass starts every enabled source, while two manual triggers come in
        yield* Layer.build(IngestScheduler)
        const [manual, viaHttp] = yield* Effect.all([
          ingest.trigger({ sources: ["slow"], trigger: "manual" }),
          post("/admin/ingest?sources=slow")
        ], { concurrency: "unbounded" })
        const started = [manual[0]!.run, viaHttp.body.runs[0]].filter((run) => run.status === "started")
        assert.isAtMost(started.length, 1)
        for (const run of [manual[0]!.run, viaHttp.body.runs[0]]) {
          if (run.status === "skipped") assert.strictEqual(run.reason, "already_running")
        }
        yield* Effect.sleep("100 millis")
        yield* ingest.awaitIdle
        const runs = yield* sql<{ trigger: string; ok: boolean }>`
          SELECT trigger, ok FROM listings.ingest_runs WHERE source_id = 'slow'`
        assert.deepStrictEqual(runs, [{ trigger: started.length === 1 ? "manual" : "scheduled", ok: true }])
      }))
      // the lease is released after the run: the next one starts
      const next = yield* ingest.trigger({ sources: ["slow"], trigger: "manual" })
      assert.strictEqual(next[0]!.run.status, "started")
      yield* ingest.awaitIdle
    }))

  it.effect("an offer listed twice in one feed keeps its first record; the second is counted as rejected", () =>
    Effect.gen(function*() {
      // batch size 2: the two records of d1 land in different batches, which are written concurrently
      feeds.set("/json/page1", json({
        data: { items: [jsonOffer("d1", { name: "first title" }), jsonOffer("d2"), jsonOffer("d1", { name: "second title" })], next: null }
      }))
      feeds.delete("/json/page2")
      const outcome = yield* runOnce("jsonfeed")
      assert.deepStrictEqual(
        { ok: outcome.ok, fetched: outcome.offersFetched, rejected: outcome.recordsRejected, upserted: outcome.offersUpserted },
        { ok: true, fetched: 3, rejected: 1, upserted: 2 }
      )
      const offers = yield* offersOf("jsonfeed")
      assert.deepStrictEqual(offers.map((o) => o.id).sort(), ["jsonfeed:d1", "jsonfeed:d2"])
      assert.strictEqual(offers.find((o) => o.id === "jsonfeed:d1").title, "first title")
    }))
})

describe("admin without ADMIN_TOKEN", () => {
  const noToken = services({ sources: [{ id: "x", adapter: "json", url: "http://127.0.0.1:9/x" }] }).pipe(
    Layer.provideMerge(TestDatabase.layer())
  )
  layer(inProcessClient(noToken) as Layer.Layer<Client, unknown>)("disabled", (it) => {
    it.effect("POST /admin/ingest refuses with 503 and says why", () =>
      Effect.gen(function*() {
        const { status, body } = yield* post("/admin/ingest?sources=x")
        assert.strictEqual(status, 503)
        assert.strictEqual(body.code, "service_unavailable")
        assert.match(body.message, /ADMIN_TOKEN/)
        const rpc = yield* get("/rpc", { method: "POST", body: "{}" })
        assert.strictEqual(rpc.status, 503)
      }))
  })
})
