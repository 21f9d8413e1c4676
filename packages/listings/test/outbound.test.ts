/**
 * Outbound requests of the listings service through the suite's outbound guard, against two local
 * servers (two ports: two origins; nothing connects anywhere but 127.0.0.1):
 * - feeds: a next-page link to another origin is not followed (unless the source lists the origin in
 *   `pageOrigins`, and even then without the credential); a redirect to another origin drops the
 *   credential (JSON and CSV);
 * - images with `LISTINGS_ALLOW_PRIVATE=false`: a table of disguised loopback URLs (and redirects to
 *   them) is refused, nothing fetched, nothing stored, GET /images/<key> answers 404, never a redirect to it;
 * - mock sources' demo images are never fetched.
 */
import { assert, layer } from "@effect/vitest"
import { OutboundGuard } from "@svc/platform"
import { Context, Duration, Effect, Layer, Option, Result, Schedule, Stream } from "effect"
import { HttpClient } from "effect/http"
import { SqlClient } from "effect/sql"
import type * as Http from "node:http"
import { feedGet } from "../src/adapters/http.ts"
import { ImageCacher, ImageStore } from "../src/Images.ts"
import { Ingest } from "../src/Ingest.ts"
import { type FeedRecord, imageKey, normalize } from "../src/Normalize.ts"
import { OfferStore } from "../src/OfferStore.ts"
import type { SourceConfig } from "../src/Sources.ts"
import { pngBytes } from "./imageBytes.ts"
import { Client, httpServer, record, services, socketClient, TestDatabase } from "./support.ts"

const KEY_ENV = "LISTINGS_OUTBOUND_TEST_KEY"
process.env[KEY_ENV] = "partner-secret-key"

interface Seen {
  readonly path: string
  readonly headers: Http.IncomingHttpHeaders
}

class Servers extends Context.Service<Servers, {
  readonly a: string
  readonly b: string
  readonly portB: number
  readonly seenA: Array<Seen>
  readonly seenB: Array<Seen>
  readonly stored: Map<string, Uint8Array>
}>()("test/OutboundServers") {}

const PNG = pngBytes(64, 48, 64)

const offer = (id: string) => ({
  id,
  title: `Skoda Octavia ${id}`,
  make: "Skoda",
  model: "Octavia",
  price: 40_000,
  currency: "PLN",
  fuel: "diesel",
  transmission: "manual",
  region: "pomorskie",
  originalUrl: `https://partner.example/${id}`
})

/** Both servers answer the same routes; `/to/<url>` redirects there. */
const route = (self: () => string, other: () => string) => (path: string, res: Http.ServerResponse) => {
  const json = (body: unknown) => {
    res.writeHead(200, { "content-type": "application/json" })
    res.end(JSON.stringify(body))
  }
  if (path.startsWith("/to/")) {
    const target = decodeURIComponent(path.slice(4))
    // a header carries no full-width digits: those go out as the URL parser writes them
    res.writeHead(302, { location: /^[\x20-\x7e]*$/.test(target) ? target : new URL(target).href })
    return res.end()
  }
  switch (path) {
    case "/leaky/page1":
      return json({ items: [offer("l1")], next: `${other()}/leaky/page2` })
    case "/leaky/page2":
      return json({ items: [offer("l2")], next: null })
    case "/allowed/page1":
      return json({ items: [offer("a1")], next: `${other()}/allowed/page2` })
    case "/allowed/page2":
      return json({ items: [offer("a2")], next: null })
    case "/final.json":
      return json({ items: [offer("r1")] })
    case "/export.csv":
      res.writeHead(200, { "content-type": "text/csv" })
      return res.end(
        "nativeId,title,make,model,price,currency,fuel,transmission,region,originalUrl\n" +
          "c1,Skoda Octavia,Skoda,Octavia,40000,PLN,diesel,manual,pomorskie,https://partner.example/c1\n"
      )
    case "/feed.json": // a real feed for the image tests: one offer, one image on this server
      return json({ items: [{ ...offer("img1"), images: [`${self()}/ok.png`] }] })
    case "/ok.png":
      res.writeHead(200, { "content-type": "image/png", "content-length": PNG.length })
      return res.end(PNG)
    default:
      res.writeHead(404)
      return res.end()
  }
}

const ServersLive = Layer.effect(
  Servers,
  Effect.gen(function*() {
    const seenA: Array<Seen> = []
    const seenB: Array<Seen> = []
    let a = ""
    let b = ""
    const handler = (seen: Array<Seen>, answer: (path: string, res: Http.ServerResponse) => void) =>
    (req: Http.IncomingMessage, res: Http.ServerResponse) => {
      seen.push({ path: req.url ?? "", headers: req.headers })
      answer(req.url ?? "/", res)
    }
    a = yield* httpServer(handler(seenA, route(() => a, () => b)))
    b = yield* httpServer(handler(seenB, route(() => b, () => a)))
    return Servers.of({ a, b, portB: Number(new URL(b).port), seenA, seenB, stored: new Map() })
  })
)

/** An image store in memory: what was put, by key. */
const memoryStore = Layer.effect(
  ImageStore,
  Effect.map(Effect.service(Servers), ({ stored }) =>
    ImageStore.of({
      enabled: true,
      put: (key, body) => Effect.sync(() => void stored.set(key, body)),
      get: (key) =>
        Effect.sync(() =>
          Option.map(Option.fromUndefinedOr(stored.get(key)), (body) => ({
            body: Stream.make(body),
            contentLength: body.length
          }))
        )
    }))
)

const cacher = ImageCacher.layerWith({
  concurrency: 4,
  maxBytes: 1 << 20,
  timeout: Duration.seconds(5),
  retryBase: Duration.millis(20)
})

/** Writes offers of `sourceId`, one per image URL, registering the images as a feed's would be. */
const seedImages = (sourceId: string, urls: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const store = yield* OfferStore
    const rows = []
    const images = []
    for (const url of urls) {
      const result = normalize(sourceId, record({ images: [url] }) as FeedRecord)
      if (Result.isFailure(result)) return yield* Effect.die(new Error(`bad fixture ${url}: ${result.failure}`))
      rows.push(result.success.row)
      images.push(...result.success.images)
    }
    yield* store.upsertBatch(sourceId, rows, images)
  })

const imageRows = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ original_url: string; source_id: string; status: string; attempts: number }>`
    SELECT original_url, source_id, status, attempts FROM listings.images`
  return new Map(rows.map((row) => [row.original_url, row]))
})

const waitSettled = (urls: ReadonlyArray<string>) =>
  imageRows.pipe(
    Effect.filterOrFail(
      (rows) => urls.every((url) => ["cached", "rejected"].includes(rows.get(url)?.status ?? "")),
      (rows) => new Error(`not settled: ${JSON.stringify(urls.map((url) => rows.get(url)))}`)
    ),
    Effect.retry({ schedule: Schedule.spaced("50 millis"), times: 200 })
  )

const runSource = (id: string) =>
  Effect.gen(function*() {
    const ingest = yield* Ingest
    const [handle] = yield* ingest.trigger({ sources: [id], trigger: "manual" })
    return yield* Option.getOrThrow(handle!.outcome)
  })

// -----------------------------------------------------------------------------
// Feeds (private hosts allowed: both servers are on 127.0.0.1)
// -----------------------------------------------------------------------------

const feedSources = (a: string, b: string): ReadonlyArray<SourceConfig> => {
  const auth = { env: KEY_ENV, header: "X-Api-Key" }
  return [
    { id: "leaky", adapter: "json", url: `${a}/leaky/page1`, auth, nextPagePath: "next" },
    { id: "allowed", adapter: "json", url: `${a}/allowed/page1`, auth, nextPagePath: "next", pageOrigins: [b] },
    { id: "redirected", adapter: "json", url: `${a}/to/${encodeURIComponent(`${b}/final.json`)}`, auth },
    { id: "same", adapter: "json", url: `${a}/to/${encodeURIComponent(`${a}/final.json`)}`, auth },
    {
      id: "csvredirect",
      adapter: "csv",
      url: `${a}/to/${encodeURIComponent(`${b}/export.csv`)}`,
      auth: { env: KEY_ENV } // Authorization: Bearer …
    }
  ]
}

const FeedStack = Layer.unwrap(Effect.gen(function*() {
  const { a, b } = yield* Servers
  return services({ sources: feedSources(a, b) })
})).pipe(Layer.provideMerge(ServersLive), Layer.provideMerge(TestDatabase.layer())) as Layer.Layer<
  Servers | Ingest | SqlClient.SqlClient,
  unknown
>

layer(FeedStack, { excludeTestServices: true, timeout: 60_000 })("feeds", (it) => {
  it.effect("a next-page link to another origin is not followed: the key never leaves, the run fails", () =>
    Effect.gen(function*() {
      const servers = yield* Servers
      const before = servers.seenB.length
      const outcome = yield* runSource("leaky")
      assert.strictEqual(outcome.ok, false)
      assert.strictEqual(servers.seenB.length, before, "the other origin was asked")
      const first = servers.seenA.find((seen) => seen.path === "/leaky/page1")
      assert.strictEqual(first?.headers["x-api-key"], "partner-secret-key")
    }))

  it.effect("an origin listed in pageOrigins is followed, without the credential", () =>
    Effect.gen(function*() {
      const servers = yield* Servers
      const outcome = yield* runSource("allowed")
      assert.strictEqual(outcome.ok, true)
      assert.strictEqual(outcome.offersUpserted, 2)
      const page2 = servers.seenB.find((seen) => seen.path === "/allowed/page2")
      assert.isDefined(page2)
      assert.isUndefined(page2!.headers["x-api-key"])
      assert.strictEqual(servers.seenA.find((seen) => seen.path === "/allowed/page1")?.headers["x-api-key"], "partner-secret-key")
    }))

  it.effect("a redirect to another origin drops the credential (JSON: X-Api-Key, CSV: Authorization)", () =>
    Effect.gen(function*() {
      const servers = yield* Servers
      assert.strictEqual((yield* runSource("redirected")).ok, true)
      assert.strictEqual((yield* runSource("csvredirect")).ok, true)
      const json = servers.seenB.find((seen) => seen.path === "/final.json")
      const csv = servers.seenB.find((seen) => seen.path === "/export.csv")
      assert.isDefined(json)
      assert.isDefined(csv)
      assert.isUndefined(json!.headers["x-api-key"])
      assert.isUndefined(csv!.headers.authorization)
      // the first hop, on the feed's origin, had them
      const hops = servers.seenA.filter((seen) => seen.path.startsWith("/to/"))
      assert.isTrue(hops.some((seen) => seen.headers["x-api-key"] === "partner-secret-key"))
      assert.isTrue(hops.some((seen) => seen.headers.authorization === "Bearer partner-secret-key"))
    }))

  it.effect("a feed that cannot be reached is said without its URL's query (a key there reached the log)", () =>
    Effect.gen(function*() {
      // a host that does not resolve: the HTTP client's own message names the URL it asked, query included
      const url = "http://feed.invalid/feed.json?api_key=QUERYSECRET"
      const failure = yield* HttpClient.HttpClient.use((client) => Effect.flip(feedGet(client, url, { id: "querykey", adapter: "json", url }))).pipe(
        Effect.provide(OutboundGuard.layerHttpClient({ allowPrivate: true }))
      )
      assert.strictEqual(failure.kind, "unreachable")
      assert.match(failure.message, /^http:\/\/feed\.invalid\/feed\.json: /)
      assert.notInclude(failure.message, "QUERYSECRET")
      assert.notInclude(failure.message, "api_key")
    }))

  it.effect("a redirect within the origin keeps it", () =>
    Effect.gen(function*() {
      const servers = yield* Servers
      assert.strictEqual((yield* runSource("same")).ok, true)
      const final = servers.seenA.filter((seen) => seen.path === "/final.json")
      assert.isTrue(final.some((seen) => seen.headers["x-api-key"] === "partner-secret-key"))
    }))
})

// -----------------------------------------------------------------------------
// Images, LISTINGS_ALLOW_PRIVATE=false (the service's own guarded client)
// -----------------------------------------------------------------------------

const disguisesOf = (port: number): ReadonlyArray<string> => [
  `http://127.0.0.1:${port}/ok.png`,
  `http://localhost:${port}/ok.png`,
  `http://LOCALHOST:${port}/ok.png`,
  `http://localhost.:${port}/ok.png`,
  `http://img.localhost:${port}/ok.png`,
  `http://2130706433:${port}/ok.png`,
  `http://0x7f000001:${port}/ok.png`,
  `http://0x7f.1:${port}/ok.png`,
  `http://0177.0.0.1:${port}/ok.png`,
  `http://127.1:${port}/ok.png`,
  `http://127.0.1:${port}/ok.png`,
  `http://127.0.0.1.:${port}/ok.png`,
  `http://[::1]:${port}/ok.png`,
  `http://[::ffff:127.0.0.1]:${port}/ok.png`,
  `http://[::ffff:7f00:1]:${port}/ok.png`,
  `http://[::127.0.0.1]:${port}/ok.png`,
  `http://[2002:7f00:1::]:${port}/ok.png`,
  `http://[64:ff9b::7f00:1]:${port}/ok.png`,
  `http://example.com@127.0.0.1:${port}/ok.png`,
  `http://user:pw@localhost:${port}/ok.png`,
  `http://0.0.0.0:${port}/ok.png`,
  `http://0:${port}/ok.png`,
  `http://127.0.0.1%2e:${port}/ok.png`, // percent-encoded trailing dot
  `http://%31%32%37.0.0.1:${port}/ok.png`, // percent-encoded digits
  `http://017700000001:${port}/ok.png`, // octal, one part
  `http://0x7f.0x0.0x0.0x1:${port}/ok.png`, // hex, every part
  `http://①②⑦.0.0.1:${port}/ok.png`, // full-width digits
  `http://127.255.255.254:${port}/ok.png`, // the rest of 127/8
  `http://[::ffff:127.0.0.2]:${port}/ok.png`,
  `http://[0:0:0:0:0:ffff:7f00:1]:${port}/ok.png`,
  `http://[2001:0:4136:e378:8000:63bf:80ff:fffe]:${port}/ok.png`, // Teredo, client 127.0.0.1
  `http://a.b.localhost:${port}/ok.png`,
  `http://LocalHost.:${port}/ok.png`
]

const PrivateOffStack = Layer.unwrap(Effect.gen(function*() {
  return services({ sources: [], allowPrivate: false, imageStore: memoryStore, cacher })
})).pipe(Layer.provideMerge(ServersLive), Layer.provideMerge(TestDatabase.layer()))
const PrivateOff = socketClient(PrivateOffStack).pipe(Layer.provideMerge(PrivateOffStack)) as Layer.Layer<
  Client | Servers | ImageCacher | OfferStore | SqlClient.SqlClient,
  unknown
>

layer(PrivateOff, { excludeTestServices: true, timeout: 60_000 })("images, private hosts not allowed", (it) => {
  it.effect("disguised loopback image URLs: refused, nothing fetched or stored, GET /images does not redirect to them (404)", () =>
    Effect.gen(function*() {
      const servers = yield* Servers
      const urls = disguisesOf(servers.portB)
      assert.isAtLeast(urls.length, 30)
      yield* seedImages("feedsrc", urls)
      const rows = yield* imageRows
      const registered = urls.map((url) => [...rows.keys()].find((stored) => stored === new URL(url).href) ?? url)
      const cacherService = yield* ImageCacher
      yield* cacherService.runPass
      yield* waitSettled(registered)
      const after = yield* imageRows
      for (const url of registered) assert.strictEqual(after.get(url)?.status, "rejected", url)
      assert.strictEqual(servers.seenB.length, 0, "an image was fetched from loopback")
      assert.strictEqual(servers.stored.size, 0)
      const client = yield* Client
      for (const url of registered) {
        const response = yield* client.fetch(`/images/${imageKey(url)}`)
        assert.strictEqual(response.status, 404, url)
        assert.isNull(response.headers.get("location"), url)
      }
    }))
})

// -----------------------------------------------------------------------------
// Images, a redirect to loopback; mock images (server A is an explicit exception of the guard)
// -----------------------------------------------------------------------------

const names: Record<string, ReadonlyArray<OutboundGuard.ResolvedAddress>> = {
  "loopback.test.invalid": [{ address: "127.0.0.1", family: 4 }],
  "mapped.test.invalid": [{ address: "::ffff:127.0.0.1", family: 6 }]
}
const resolve: OutboundGuard.Resolve = async (hostname) => {
  const found = names[hostname.toLowerCase()]
  if (found === undefined) throw Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: "ENOTFOUND" })
  return found
}

const ExceptionStack = Layer.unwrap(Effect.gen(function*() {
  const { a } = yield* Servers
  return services({
    sources: [{ id: "mock", adapter: "mock", count: 20 }, { id: "realfeed", adapter: "json", url: `${a}/feed.json` }],
    allowPrivate: false,
    imageStore: memoryStore,
    cacher,
    httpClient: OutboundGuard.layerHttpClient({ allowPrivate: false, allowOrigins: [a], resolve })
  }).pipe(Layer.provideMerge(Layer.succeed(OutboundGuard.Resolver, resolve)))
})).pipe(Layer.provideMerge(ServersLive), Layer.provideMerge(TestDatabase.layer()))
const Exception = socketClient(ExceptionStack).pipe(Layer.provideMerge(ExceptionStack)) as Layer.Layer<
  Client | Servers | ImageCacher | OfferStore | Ingest | SqlClient.SqlClient,
  unknown
>

layer(Exception, { excludeTestServices: true, timeout: 60_000 })("images, every redirect hop checked", (it) => {
  it.effect("a 302 to loopback (in disguise, or a name resolving there) is refused; the target never asked", () =>
    Effect.gen(function*() {
      const servers = yield* Servers
      const port = servers.portB
      const targets = [
        ...disguisesOf(port),
        `http://loopback.test.invalid:${port}/ok.png`,
        `http://mapped.test.invalid:${port}/ok.png`
      ]
      const urls = targets.map((target) => `${servers.a}/to/${encodeURIComponent(target)}`)
      const direct = [`http://loopback.test.invalid:${port}/ok.png`, `http://mapped.test.invalid:${port}/ok.png`]
      const ok = `${servers.a}/ok.png`
      yield* seedImages("redirects", [...urls, ...direct, ok])
      const cacherService = yield* ImageCacher
      yield* cacherService.runPass
      yield* waitSettled([...urls, ...direct, ok])
      const rows = yield* imageRows
      for (const url of [...urls, ...direct]) assert.strictEqual(rows.get(url)?.status, "rejected", url)
      assert.strictEqual(rows.get(ok)?.status, "cached", "the allowed origin's image is cached")
      assert.strictEqual(servers.seenB.length, 0, "a redirect target on loopback was asked")
      assert.isTrue(servers.seenA.filter((seen) => seen.path.startsWith("/to/")).length >= urls.length)
      assert.deepStrictEqual([...servers.stored.keys()], [imageKey(ok)])
      const client = yield* Client
      // its original is on loopback (server A, an exception of this test's fetching client only): not redirected to
      const response = yield* client.fetch(`/images/${imageKey(urls[0]!)}`)
      assert.strictEqual(response.status, 404)
      // nor to a name that resolves to loopback (only literal addresses and local names were caught)
      for (const url of direct) {
        const named = yield* client.fetch(`/images/${imageKey(url)}`)
        assert.strictEqual(named.status, 404, url)
        assert.isNull(named.headers.get("location"), url)
      }
    }))

  it.effect("mock offers' demo images are registered but never fetched; real feed images are", () =>
    Effect.gen(function*() {
      const servers = yield* Servers
      assert.strictEqual((yield* runSource("mock")).ok, true)
      const real = `${servers.a}/ok.png`
      assert.strictEqual((yield* runSource("realfeed")).ok, true)
      const cacherService = yield* ImageCacher
      yield* cacherService.runPass
      yield* waitSettled([real])
      const rows = [...(yield* imageRows).values()]
      const mock = rows.filter((row) => row.source_id === "mock")
      assert.isAbove(mock.length, 10)
      for (const row of mock) {
        assert.strictEqual(row.status, "pending", row.original_url)
        assert.strictEqual(row.attempts, 0, row.original_url)
      }
      const client = yield* Client
      const demo = mock[0]!.original_url
      const response = yield* client.fetch(`/images/${imageKey(demo)}`)
      assert.strictEqual(response.status, 302)
      assert.strictEqual(response.headers.get("location"), demo)
    }))
})
