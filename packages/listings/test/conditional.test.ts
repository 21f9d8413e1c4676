/**
 * GET /offers/:id revalidates like GET /offers (one rule, http.ts `sendJsonAnswer`), over a real
 * socket read with node:http (which does not decode): an offer carries an ETag and
 * `Cache-Control: no-cache`; `If-None-Match` with it (or its weak form) is 304 without a body; once
 * an ingest changes the offer (its price) the same request is 200 with a new tag, and the old tag no
 * longer matches. A large offer is sent gzip to a client that takes it, its tag weak, `Vary` on both.
 */
import { assert, layer } from "@effect/vitest"
import { CarOffer } from "@svc/schema"
import { Effect, Layer, Schema } from "effect"
import * as Zlib from "node:zlib"
import { ADMIN_TOKEN, Client, httpServer, raw, services, socketClient, TestDatabase } from "./support.ts"

/** The feed's offers; a test changes them and ingests again. */
const feed = {
  price: 45_000,
  photos: Array.from({ length: 30 }, (_, i) => `https://img.feed.example/big/${i}-${"p".repeat(40)}.jpg`)
}
const offers = () => [
  { nativeId: "small", title: "Škoda Fabia", make: "Škoda", model: "Fabia", price: feed.price, currency: "PLN", fuel: "petrol", transmission: "manual", region: "mazowieckie", originalUrl: "https://feed.example/small", images: [] },
  { nativeId: "big", title: "Volkswagen Golf", make: "Volkswagen", model: "Golf", price: 60_000, currency: "PLN", fuel: "diesel", transmission: "manual", region: "mazowieckie", originalUrl: "https://feed.example/big", images: feed.photos }
]

const FeedServer = Layer.unwrap(Effect.gen(function*() {
  const base = yield* httpServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" })
    res.end(JSON.stringify({ offers: offers() }))
  })
  return services({ sources: [{ id: "feed", adapter: "json", url: `${base}/offers.json` }], adminToken: ADMIN_TOKEN })
}))
const stack = FeedServer.pipe(Layer.provideMerge(TestDatabase.layer()))
const TestLayer = socketClient(stack) as Layer.Layer<Client, unknown>


const ingest = Effect.gen(function*() {
  const answer = yield* raw("/admin/ingest?wait=true", { authorization: `Bearer ${ADMIN_TOKEN}` }, "POST")
  assert.strictEqual(answer.status, 200, answer.bytes.toString("utf8"))
  const { runs } = JSON.parse(answer.bytes.toString("utf8"))
  assert.deepStrictEqual(runs.map((run: any) => [run.sourceId, run.status]), [["feed", "finished"]])
})

const decodeOffer = (bytes: Buffer) => {
  const offer = JSON.parse(bytes.toString("utf8"))
  assert.deepStrictEqual(Schema.decodeUnknownSync(CarOffer)(offer), offer)
  return offer
}

layer(TestLayer, { excludeTestServices: true, timeout: 60_000 })("GET /offers/:id conditional requests", (it) => {
  it.effect("ETag, 304 on If-None-Match, a new ETag once an ingest changed the offer", () =>
    Effect.gen(function*() {
      yield* ingest
      const first = yield* raw("/offers/feed%3Asmall")
      assert.strictEqual(first.status, 200)
      assert.strictEqual(decodeOffer(first.bytes).price, 45_000)
      const etag = first.headers.etag!
      assert.match(etag, /^"[\w-]+"$/)
      assert.strictEqual(first.headers["cache-control"], "no-cache")
      assert.strictEqual(first.headers["vary"], "Accept-Encoding")
      assert.strictEqual(first.headers["content-type"], "application/json")

      // the same offer: the same tag, and a client that kept it revalidates without a body
      assert.strictEqual((yield* raw("/offers/feed%3Asmall")).headers.etag, etag)
      for (const tag of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
        const revalidated = yield* raw("/offers/feed%3Asmall", { "if-none-match": tag })
        assert.strictEqual(revalidated.status, 304, tag)
        assert.strictEqual(revalidated.bytes.byteLength, 0)
        assert.strictEqual(revalidated.headers.etag, etag)
      }
      assert.strictEqual((yield* raw("/offers/feed%3Asmall", { "if-none-match": "\"other\"" })).status, 200)
      const head = yield* raw("/offers/feed%3Asmall", { "if-none-match": etag }, "HEAD")
      assert.strictEqual(head.status, 304)

      // an ingest changes its price: a new answer with a new tag, and the old tag is not a match
      feed.price = 43_500
      yield* ingest
      const changed = yield* raw("/offers/feed%3Asmall", { "if-none-match": etag })
      assert.strictEqual(changed.status, 200)
      assert.strictEqual(decodeOffer(changed.bytes).price, 43_500)
      const newEtag = changed.headers.etag!
      assert.match(newEtag, /^"[\w-]+"$/)
      assert.notStrictEqual(newEtag, etag)
      assert.strictEqual((yield* raw("/offers/feed%3Asmall", { "if-none-match": newEtag })).status, 304)

      // an unknown offer is still the JSON 404, whatever the client sends
      const missing = yield* raw("/offers/feed%3Anope", { "if-none-match": "*" })
      assert.strictEqual(missing.status, 404)
      assert.strictEqual(JSON.parse(missing.bytes.toString("utf8")).code, "offer_not_found")
    }))

  it.effect("a large offer: gzip for a client that takes it, a weak ETag, both forms revalidate", () =>
    Effect.gen(function*() {
      yield* ingest
      const plain = yield* raw("/offers/feed%3Abig")
      assert.strictEqual(plain.status, 200)
      assert.isUndefined(plain.headers["content-encoding"])
      assert.strictEqual(decodeOffer(plain.bytes).images.length, 30)
      const strong = plain.headers.etag!
      const zipped = yield* raw("/offers/feed%3Abig", { "accept-encoding": "gzip, br" })
      assert.strictEqual(zipped.status, 200)
      assert.strictEqual(zipped.headers["content-encoding"], "gzip")
      assert.strictEqual(zipped.headers["vary"], "Accept-Encoding")
      assert.strictEqual(zipped.headers.etag, `W/${strong}`)
      assert.deepStrictEqual(Zlib.gunzipSync(zipped.bytes), plain.bytes)
      for (const tag of [strong, `W/${strong}`]) {
        const revalidated = yield* raw("/offers/feed%3Abig", { "accept-encoding": "gzip", "if-none-match": tag })
        assert.strictEqual(revalidated.status, 304, tag)
        assert.strictEqual(revalidated.headers.etag, `W/${strong}`)
      }
    }))
})
