/**
 * Images against the run's radosgw (through `@svc/blob`'s Bucket) and a local image server:
 * caching after ingest (bytes equal the source), GET /images/:key (stream, ETag, Cache-Control, 304),
 * 302 when known but not cached, 404 when unknown, images left pending or claimed by a stopped process, size/content-type/dimension limits (the image bomb:
 * a tiny PNG or JPEG whose header declares absurd dimensions), retried transient failures, and that
 * GET /images never fetches anything on demand.
 */
import { assert, layer } from "@effect/vitest"
import { Bucket } from "@svc/blob"
import { formatBlobToken } from "@svc/blob"
import { LocalObjectStorage, OutboundGuard } from "@svc/platform"
import { makeFreshBucket, TestObjectStorage } from "@svc/platform/testing"
import { Context, Duration, Effect, Layer, Option, Redacted, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { randomBytes } from "node:crypto"
import type * as Http from "node:http"
import { ImageCacher, ImageStore } from "../src/Images.ts"
import { Ingest } from "../src/Ingest.ts"
import { imageKey } from "../src/Normalize.ts"
import { jpegBytes, pngBomb, pngBytes } from "./imageBytes.ts"
import { Client, get, httpServer, services, socketClient, TestDatabase } from "./support.ts"

const MAX_BYTES = 4096
const png = (size: number) => pngBytes(1200, 800, size)

const okPng = png(1500)
const okJpeg = jpegBytes(1024, 768, 3000)
const hits = new Map<string, number>()
let flakyFailures = 2

/** The image server: what each path answers. */
const answer = (path: string, res: Http.ServerResponse) => {
  switch (path) {
    case "/ok.png":
      res.writeHead(200, { "content-type": "image/png", "content-length": okPng.length })
      return res.end(okPng)
    case "/flaky.jpg":
      if (flakyFailures-- > 0) {
        res.writeHead(503)
        return res.end("try later")
      }
      res.writeHead(200, { "content-type": "image/jpeg; charset=binary" })
      return res.end(okJpeg)
    case "/big.png": // declared over the limit
      res.writeHead(200, { "content-type": "image/png", "content-length": MAX_BYTES + 1 })
      return res.end(png(MAX_BYTES + 1))
    case "/big-chunked.png": // no length declared, the body runs over the limit
      res.writeHead(200, { "content-type": "image/png" })
      res.write(png(MAX_BYTES))
      return res.end(randomBytes(100))
    case "/page.html":
      res.writeHead(200, { "content-type": "text/html" })
      return res.end("<html><body>not an image</body></html>")
    case "/lying.png": // says png, is html: no PNG header to measure (and the bucket's leading-byte check)
      res.writeHead(200, { "content-type": "image/png" })
      return res.end("<html><body>not an image either, padded to look big enough</body></html>")
    case "/bomb.png": { // a well-formed PNG of 68 bytes declaring 2147483647 × 2147483647 px
      const bomb = pngBomb()
      res.writeHead(200, { "content-type": "image/png", "content-length": bomb.length })
      return res.end(bomb)
    }
    case "/huge.jpg": // a JPEG whose SOF0 declares 65535 × 65535 px (4.3 gigapixels)
      res.writeHead(200, { "content-type": "image/jpeg" })
      return res.end(jpegBytes(65535, 65535, 2000))
    case "/no-size.jpg": // JPEG signature and APP0, no SOF: dimensions cannot be read
      res.writeHead(200, { "content-type": "image/jpeg" })
      return res.end(jpegBytes(0, 0, 2000, { sof: false }))
    default:
      res.writeHead(404)
      return res.end()
  }
}

class Fixture extends Context.Service<Fixture, {
  readonly base: string
  readonly bucket: Bucket["Service"]
  readonly token: string
}>()("test/ImagesFixture") {}

const imagePaths = [
  "/ok.png",
  "/flaky.jpg",
  "/big.png",
  "/big-chunked.png",
  "/page.html",
  "/lying.png",
  "/bomb.png",
  "/huge.jpg",
  "/no-size.jpg"
]

const Stack = Layer.unwrap(Effect.gen(function*() {
  const base = yield* httpServer((req, res) => {
    const path = (req.url ?? "").split("?")[0]!
    hits.set(path, (hits.get(path) ?? 0) + 1)
    if (path === "/feed.json") {
      res.writeHead(200, { "content-type": "application/json" })
      return res.end(JSON.stringify({
        offers: [1, 2].map((n) => ({
          id: `img-${n}`,
          title: `Audi A4 ${n}`,
          make: "Audi",
          model: "A4",
          price: 60_000 + n,
          currency: "EUR",
          fuel: "petrol",
          transmission: "automatic",
          region: "bayern",
          originalUrl: `https://feed.example/${n}`,
          images: n === 1 ? imagePaths.slice(0, 3).map((p) => base + p) : imagePaths.slice(3).map((p) => base + p)
        }))
      }))
    }
    answer(path, res)
  })
  const storage = yield* LocalObjectStorage
  const name = yield* makeFreshBucket("offer-images")
  const token = formatBlobToken({
    endpoint: storage.endpoint,
    bucket: name,
    accessKeyId: storage.accessKeyId,
    secretAccessKey: Redacted.value(storage.secretAccessKey),
    region: storage.region
  })
  const bucket = yield* Bucket.make({ token })
  const servicesLayer = services({
    sources: [{ id: "imgfeed", adapter: "json", url: `${base}/feed.json` }],
    imageStore: ImageStore.layerBucket(token),
    cacher: ImageCacher.layerWith({
      concurrency: 2,
      maxBytes: MAX_BYTES,
      timeout: Duration.seconds(5),
      retryBase: Duration.millis(20)
    })
  })
  return Layer.mergeAll(servicesLayer, Layer.succeed(Fixture, Fixture.of({ base, bucket, token })))
})).pipe(Layer.provide(TestObjectStorage))

/** A second process's image cacher on the same database and bucket, started now (nothing kicks it). */
const startSecondCacher = (token: string) =>
  Layer.build(ImageCacher.layerWith({ concurrency: 1, maxBytes: MAX_BYTES, timeout: Duration.seconds(5), retryBase: Duration.millis(20) }).pipe(
    Layer.provide([ImageStore.layerBucket(token), OutboundGuard.layerHttpClient({ allowPrivate: true })])
  ))

/** The stored status of the image of `url`. */
const statusOf = (url: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ status: string }>`SELECT status FROM listings.images WHERE key = ${imageKey(url)}`
    return rows[0]?.status
  })

const stack = Stack.pipe(Layer.provideMerge(TestDatabase.layer()))
const TestLayer = socketClient(stack).pipe(Layer.provideMerge(stack)) as Layer.Layer<
  Client | Ingest | SqlClient.SqlClient | Fixture,
  unknown
>

const statuses = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ readonly original_url: string; readonly status: string }>`
    SELECT original_url, status FROM listings.images`
  return new Map(rows.map((row) => [new URL(row.original_url).pathname, row.status]))
})

layer(TestLayer, { excludeTestServices: true })("images", (it) => {
  it.effect("after ingest: cached in the bucket with the source's bytes; limits refuse the rest", () =>
    Effect.gen(function*() {
      const { base, bucket } = yield* Fixture
      const ingest = yield* Ingest
      const [handle] = yield* ingest.trigger({ trigger: "manual" })
      const outcome = yield* Option.getOrThrow(handle!.outcome)
      assert.strictEqual(outcome.ok, true)
      assert.strictEqual(outcome.offersUpserted, 2)

      // the background pass kicked by the ingest settles every image
      const settled = yield* statuses.pipe(
        Effect.filterOrFail(
          (map) => map.size === imagePaths.length && [...map.values()].every((s) => s === "cached" || s === "rejected"),
          (map) => new Error(`images not settled: ${JSON.stringify([...map])}`)
        ),
        Effect.retry({ schedule: Schedule.spaced("100 millis"), times: 200 })
      )
      assert.deepStrictEqual(Object.fromEntries(settled), {
        "/ok.png": "cached",
        "/flaky.jpg": "cached",
        "/big.png": "rejected",
        "/big-chunked.png": "rejected",
        "/page.html": "rejected",
        "/lying.png": "rejected",
        "/bomb.png": "rejected",
        "/huge.jpg": "rejected",
        "/no-size.jpg": "rejected"
      })
      assert.strictEqual(hits.get("/flaky.jpg"), 3, "two 503s retried, then stored")

      const stored = yield* bucket.getBytes(imageKey(`${base}/ok.png`))
      assert.deepStrictEqual(Buffer.from(stored), okPng)
      const info = yield* bucket.info(imageKey(`${base}/flaky.jpg`))
      assert.strictEqual(info.contentType, "image/jpeg")
      assert.strictEqual(info.size, okJpeg.length)
      for (const path of ["/big.png", "/big-chunked.png", "/page.html", "/lying.png", "/bomb.png", "/huge.jpg", "/no-size.jpg"]) {
        assert.isFalse(yield* bucket.exists(imageKey(base + path)), `${path} is not stored`)
      }
    }))

  it.effect("GET /images/:key streams with ETag and Cache-Control; If-None-Match is 304", () =>
    Effect.gen(function*() {
      const { base } = yield* Fixture
      const client = yield* Client
      const key = imageKey(`${base}/ok.png`)
      const response = yield* client.fetch(`/images/${key}`)
      assert.strictEqual(response.status, 200)
      const body = Buffer.from(yield* Effect.promise(() => response.arrayBuffer()))
      assert.deepStrictEqual(body, okPng)
      assert.strictEqual(response.headers.get("content-type"), "image/png")
      assert.strictEqual(response.headers.get("cache-control"), "public, max-age=86400")
      const etag = response.headers.get("etag")
      assert.match(etag ?? "", /^"[0-9a-f]{32}"$/)

      const again = yield* get(`/images/${key}`, { headers: { "if-none-match": etag! } })
      assert.strictEqual(again.status, 304)
      assert.strictEqual(again.text, "")
      assert.strictEqual(again.headers.get("etag"), etag)
      const other = yield* get(`/images/${key}`, { headers: { "if-none-match": "\"something-else\"" } })
      assert.strictEqual(other.status, 200)

      // the offer points at it
      const offers = yield* get("/offers?sources=imgfeed&dedup=false")
      const offer = offers.body.offers.find((o: any) => o.id === "imgfeed:img-1")
      assert.strictEqual(offer.images[0], `http://listings.test/images/${key}`)
      assert.strictEqual(offer.thumbnail, `http://listings.test/images/${key}`)
    }))

  it.effect("known but not cached: 302 to the original; unknown: 404; nothing is fetched on demand", () =>
    Effect.gen(function*() {
      const { base } = yield* Fixture
      const sql = yield* SqlClient.SqlClient
      for (const path of ["/big.png", "/page.html", "/lying.png", "/bomb.png", "/huge.jpg", "/no-size.jpg"]) {
        const response = yield* get(`/images/${imageKey(base + path)}`)
        assert.strictEqual(response.status, 302, path)
        assert.strictEqual(response.headers.get("location"), base + path)
      }
      // a known image no pass has reached yet (pending): redirected, and its URL is never requested
      const pendingUrl = `${base}/pending.png`
      yield* sql`INSERT INTO listings.images (key, original_url, source_id) VALUES (${imageKey(pendingUrl)}, ${pendingUrl}, 'imgfeed')`
      const before = new Map(hits)
      for (let i = 0; i < 3; i++) {
        const response = yield* get(`/images/${imageKey(pendingUrl)}`)
        assert.strictEqual(response.status, 302)
        assert.strictEqual(response.headers.get("location"), pendingUrl)
      }
      yield* get(`/images/${imageKey(`${base}/ok.png`)}`)
      yield* Effect.sleep("200 millis")
      assert.deepStrictEqual(hits, before, "GET /images made no request to the image server")
      assert.isUndefined(hits.get("/pending.png"))

      const unknown = yield* get(`/images/${"ab".repeat(32)}`)
      assert.strictEqual(unknown.status, 404)
      assert.strictEqual(unknown.body.code, "image_not_found")
      assert.strictEqual((yield* get("/images/not-a-key")).status, 404)
    }))

  it.effect("an image left pending by a stopped process is cached by the next process's first pass, with no ingest or kick", () =>
    Effect.gen(function*() {
      const { base, bucket, token } = yield* Fixture
      const sql = yield* SqlClient.SqlClient
      const url = `${base}/ok.png?left-pending`
      yield* sql`INSERT INTO listings.images (key, original_url, source_id) VALUES (${imageKey(url)}, ${url}, 'imgfeed')`
      // a second process's cacher, started now: nothing tells it of the image
      yield* startSecondCacher(token)
      assert.strictEqual(
        yield* statusOf(url).pipe(Effect.repeat({ schedule: Schedule.spaced("50 millis"), until: (s) => s === "cached" }), Effect.timeout("20 seconds")),
        "cached"
      )
      assert.deepStrictEqual(Buffer.from(yield* bucket.getBytes(imageKey(url))), okPng)
    }).pipe(Effect.scoped))

  it.effect("an image a killed process had claimed is cached when its claim's minute is up, with no ingest or kick", () =>
    Effect.gen(function*() {
      const { base, token } = yield* Fixture
      const sql = yield* SqlClient.SqlClient
      const url = `${base}/ok.png?claimed-by-a-killed-process`
      // claimed 56 s ago (attempt counted) by a process that died: not due at the first pass, due in ~4 s
      yield* sql`
        INSERT INTO listings.images (key, original_url, source_id, attempts, last_attempt_at)
        VALUES (${imageKey(url)}, ${url}, 'imgfeed', 1, now() - interval '56 seconds')`
      yield* startSecondCacher(token)
      assert.strictEqual(
        yield* statusOf(url).pipe(Effect.repeat({ schedule: Schedule.spaced("100 millis"), until: (s) => s === "cached" }), Effect.timeout("30 seconds")),
        "cached"
      )
    }).pipe(Effect.scoped))

  it.effect("a cached image gone from storage (local storage restarts empty) is redirected, then cached again", () =>
    Effect.gen(function*() {
      const { base, bucket } = yield* Fixture
      const key = imageKey(`${base}/ok.png`)
      assert.strictEqual((yield* get(`/images/${key}`)).status, 200)
      const before = hits.get("/ok.png") ?? 0
      yield* bucket.del(key)

      const gone = yield* get(`/images/${key}`)
      assert.strictEqual(gone.status, 302)
      assert.strictEqual(gone.headers.get("location"), `${base}/ok.png`)
      // pending again, and the kicked pass stores it anew: served from storage once more
      const served = yield* get(`/images/${key}`).pipe(
        Effect.filterOrFail((response) => response.status === 200, (response) => new Error(`still ${response.status}`)),
        Effect.retry({ schedule: Schedule.spaced("100 millis"), times: 100 })
      )
      assert.strictEqual(served.headers.get("content-type"), "image/png")
      assert.deepStrictEqual(Buffer.from(yield* bucket.getBytes(key)), okPng)
      assert.strictEqual(hits.get("/ok.png"), before + 1, "fetched once more, by the background pass")
      assert.strictEqual((yield* statuses).get("/ok.png"), "cached")
    }))
})

const guarded = services({ sources: [], allowPrivate: false }).pipe(Layer.provideMerge(TestDatabase.layer()))
const GuardedLayer = socketClient(guarded).pipe(Layer.provideMerge(guarded)) as Layer.Layer<Client | SqlClient.SqlClient, unknown>

layer(GuardedLayer, { excludeTestServices: true })("images with LISTINGS_ALLOW_PRIVATE=false", (it) => {
  it.effect("an original the guard refuses (loopback, private, a local name) is not redirected to: 404; a public one is", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const originals = {
        refused: ["http://127.0.0.1:9/a.png", "http://localhost/b.png", "http://[::1]/c.png", "http://10.0.0.1/d.png", "http://nas.local/e.png"],
        passed: ["https://cdn.example.invalid/f.png"]
      }
      for (const url of [...originals.refused, ...originals.passed]) {
        yield* sql`INSERT INTO listings.images (key, original_url, source_id) VALUES (${imageKey(url)}, ${url}, 'feed')`
      }
      for (const url of originals.refused) {
        const response = yield* get(`/images/${imageKey(url)}`)
        assert.strictEqual(response.status, 404, url)
        assert.strictEqual(response.body.code, "image_not_found", url)
        assert.isNull(response.headers.get("location"), url)
      }
      const passed = yield* get(`/images/${imageKey(originals.passed[0]!)}`)
      assert.strictEqual(passed.status, 302)
      assert.strictEqual(passed.headers.get("location"), originals.passed[0])
    }))
})
