/**
* Runs with live services (excludeTestServices): these tests wait on real I/O and real time.
 * Bucket against the test run's real radosgw: what only the S3 layer has (put of Requests and node
 * streams, bucket policies, signed URL expiry, CORS, read-only tokens, the Promise API). Conditional
 * writes, updateJson, multipart, copy/move, list and del are the contract's (test/contracts/Bucket.ts),
 * run on radosgw by Bucket.contract.test.ts and on memory by unit/Bucket.test.ts.
 */
import { PutBucketPolicyCommand } from "@aws-sdk/client-s3"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Readable } from "node:stream"
import { LocalObjectStorage } from "../../platform/src/LocalObjectStorage.ts"
import { makeFreshBucket, TestObjectStorage } from "../../platform/src/testing/objectStorage.ts"
import { BlobError } from "../src/shared/BlobError.ts"
import { Bucket, createBucket } from "../src/server/Bucket.ts"
import { freshBucket, tokenFor } from "./support/storage.ts"

const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 73, 72, 68, 82])
const JPEG = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0, 16, 74, 70, 73, 70, 0, 1])

const failure = <A>(effect: Effect.Effect<A, BlobError>) =>
  Effect.flip(effect).pipe(Effect.map((e) => {
    assert.isTrue(BlobError.is(e))
    return e
  }))

const chunks = (...parts: Array<string | Uint8Array>) =>
  (async function*() {
    for (const p of parts) yield typeof p === "string" ? new TextEncoder().encode(p) : p
  })()

layer(TestObjectStorage, { excludeTestServices: true })("Bucket (radosgw)", (it) => {
  describe("put / get / info / exists", () => {
    it.effect("stores strings, bytes, streams and Requests and reads them back", () =>
      Effect.gen(function*() {
        const bucket = yield* freshBucket("put")
        const a = yield* bucket.put("a/hello.txt", "hello")
        assert.strictEqual(a.size, 5)
        assert.match(a.etag, /^"[0-9a-f]+"$/)
        assert.strictEqual(a.contentType, "text/plain")
        assert.strictEqual(yield* bucket.getText("a/hello.txt"), "hello")

        yield* bucket.put("b.png", PNG)
        const info = yield* bucket.info("b.png")
        assert.strictEqual(info.contentType, "image/png")
        assert.strictEqual(info.size, PNG.length)

        const streamed = yield* bucket.put("c.bin", chunks("abc", "def"), { size: 6 })
        assert.strictEqual(streamed.size, 6)
        assert.strictEqual(yield* bucket.getText("c.bin"), "abcdef")

        const node = yield* bucket.put("d.txt", Readable.from([Buffer.from("node "), Buffer.from("stream")]), { maxSize: 100 })
        assert.strictEqual(node.size, 11)

        const request = new Request("http://x/upload", {
          method: "PUT",
          body: "from a request",
          headers: { "content-type": "text/markdown", "content-length": "14" }
        })
        const r = yield* bucket.put("e.md", request)
        assert.strictEqual(r.contentType, "text/markdown")
        const got = yield* bucket.get("e.md")
        assert.strictEqual(got.contentType, "text/markdown")
        assert.strictEqual(yield* Effect.promise(() => new Response(got.body).text()), "from a request")

        // a Request without Content-Length: its length must come from size or maxSize
        const unknown = new Request("http://x/upload", { method: "PUT", body: "no length" })
        assert.strictEqual((yield* failure(bucket.put("f.txt", unknown))).code, "length_required")
        const bounded = new Request("http://x/upload", { method: "PUT", body: "no length" })
        assert.strictEqual((yield* bucket.put("f.txt", bounded, { maxSize: "1KB" })).size, 9)

        assert.isTrue(yield* bucket.exists("e.md"))
        assert.isFalse(yield* bucket.exists("nope.md"))
        const missing = yield* failure(bucket.get("nope.md"))
        assert.strictEqual(missing.code, "not_found")
        assert.strictEqual((yield* failure(bucket.info("nope.md"))).code, "not_found")
      }))

    it.effect("refuses what it cannot store", () =>
      Effect.gen(function*() {
        const bucket = yield* freshBucket("refuse")
        const used = new Request("http://x/", { method: "POST", body: "x" })
        yield* Effect.promise(() => used.text())
        assert.strictEqual((yield* failure(bucket.put("x", used))).code, "empty_body")
        assert.strictEqual((yield* failure(bucket.put("x", new Request("http://x/", { method: "POST" })))).code, "empty_body")

        const length = yield* failure(bucket.put("x", chunks("a", "b")))
        assert.strictEqual(length.code, "length_required")
        assert.strictEqual(length.status, 411)
        assert.match(length.message, /size or maxSize/)

        const big = yield* failure(bucket.put("x", "0123456789", { maxSize: 5 }))
        assert.strictEqual(big.code, "too_large")
        const bigStream = yield* failure(bucket.put("x", chunks("0123456789".repeat(10), "more"), { maxSize: 50 }))
        assert.strictEqual(bigStream.code, "too_large")
        assert.isFalse(yield* bucket.exists("x"))

        const small = yield* Bucket.make({ token: yield* tokenFor(bucket.name), maxSinglePut: 4 })
        const single = yield* failure(small.put("x", "0123456789", { multipart: false }))
        assert.strictEqual(single.code, "too_large")

        const meta = yield* failure(bucket.put("m", "x", { metadata: { note: "héllo" } }))
        assert.strictEqual(meta.code, "invalid_input")
        const path = yield* failure(bucket.put("a//b", "x"))
        assert.strictEqual(path.code, "invalid_input")
      }))

    it.effect("checks contentTypes patterns and the leading bytes", () =>
      Effect.gen(function*() {
        const bucket = yield* freshBucket("types")
        yield* bucket.put("ok.png", PNG, { contentTypes: ["image/*"] })
        const notAllowed = yield* failure(bucket.put("doc.pdf", "%PDF-1.4", { contentType: "application/pdf", contentTypes: ["image/*"] }))
        assert.strictEqual(notAllowed.code, "content_type_not_allowed")
        assert.match(notAllowed.message, /^application\/pdf is not allowed/)
        const lying = yield* failure(bucket.put("fake.png", JPEG, { contentType: "image/png" }))
        assert.strictEqual(lying.code, "content_type_not_allowed")
        const lyingStream = yield* failure(
          bucket.put("fake2.png", chunks(new Uint8Array(30), JPEG, new Uint8Array(100)), { contentType: "image/png", size: 142 })
        )
        assert.strictEqual(lyingStream.code, "content_type_not_allowed")
        const text = yield* failure(bucket.put("notes.txt", PNG, { contentType: "text/plain" }))
        assert.strictEqual(text.code, "content_type_not_allowed")
        for (const bad of [["image/"], ["*/*"], ["text/*"], []]) {
          const e = yield* failure(bucket.put("p.png", PNG, { contentTypes: bad }))
          assert.strictEqual(e.code, "invalid_content_type_pattern")
          assert.strictEqual(e.status, 500)
        }
        assert.isFalse(yield* bucket.exists("fake.png"))
      }))
  })

  describe("move, del: refusals radosgw enforces (bucket policies)", () => {
    it.effect("move_left_a_copy when the source cannot be deleted; the destination is kept", () =>
      Effect.gen(function*() {
        const storage = yield* LocalObjectStorage
        const name = yield* makeFreshBucket("moveleft")
        const bucket = yield* Bucket.make({ token: yield* tokenFor(name), retry: { times: 0 } })
        yield* bucket.put("src.txt", "payload")
        // a bucket policy that denies deleting the source (radosgw enforces bucket policies)
        yield* Effect.promise(() =>
          storage.client.send(
            new PutBucketPolicyCommand({
              Bucket: name,
              Policy: JSON.stringify({
                Version: "2012-10-17",
                Statement: [{
                  Effect: "Deny",
                  Principal: "*",
                  Action: ["s3:DeleteObject"],
                  Resource: [`arn:aws:s3:::${name}/src.txt`]
                }]
              })
            })
          )
        )
        const e = yield* failure(bucket.move("src.txt", "dst.txt"))
        assert.strictEqual(e.code, "move_left_a_copy")
        assert.strictEqual(e.status, 500)
        assert.isDefined(e.cause)
        assert.strictEqual(yield* bucket.getText("dst.txt"), "payload")
        assert.isTrue(yield* bucket.exists("src.txt"))
      }))

    it.effect("partial_delete lists the survivors", () =>
      Effect.gen(function*() {
        const storage = yield* LocalObjectStorage
        const name = yield* makeFreshBucket("partial")
        const bucket = yield* Bucket.make({ token: yield* tokenFor(name), retry: { times: 0 } })
        yield* Effect.forEach(["p/a", "p/b", "p/locked"], (p) => bucket.put(p, "x"))
        yield* Effect.promise(() =>
          storage.client.send(
            new PutBucketPolicyCommand({
              Bucket: name,
              Policy: JSON.stringify({
                Version: "2012-10-17",
                Statement: [{ Effect: "Deny", Principal: "*", Action: ["s3:DeleteObject"], Resource: [`arn:aws:s3:::${name}/p/locked`] }]
              })
            })
          )
        )
        const e = yield* failure(bucket.del({ prefix: "p/" }))
        assert.strictEqual(e.code, "partial_delete")
        assert.deepStrictEqual(e.failed, ["p/locked"])
        const arr = yield* failure(bucket.del(["p/locked"]))
        assert.deepStrictEqual(arr.failed, ["p/locked"])
      }))
  })

  describe("a bucket that does not exist", () => {
    it.effect("is not_found naming the bucket, for reads and every del target; a HEAD cannot tell (exists is false)", () =>
      Effect.gen(function*() {
        const name = `missing-${Date.now().toString(36)}`
        const bucket = yield* Bucket.make({ token: yield* tokenFor(name), retry: { times: 0 } })
        const expected = ["not_found", `Bucket not found: ${name}`]
        const calls: ReadonlyArray<Effect.Effect<unknown, BlobError>> = [
          bucket.getText("a.txt"),
          bucket.del("a.txt"),
          bucket.del(["a.txt", "b.txt"]),
          bucket.del({ prefix: "p/" }),
          bucket.list()
        ]
        for (const refused of calls) {
          const e = yield* failure(refused)
          assert.deepStrictEqual([e.code, e.message], expected)
        }
        // storage answers a HEAD with a bare 404: no code tells the bucket from the object
        assert.isFalse(yield* bucket.exists("a.txt"))
      }))
  })

  describe("signed URLs", () => {
    it.effect("a signed read URL works until it expires", () =>
      Effect.gen(function*() {
        const bucket = yield* freshBucket("readurl")
        yield* bucket.put("doc.txt", "secret doc")
        const url = yield* bucket.signedReadUrl("doc.txt", { expiresIn: 2 })
        const ok = yield* Effect.promise(() => fetch(url))
        assert.strictEqual(ok.status, 200)
        assert.strictEqual(yield* Effect.promise(() => ok.text()), "secret doc")
        const unsigned = yield* Effect.promise(() => fetch(bucket.url("doc.txt")))
        assert.strictEqual(unsigned.status, 403)
        yield* Effect.sleep("3100 millis")
        const expired = yield* Effect.promise(() => fetch(url))
        assert.strictEqual(expired.status, 403)
        assert.strictEqual((yield* failure(bucket.signedReadUrl("a//b"))).code, "invalid_input")
        assert.strictEqual((yield* failure(bucket.signedUploadUrl("/a", { contentType: "text/plain", size: 1 }))).code, "invalid_input")
      }))

    it.effect("a presigned PUT refuses a different content type or size (signature_mismatch)", () =>
      Effect.gen(function*() {
        const bucket = yield* freshBucket("presign")
        const signed = yield* bucket.signedUploadUrl("up.png", { contentType: "image/png", size: PNG.length })
        const put = (body: Uint8Array, contentType: string) =>
          Effect.promise(() =>
            fetch(signed.url, { method: "PUT", body: body as BodyInit, headers: { ...signed.headers, "content-type": contentType } })
          )
        const wrongType = yield* put(PNG, "image/jpeg")
        assert.strictEqual(wrongType.status, 403)
        const wrongSize = yield* put(new Uint8Array([...PNG, 0]), "image/png")
        assert.strictEqual(wrongSize.status, 403)
        // what the client turns those answers into
        const { normalizeStorageError } = yield* Effect.promise(() => import("../src/server/normalize.ts"))
        const asError = normalizeStorageError({ $metadata: { httpStatusCode: wrongType.status }, Code: "AccessDenied" })
        assert.strictEqual(asError.code, "signature_mismatch")
        assert.isFalse(yield* bucket.exists("up.png"))
        const ok = yield* put(PNG, "image/png")
        assert.strictEqual(ok.status, 200)
        assert.strictEqual((yield* bucket.info("up.png")).size, PNG.length)
        // signed without overwrite: a second PUT to the same URL is refused
        const second = yield* put(PNG, "image/png")
        assert.strictEqual(second.status, 412)
      }))

    it.effect("CORS: a browser PUT's preflight is allowed once the bucket's CORS is configured", () =>
      Effect.gen(function*() {
        const bucket = yield* freshBucket("cors")
        const signed = yield* bucket.signedUploadUrl("c.txt", { contentType: "text/plain", size: 2 })
        const preflight = (origin: string) =>
          Effect.promise(() =>
            fetch(signed.url, {
              method: "OPTIONS",
              headers: {
                origin,
                "access-control-request-method": "PUT",
                "access-control-request-headers": "content-type,if-none-match"
              }
            })
          )
        const before = yield* preflight("http://app.example")
        assert.notStrictEqual(before.status, 200)
        yield* bucket.configureCors({ origins: ["http://app.example"] })
        const after = yield* preflight("http://app.example")
        assert.strictEqual(after.status, 200)
        assert.strictEqual(after.headers.get("access-control-allow-origin"), "http://app.example")
        assert.match(after.headers.get("access-control-allow-methods") ?? "", /PUT/)
        const other = yield* preflight("http://evil.example")
        assert.notStrictEqual(other.headers.get("access-control-allow-origin"), "http://evil.example")
        yield* bucket.configureCors()
        const any = yield* preflight("http://anything.example")
        assert.strictEqual(any.status, 200)
        assert.include(["*", "http://anything.example"], any.headers.get("access-control-allow-origin"))
      }))

    it.effect("a read-only token refuses upload URLs and writes with forbidden (cause tells why)", () =>
      Effect.gen(function*() {
        const name = yield* makeFreshBucket("readonly")
        const bucket = yield* Bucket.make({ token: yield* tokenFor(name, { access: "readonly" }) })
        const e = yield* failure(bucket.signedUploadUrl("x.txt", { contentType: "text/plain", size: 1 }))
        assert.strictEqual(e.code, "forbidden")
        assert.match(String((e.cause as Error).message), /read-only/)
        assert.strictEqual((yield* failure(bucket.put("x.txt", "x"))).code, "forbidden")
        assert.isString(yield* bucket.signedReadUrl("x.txt"))
      }))
  })

  describe("Promise API", () => {
    it.effect("createBucket rejects with BlobError and throws TypeError for a missing token", () =>
      Effect.gen(function*() {
        const name = yield* makeFreshBucket("promise")
        const token = yield* tokenFor(name)
        const result = yield* Effect.promise(async () => {
          const bucket = createBucket({ token })
          try {
            await bucket.put("p.txt", "promised")
            const text = await bucket.getText("p.txt")
            const error = await bucket.put("p.txt", "again").then(() => undefined, (e: unknown) => e)
            return { text, error }
          } finally {
            await bucket.close()
          }
        })
        assert.strictEqual(result.text, "promised")
        assert.isTrue(BlobError.is(result.error, "already_exists"))
        const saved = process.env["SVC_BLOB_TOKEN"]
        delete process.env["SVC_BLOB_TOKEN"]
        try {
          assert.throws(() => createBucket(), TypeError, /SVC_BLOB_TOKEN/)
          assert.throws(() => createBucket({ token: "https://nope" }), TypeError)
          assert.throws(() => createBucket({ token, partSize: "lots" }), TypeError, /partSize/)
        } finally {
          if (saved !== undefined) process.env["SVC_BLOB_TOKEN"] = saved
        }
      }))
  })
})
