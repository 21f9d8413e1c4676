/**
 * GET /offers answers compressed for a client that takes gzip (what a mobile HTTP stack sends:
 * `Accept-Encoding: gzip, br`), over a real socket read with node:http, which does not decode: the
 * bytes on the wire are gzip and decode to the very JSON an identity client gets; `Vary`; the two
 * representations' ETags (strong and weak) both revalidate to 304; no gzip when refused (`q=0`),
 * not asked for, or for a tiny answer; HEAD says the same as GET.
 */
import { assert, layer } from "@effect/vitest"
import { OffersResponse } from "@svc/schema"
import { Effect, Layer, Schema } from "effect"
import * as Zlib from "node:zlib"
import { acceptsGzip } from "../src/http.ts"
import { type Client, raw, record, seed, services, socketClient, TestDatabase } from "./support.ts"

const stack = services().pipe(Layer.provideMerge(TestDatabase.layer()))
const Seeded = Layer.effectDiscard(seed("alpha", Array.from({ length: 20 }, (_, i) => record({ nativeId: `g${i}` }))))
const TestLayer = Layer.provideMerge(Seeded, socketClient(stack).pipe(Layer.provideMerge(stack))) as Layer.Layer<Client, unknown>


layer(TestLayer, { excludeTestServices: true, timeout: 60_000 })("GET /offers compression", (it) => {
  it.effect("gzip for a client that takes it: the same JSON, a weak ETag, Vary; both tags revalidate", () =>
    Effect.gen(function*() {
      const plain = yield* raw("/offers?limit=20")
      assert.strictEqual(plain.status, 200)
      assert.isUndefined(plain.headers["content-encoding"])
      assert.strictEqual(plain.headers["vary"], "Accept-Encoding")
      const strong = plain.headers.etag!
      assert.match(strong, /^"[\w-]+"$/)
      const body = JSON.parse(plain.bytes.toString("utf8"))
      assert.strictEqual(body.offers.length, 20)
      assert.deepStrictEqual(Schema.decodeUnknownSync(OffersResponse)(body), body)

      const zipped = yield* raw("/offers?limit=20", { "accept-encoding": "gzip, br" })
      assert.strictEqual(zipped.status, 200)
      assert.strictEqual(zipped.headers["content-encoding"], "gzip")
      assert.strictEqual(zipped.headers["content-type"], "application/json")
      assert.strictEqual(zipped.headers["vary"], "Accept-Encoding")
      assert.strictEqual(zipped.headers.etag, `W/${strong}`)
      assert.strictEqual(Number(zipped.headers["content-length"]), zipped.bytes.byteLength)
      assert.isBelow(zipped.bytes.byteLength, plain.bytes.byteLength / 3)
      assert.deepStrictEqual(Zlib.gunzipSync(zipped.bytes), plain.bytes)
      // remembered: the same bytes again
      assert.deepStrictEqual((yield* raw("/offers?limit=20", { "accept-encoding": "gzip" })).bytes, zipped.bytes)

      // a cache revalidates with the tag it kept, whichever representation it was
      for (const [encoding, tag] of [["gzip", `W/${strong}`], ["gzip", strong], ["identity", `W/${strong}`], ["identity", strong]]) {
        const revalidated = yield* raw("/offers?limit=20", { "accept-encoding": encoding!, "if-none-match": tag! })
        assert.strictEqual(revalidated.status, 304, `${encoding} ${tag}`)
        assert.strictEqual(revalidated.bytes.byteLength, 0)
        assert.strictEqual(revalidated.headers.etag, encoding === "gzip" ? `W/${strong}` : strong)
        assert.strictEqual(revalidated.headers["vary"], "Accept-Encoding")
      }

      const head = yield* raw("/offers?limit=20", { "accept-encoding": "gzip" }, "HEAD")
      assert.strictEqual(head.status, 200)
      assert.strictEqual(head.headers["content-encoding"], "gzip")
      assert.strictEqual(head.headers.etag, `W/${strong}`)
      assert.strictEqual(head.bytes.byteLength, 0)
    }))

  it.effect("no gzip when refused, not offered, or for an answer of a few bytes", () =>
    Effect.gen(function*() {
      for (const encoding of ["gzip;q=0", "br", "identity", "*;q=0", "deflate, gzip;q=0.000"]) {
        const answer = yield* raw("/offers?limit=20", { "accept-encoding": encoding })
        assert.strictEqual(answer.status, 200)
        assert.isUndefined(answer.headers["content-encoding"], encoding)
        assert.strictEqual(JSON.parse(answer.bytes.toString("utf8")).offers.length, 20)
      }
      const star = yield* raw("/offers?limit=20", { "accept-encoding": "*" })
      assert.strictEqual(star.headers["content-encoding"], "gzip")
      const tiny = yield* raw("/offers?limit=0", { "accept-encoding": "gzip" })
      assert.isUndefined(tiny.headers["content-encoding"])
      assert.deepStrictEqual(JSON.parse(tiny.bytes.toString("utf8")), { offers: [], count: 20, warnings: null })
    }))

  it("acceptsGzip reads q-values", () => {
    assert.isTrue(acceptsGzip("gzip, deflate, br"))
    assert.isTrue(acceptsGzip("br;q=1.0, gzip;q=0.8, *;q=0.1"))
    assert.isTrue(acceptsGzip("X-GZIP"))
    assert.isTrue(acceptsGzip("*"))
    assert.isFalse(acceptsGzip(undefined))
    assert.isFalse(acceptsGzip(""))
    assert.isFalse(acceptsGzip("gzip;q=0"))
    assert.isFalse(acceptsGzip("gzip;q=0, *"))
    assert.isFalse(acceptsGzip("gzip;q=abc"))
    assert.isFalse(acceptsGzip("deflate, br"))
  })
})
