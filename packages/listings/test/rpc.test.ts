/**
 * The internal RPC at POST /rpc over a real socket: TriggerIngest (with and without wait) and
 * SourceHealth with the admin token; a wrong or missing token is refused before any run starts, and so
 * is a body declared in a charset other than UTF-8 (415).
 */
import { assert, layer } from "@effect/vitest"
import { type IngestEvent, ListingsRpcs } from "@svc/schema"
import { Effect, Layer, Redacted, Stream } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { RpcClient, RpcSerialization } from "effect/rpc"
import { SqlClient } from "effect/sql"
import * as IngestClient from "../src/IngestClient.ts"
import { ADMIN_TOKEN, Client, get, httpServer, services, socketClient, TestDatabase } from "./support.ts"

let feedRequests = 0
const Feed = Layer.unwrap(Effect.gen(function*() {
  const base = yield* httpServer((_req, res) => {
    feedRequests++
    // slow enough for progress events (every 500 ms)
    setTimeout(() => {
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify([1, 2, 3].map((n) => ({
        id: `r${n}`,
        title: `Kia Ceed ${n}`,
        make: "Kia",
        model: "Ceed",
        price: 30_000 + n,
        currency: "PLN",
        fuel: "petrol",
        transmission: "manual",
        region: "slaskie",
        originalUrl: `https://feed.example/r${n}`
      }))))
    }, 1200)
  })
  return services({
    sources: [{ id: "rpcfeed", adapter: "json", url: `${base}/feed` }, { id: "rpcoff", adapter: "json", url: `${base}/x`, enabled: false }],
    adminToken: ADMIN_TOKEN
  })
}))
const stack = Feed.pipe(Layer.provideMerge(TestDatabase.layer()))
const TestLayer = socketClient(stack).pipe(Layer.provideMerge(stack)) as Layer.Layer<Client | SqlClient.SqlClient, unknown>

/** A raw ListingsRpcs client with `token` (for SourceHealth, which the CLI does not call). */
const rpcClient = (url: string, token: string) =>
  RpcClient.make(ListingsRpcs).pipe(
    Effect.provide(
      RpcClient.layerProtocolHttp({ url }).pipe(
        Layer.provide(RpcSerialization.layerNdjson),
        Layer.provide(
          Layer.effect(
            HttpClient.HttpClient,
            Effect.map(HttpClient.HttpClient, HttpClient.mapRequest(HttpClientRequest.bearerToken(token)))
          ).pipe(Layer.provide(FetchHttpClient.layer))
        )
      )
    )
  )

layer(TestLayer, { excludeTestServices: true })("rpc", (it) => {
  it.effect("TriggerIngest with wait streams Run, Progress and Finished; SourceHealth reflects the run", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* Client
      const events: Array<IngestEvent> = []
      yield* IngestClient.trigger({
        url: `${baseUrl}/rpc`,
        token: Redacted.make(ADMIN_TOKEN),
        wait: true,
        onEvent: (event) => Effect.sync(() => events.push(event))
      })
      assert.deepStrictEqual(events[0], { _tag: "Run", run: { sourceId: "rpcfeed", status: "started" } })
      assert.isTrue(events.some((e) => e._tag === "Progress" && e.sourceId === "rpcfeed"), JSON.stringify(events))
      const finished = events.at(-1)!
      assert.strictEqual(finished._tag, "Finished")
      if (finished._tag === "Finished") {
        assert.deepInclude(finished.outcome, { ok: true, offersFetched: 3, offersUpserted: 3, recordsRejected: 0 })
      }
      assert.include(events.map(IngestClient.describe), "rpcfeed: started")

      // a named disabled source is skipped, without wait only Run events come back
      const quick: Array<IngestEvent> = []
      yield* IngestClient.trigger({
        url: `${baseUrl}/rpc`,
        token: Redacted.make(ADMIN_TOKEN),
        sources: ["rpcoff"],
        wait: false,
        onEvent: (event) => Effect.sync(() => quick.push(event))
      })
      assert.deepStrictEqual(quick, [{ _tag: "Run", run: { sourceId: "rpcoff", status: "skipped", reason: "disabled" } }])

      const client = yield* rpcClient(`${baseUrl}/rpc`, ADMIN_TOKEN)
      const { sources } = yield* client.SourceHealth()
      const health = sources.find((s) => s.id === "rpcfeed")!
      assert.deepInclude(health, { enabled: true, offerCount: 3, lastCompletedOk: true, lastOffersUpserted: 3 })
      assert.isNumber(health.lastCompletedAtEpochMs)
      assert.deepInclude(sources.find((s) => s.id === "rpcoff")!, { enabled: false })
    }))

  it.effect("a wrong or missing token is refused (401) and starts nothing", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* Client
      const sql = yield* SqlClient.SqlClient
      const before = feedRequests
      const [{ n: runsBefore }] = (yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM listings.ingest_runs`) as any
      const events: Array<IngestEvent> = []
      const refused = yield* IngestClient.trigger({
        url: `${baseUrl}/rpc`,
        token: Redacted.make("not-the-token"),
        wait: true,
        onEvent: (event) => Effect.sync(() => events.push(event))
      }).pipe(Effect.flip)
      assert.strictEqual(refused._tag, "RpcClientError")
      assert.deepStrictEqual(events, [])

      const client = yield* rpcClient(`${baseUrl}/rpc`, "not-the-token")
      const health = yield* client.SourceHealth().pipe(Effect.flip)
      assert.strictEqual(health._tag, "RpcClientError")

      for (const authorization of ["Bearer not-the-token", ""]) {
        const raw = yield* get("/rpc", {
          method: "POST",
          headers: { "content-type": "application/ndjson", ...(authorization ? { authorization } : {}) },
          body: JSON.stringify({ _tag: "Request", id: "1", tag: "TriggerIngest", payload: { wait: false }, headers: [] }) + "\n"
        })
        assert.strictEqual(raw.status, 401)
      }
      yield* Effect.sleep("100 millis")
      assert.strictEqual(feedRequests, before, "no feed was read")
      const [{ n: runsAfter }] = (yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM listings.ingest_runs`) as any
      assert.strictEqual(runsAfter, runsBefore)
    }))

  it.effect("a source list naming no source, or a key TriggerIngest does not take, is refused naming it, and starts nothing ([] and `source` ran every source, [\" \"] none)", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const before = feedRequests
      const [{ n: runsBefore }] = (yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM listings.ingest_runs`) as any
      const cases: ReadonlyArray<readonly [Record<string, unknown>, RegExp]> = [
        ...[[], [" "], ["", "\t"]].map((sources) => [{ sources, wait: false }, /payload\.sources.*names no source/] as const),
        [{ source: ["rpcfeed"], wait: false }, /line 1 payload\.source\b/]
      ]
      for (const [payload, named] of cases) {
        const raw = yield* get("/rpc", {
          method: "POST",
          headers: { "content-type": "application/ndjson", authorization: `Bearer ${ADMIN_TOKEN}` },
          body: JSON.stringify({ _tag: "Request", id: "1", tag: "TriggerIngest", payload, headers: [] }) + "\n"
        })
        assert.strictEqual(raw.status, 400, JSON.stringify(payload))
        assert.match(raw.body.message, named, JSON.stringify(payload))
      }
      yield* Effect.sleep("100 millis")
      assert.strictEqual(feedRequests, before, "no feed was read")
      const [{ n: runsAfter }] = (yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM listings.ingest_runs`) as any
      assert.strictEqual(runsAfter, runsBefore)
    }))

  it.effect("a body declared in a charset other than UTF-8 is 415 naming it and starts nothing; charset=utf-8 (any case, quoted) as before", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const runs = Effect.map(sql<{ n: number }>`SELECT count(*)::int AS n FROM listings.ingest_runs`, (rows) => rows[0]!.n)
      const before = feedRequests
      const runsBefore = yield* runs
      const line = `${JSON.stringify({ _tag: "Request", id: "1", tag: "TriggerIngest", payload: { sources: ["rpcfeed"], wait: true }, headers: [] })}\n`
      const post = (body: string | Uint8Array, charset: string) =>
        get("/rpc", {
          method: "POST",
          headers: { "content-type": `application/ndjson; charset=${charset}`, authorization: `Bearer ${ADMIN_TOKEN}` },
          body: body as BodyInit
        })
      // the line in UTF-16LE with a byte order mark, as a client that meant its charset sends it
      const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(line, "utf16le")])
      for (const charset of ["utf-16", "iso-8859-1", "shift_jis"]) {
        const refused = yield* post(utf16, charset)
        assert.strictEqual(refused.status, 415, refused.text)
        assert.strictEqual(refused.body.code, "unsupported_media_type")
        assert.include(refused.body.message, `charset "${charset}" is not supported: send the JSON body as UTF-8`)
      }
      yield* Effect.sleep("100 millis")
      assert.strictEqual(feedRequests, before, "no feed was read")
      assert.strictEqual(yield* runs, runsBefore)
      // UTF-8, by any spelling: read, and the run waited for
      for (const charset of ["UTF-8", "\"utf-8\""]) {
        const read = yield* post(line, charset)
        assert.strictEqual(read.status, 200, read.text)
        assert.include(read.text, "\"Finished\"", charset)
      }
      assert.strictEqual(yield* runs, runsBefore + 2)
    }))
})
