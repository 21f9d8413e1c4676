/**
 * The `Bucket` contract, written once: every layer (`Bucket.layerMemory` in test/unit/Bucket.test.ts,
 * `Bucket.layer` on radosgw in test/Bucket.contract.test.ts) must behave alike, so a fake cannot drift
 * from the real store. The layer must be built with `multipartThreshold: 6 MiB` and `partSize: 5 MiB`
 * (see `contractOptions`); each test provides it afresh (an empty bucket per test).
 *
 * Covers: reads and writes with types and metadata, the conditional-write codes (If-None-Match:
 * already_exists with the occupant's etag and size, one winner among concurrent creators; If-Match:
 * conflict), updateJson under concurrent
 * writers and giving up, put's own multipart, presigned multipart (parts, ListParts, a bad part list,
 * complete, abort, complete onto an occupied path), presigned PUT/GET, list (prefix, folded, pages),
 * copy/move/del and invalid paths.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, type Layer, Result } from "effect"
import { Bucket } from "../../src/server/Bucket.ts"
import { BlobError } from "../../src/shared/BlobError.ts"
import { signedFetch } from "../support/signedFetch.ts"

const MiB = 1024 * 1024

/** The options both layers of the contract are built with. */
export const contractOptions = { multipartThreshold: 6 * MiB, partSize: 5 * MiB } as const

const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 73, 72, 68, 82])

const failure = <A>(effect: Effect.Effect<A, BlobError>) =>
  Effect.flip(effect).pipe(Effect.map((e) => {
    assert.isTrue(BlobError.is(e))
    return e
  }))

const pattern = (size: number, seed = 31) => {
  const data = new Uint8Array(size)
  for (let i = 0; i < size; i++) data[i] = (i * seed) & 0xff
  return data
}

const put = (url: string, body: Uint8Array, headers: Record<string, string> = {}) =>
  Effect.promise(() => signedFetch(url, { method: "PUT", body: body as BodyInit, headers }))

export const bucketContract = (name: string, layer: Layer.Layer<Bucket, unknown>): void => {
  const test = (title: string, body: Effect.Effect<void, unknown, Bucket>, timeout?: number) =>
    it.live(title, () => body.pipe(Effect.provide(layer)), timeout)

  describe(`Bucket contract (${name})`, () => {
    describe("values storage cannot take are invalid_input at once, never an outage retried", () => {
      test(
        "a lone surrogate in a path or prefix, a line break in cacheControl, a signed URL's bad lifetime, type or size, an unknown list mode",
        Effect.gen(function*() {
          const bucket = yield* Bucket
          const refused = <A>(effect: Effect.Effect<A, BlobError>) => Effect.map(Effect.flip(effect), (error) => [error.code, error.message])
          assert.deepStrictEqual(yield* refused(bucket.put("bad\ud800.txt", "x")), [
            "invalid_input",
            "Invalid path: the path holds a lone surrogate (\\ud800-\\udfff alone), which UTF-8 cannot carry"
          ])
          assert.strictEqual((yield* refused(bucket.info("bad\ud800.txt")))[0], "invalid_input")
          assert.deepStrictEqual(yield* refused(bucket.list({ prefix: "a\ud800" })), [
            "invalid_input",
            "Prefix holds a lone surrogate (\\ud800-\\udfff alone), which UTF-8 cannot carry"
          ])
          assert.deepStrictEqual(yield* refused(bucket.list({ mode: "weird" as "folded" })), ["invalid_input", `Mode must be "expanded" or "folded", got "weird"`])
          assert.deepStrictEqual(yield* refused(bucket.put("c.txt", "x", { cacheControl: "a\r\nX-Evil: 1" })), [
            "invalid_input",
            "Invalid cacheControl: it holds a line break or another character a header cannot carry"
          ])
          for (const expiresIn of [1.5, Number.NaN, 0, -1]) {
            assert.deepStrictEqual(yield* refused(bucket.signedReadUrl("c.txt", { expiresIn })), [
              "invalid_input",
              `Invalid expiresIn: a whole number of seconds from 1, got ${expiresIn}`
            ])
          }
          assert.match((yield* refused(bucket.signedUploadUrl("u.bin", { contentType: undefined as unknown as string, size: 3 })))[1]!, /^Invalid contentType: the file's type is required/)
          assert.match((yield* refused(bucket.signedUploadUrl("u.bin", { contentType: "bad", size: 3 })))[1]!, /^Invalid content type "bad"/)
          for (const size of [undefined, -1, 1.5, "abc"]) {
            assert.match((yield* refused(bucket.signedUploadUrl("u.bin", { contentType: "text/plain", size: size as number })))[1]!, /^Invalid size: /)
            assert.match((yield* refused(bucket.signedMultipartUpload("u.bin", { contentType: "text/plain", size: size as number })))[1]!, /^Invalid size: /)
          }
          assert.isFalse(yield* bucket.exists("c.txt"))
          yield* bucket.put("s.txt", "s")
          const notAType = yield* refused(bucket.copy("s.txt", "t.txt", { contentType: "nope" }))
          assert.strictEqual(notAType[0], "invalid_input")
          assert.match(notAType[1]!, /^Invalid content type "nope": a file's type is type\/subtype/)
          assert.deepStrictEqual(yield* refused(bucket.copy("s.txt", "s.txt", { allowOverwrite: true })), [
            "invalid_input",
            `Copying "s.txt" onto itself changes nothing: give contentType to change its type`
          ])
          assert.isFalse(yield* bucket.exists("t.txt"))
          yield* bucket.copy("s.txt", "s.txt", { allowOverwrite: true, contentType: "text/markdown" })
          assert.strictEqual((yield* bucket.info("s.txt")).contentType, "text/markdown")
        })
      )
    })

    describe("reads and writes", () => {
      test(
        "put then get, getText, info, exists; type, metadata and cache control come back",
        Effect.gen(function*() {
          const bucket = yield* Bucket
          const a = yield* bucket.put("a/hello.txt", "hello", { metadata: { owner: "me" }, cacheControl: "max-age=60" })
          assert.strictEqual(a.size, 5)
          assert.match(a.etag, /^"[0-9a-f]{32}"$/)
          assert.strictEqual(a.contentType, "text/plain")
          assert.strictEqual(yield* bucket.getText("a/hello.txt"), "hello")
          const info = yield* bucket.info("a/hello.txt")
          assert.strictEqual(info.etag, a.etag)
          assert.strictEqual(info.size, 5)
          assert.strictEqual(info.metadata["owner"], "me")
          assert.strictEqual(info.cacheControl, "max-age=60")
          const png = yield* bucket.put("b.png", PNG)
          assert.strictEqual(png.contentType, "image/png")
          const got = yield* bucket.get("b.png")
          assert.strictEqual(got.contentType, "image/png")
          const bytes = new Uint8Array(yield* Effect.promise(() => new Response(got.body).arrayBuffer()))
          assert.deepStrictEqual([...bytes], [...PNG])
          assert.isTrue(yield* bucket.exists("b.png"))
          assert.isFalse(yield* bucket.exists("nope.png"))
          const missing = yield* failure(bucket.get("nope.png"))
          assert.strictEqual(missing.code, "not_found")
          assert.strictEqual(missing.status, 404)
          assert.strictEqual((yield* failure(bucket.info("nope.png"))).code, "not_found")
          assert.strictEqual((yield* failure(bucket.getBytes("nope.png"))).code, "not_found")
        })
      )

      test(
        "refuses invalid paths, sizes and types before storing anything",
        Effect.gen(function*() {
          const bucket = yield* Bucket
          for (const path of ["", "/a", "a/", "a//b", "a/../b"]) {
            assert.strictEqual((yield* failure(bucket.put(path, "x"))).code, "invalid_input", path)
          }
          assert.strictEqual((yield* failure(bucket.get("a//b"))).code, "invalid_input")
          assert.strictEqual((yield* failure(bucket.signedReadUrl("/a"))).code, "invalid_input")
          assert.strictEqual((yield* failure(bucket.put("x.txt", "0123456789", { maxSize: 5 }))).code, "too_large")
          const type = yield* failure(bucket.put("doc.pdf", "%PDF-1.4", { contentType: "application/pdf", contentTypes: ["image/*"] }))
          assert.strictEqual(type.code, "content_type_not_allowed")
          assert.strictEqual((yield* failure(bucket.put("m.txt", "x", { metadata: { note: "héllo" } }))).code, "invalid_input")
          assert.deepStrictEqual((yield* bucket.list()).objects, [])
        })
      )
    })

    describe("conditional writes", () => {
      test(
        "If-None-Match (allowOverwrite false, the default): already_exists, 409, with the occupant's etag and size",
        Effect.gen(function*() {
          const bucket = yield* Bucket
          const first = yield* bucket.put("k.txt", "first")
          const e = yield* failure(bucket.put("k.txt", "second!"))
          assert.strictEqual(e.code, "already_exists")
          assert.strictEqual(e.status, 409)
          assert.strictEqual(e.etag, first.etag)
          assert.strictEqual(e.size, 5)
          assert.strictEqual(yield* bucket.getText("k.txt"), "first")
          const over = yield* bucket.put("k.txt", "second!", { allowOverwrite: true })
          assert.notStrictEqual(over.etag, first.etag)
          assert.strictEqual(yield* bucket.getText("k.txt"), "second!")
        })
      )

      test(
        "If-None-Match under concurrent writers: exactly one creates the object, every other is already_exists",
        Effect.gen(function*() {
          // what single-use upload completion stands on: storage lets one writer create a path, atomically
          const bucket = yield* Bucket
          const writers = 16
          const results = yield* Effect.forEach(
            Array.from({ length: writers }, (_, i) => i),
            (i) => Effect.result(bucket.put("once.json", JSON.stringify({ writer: i }), { contentType: "application/json" })),
            { concurrency: "unbounded" }
          )
          const won = results.flatMap((r, i) => Result.isSuccess(r) ? [i] : [])
          assert.strictEqual(won.length, 1, `writers that created the object: ${won.join(", ")}`)
          for (const r of results) {
            if (Result.isFailure(r)) assert.strictEqual(r.failure.code, "already_exists")
          }
          assert.deepStrictEqual(JSON.parse(yield* bucket.getText("once.json")), { writer: won[0] })
        })
      )

      test(
        "If-Match (ifUnchanged): a stale or absent etag is conflict, 409; the current one writes",
        Effect.gen(function*() {
          const bucket = yield* Bucket
          const v1 = yield* bucket.put("doc.json", "{\"v\":1}")
          const v2 = yield* bucket.put("doc.json", "{\"v\":2}", { ifUnchanged: v1.etag })
          const stale = yield* failure(bucket.put("doc.json", "{\"v\":3}", { ifUnchanged: v1.etag }))
          assert.strictEqual(stale.code, "conflict")
          assert.strictEqual(stale.status, 409)
          assert.strictEqual(yield* bucket.getText("doc.json"), "{\"v\":2}")
          const absent = yield* failure(bucket.put("none.json", "{}", { ifUnchanged: v2.etag }))
          assert.strictEqual(absent.code, "conflict")
          assert.isFalse(yield* bucket.exists("none.json"))
          yield* bucket.put("doc.json", "{\"v\":3}", { ifUnchanged: v2.etag })
          assert.strictEqual(yield* bucket.getText("doc.json"), "{\"v\":3}")
        })
      )

      test(
        "updateJson under concurrent writers loses no update",
        Effect.gen(function*() {
          const bucket = yield* Bucket
          const writers = 6
          yield* Effect.forEach(
            Array.from({ length: writers }, (_, i) => i),
            (i) =>
              bucket.updateJson<{ count: number; by: Array<number> }>(
                "counter.json",
                (current) => ({ count: (current?.count ?? 0) + 1, by: [...(current?.by ?? []), i] }),
                { maxAttempts: 40 }
              ),
            { concurrency: "unbounded" }
          )
          const final = JSON.parse(yield* bucket.getText("counter.json")) as { count: number; by: Array<number> }
          assert.strictEqual(final.count, writers)
          assert.deepStrictEqual([...final.by].sort((a, b) => a - b), Array.from({ length: writers }, (_, i) => i))
          yield* bucket.put("text.json", "not json")
          assert.strictEqual((yield* failure(bucket.updateJson("text.json", () => 1))).code, "invalid_input")
        })
      )

      test(
        "updateJson gives up with conflict after maxAttempts (default 6) rounds",
        Effect.gen(function*() {
          const bucket = yield* Bucket
          yield* bucket.put("x.json", "{\"n\":0}")
          let rounds = 0
          const e = yield* failure(bucket.updateJson<{ n: number }>("x.json", (current) =>
            bucket.put("x.json", JSON.stringify({ n: (current?.n ?? 0) + 100 }), { allowOverwrite: true }).pipe(
              Effect.map(() => {
                rounds++
                return { n: -1 }
              })
            )))
          assert.strictEqual(e.code, "conflict")
          assert.strictEqual(rounds, 6) // the default maxAttempts
          assert.match(e.message, /6 attempts/)
        })
      )
    })

    describe("multipart", () => {
      test(
        "put of a large stream goes in parts (etag -3), reads back equal; onto an occupied path: already_exists; past maxSize: too_large",
        Effect.gen(function*() {
          const bucket = yield* Bucket
          const size = 12 * MiB + 17
          const data = pattern(size)
          const source = (async function*() {
            for (let o = 0; o < size; o += 1_000_003) yield data.subarray(o, Math.min(size, o + 1_000_003))
          })()
          const out = yield* bucket.put("big.bin", source, { size })
          assert.strictEqual(out.size, size)
          assert.match(out.etag, /-3"$/)
          assert.strictEqual((yield* bucket.info("big.bin")).etag, out.etag)
          const back = yield* bucket.getBytes("big.bin")
          assert.isTrue(Buffer.from(back).equals(Buffer.from(data)))
          const again = yield* failure(bucket.put("big.bin", data, { multipart: true }))
          assert.strictEqual(again.code, "already_exists")
          assert.strictEqual(again.size, size)
          // maxSize without size: streamed in parts, cut off past the limit, nothing stored
          const over = yield* failure(bucket.put("over.bin", (async function*() {
            for (let i = 0; i < 3; i++) yield data.subarray(0, 5 * MiB)
          })(), { maxSize: 12 * MiB }))
          assert.strictEqual(over.code, "too_large")
          assert.isFalse(yield* bucket.exists("over.bin"))
        }),
        60_000
      )

      test(
        "presigned parts: ListParts, a bad part list refused, complete, then the upload is gone",
        Effect.gen(function*() {
          const bucket = yield* Bucket
          const size = 5 * MiB + 10
          const data = pattern(size, 7)
          const upload = yield* bucket.signedMultipartUpload("up/large.bin", { contentType: "application/octet-stream", size })
          assert.strictEqual(upload.partSize, 5 * MiB)
          assert.deepStrictEqual(upload.parts.map((p) => [p.partNumber, p.size]), [[1, 5 * MiB], [2, 10]])
          assert.deepStrictEqual(yield* bucket.listParts("up/large.bin", upload.uploadId), [])
          const first = yield* put(upload.parts[0]!.url, data.subarray(0, 5 * MiB))
          assert.strictEqual(first.status, 200)
          const etag1 = first.headers.get("etag") ?? ""
          const landed = yield* bucket.listParts("up/large.bin", upload.uploadId)
          assert.deepStrictEqual(landed.map((p) => [p.partNumber, p.size, p.etag.replaceAll("\"", "")]), [[1, 5 * MiB, etag1.replaceAll("\"", "")]])

          // part 2 never landed / a wrong etag: the same refusal on every layer
          const missing = yield* failure(bucket.completeMultipartUpload("up/large.bin", upload.uploadId, [
            { partNumber: 1, etag: etag1 },
            { partNumber: 2, etag: "\"0123456789abcdef0123456789abcdef\"" }
          ]))
          assert.strictEqual(missing.code, "request_failed")
          assert.strictEqual(missing.status, 400)
          assert.match(missing.message, /InvalidPart/)
          const wrong = yield* failure(bucket.completeMultipartUpload("up/large.bin", upload.uploadId, [
            { partNumber: 1, etag: "\"0123456789abcdef0123456789abcdef\"" }
          ]))
          assert.strictEqual(wrong.code, "request_failed")
          assert.strictEqual(wrong.status, 400)

          const second = yield* put(upload.parts[1]!.url, data.subarray(5 * MiB))
          assert.strictEqual(second.status, 200)
          const done = yield* bucket.completeMultipartUpload("up/large.bin", upload.uploadId, [
            { partNumber: 2, etag: second.headers.get("etag") ?? "" },
            { partNumber: 1, etag: etag1 }
          ])
          assert.match(done.etag, /-2"$/)
          const stored = yield* bucket.info("up/large.bin")
          assert.strictEqual(stored.size, size)
          assert.strictEqual(stored.etag, done.etag)
          assert.isTrue(Buffer.from(yield* bucket.getBytes("up/large.bin")).equals(Buffer.from(data)))
          assert.strictEqual((yield* failure(bucket.listParts("up/large.bin", upload.uploadId))).code, "not_found")
        }),
        60_000
      )

      test(
        "parts under 5 MiB but the last are refused at complete (EntityTooSmall)",
        Effect.gen(function*() {
          const bucket = yield* Bucket
          const upload = yield* bucket.signedMultipartUpload("small.bin", { contentType: "application/octet-stream", size: 20 })
          const signed = yield* bucket.signedUploadParts("small.bin", upload.uploadId, [{ partNumber: 1, size: 10 }, { partNumber: 2, size: 10 }])
          const etags: Array<{ partNumber: number; etag: string }> = []
          for (const part of signed.parts) {
            const answer = yield* put(part.url, pattern(10, part.partNumber))
            assert.strictEqual(answer.status, 200)
            etags.push({ partNumber: part.partNumber, etag: answer.headers.get("etag") ?? "" })
          }
          const e = yield* failure(bucket.completeMultipartUpload("small.bin", upload.uploadId, etags))
          assert.strictEqual(e.code, "request_failed")
          assert.strictEqual(e.status, 400)
          assert.match(e.message, /EntityTooSmall/)
          assert.isFalse(yield* bucket.exists("small.bin"))
          yield* bucket.abortMultipartUpload("small.bin", upload.uploadId)
        })
      )

      test(
        "abort forgets the upload (completing it is not_found); completing onto an occupied path is already_exists and aborts it",
        Effect.gen(function*() {
          const bucket = yield* Bucket
          const aborted = yield* bucket.signedMultipartUpload("a.bin", { contentType: "application/octet-stream", size: 10 })
          yield* bucket.abortMultipartUpload("a.bin", aborted.uploadId)
          assert.strictEqual((yield* failure(bucket.listParts("a.bin", aborted.uploadId))).code, "not_found")
          // completing it fails and stores nothing: not_found on every layer (S3 and memory answer 404
          // NoSuchUpload; radosgw 500 "This multipart completion is already in progress", which ListParts
          // shows to be an upload that is gone)
          const gone = yield* failure(bucket.completeMultipartUpload("a.bin", aborted.uploadId, [{ partNumber: 1, etag: "\"x\"" }]))
          assert.strictEqual(gone.code, "not_found")
          // and so is an upload id storage never gave (a server restarted mid-upload with another store)
          const unknown = yield* failure(bucket.completeMultipartUpload("b.bin", "2~unknownUploadId", [{ partNumber: 1, etag: "\"x\"" }]))
          assert.strictEqual(unknown.code, "not_found")
          assert.isFalse(yield* bucket.exists("a.bin"))

          const occupant = yield* bucket.put("taken.bin", "occupant")
          const upload = yield* bucket.signedMultipartUpload("taken.bin", { contentType: "application/octet-stream", size: 10 })
          const answer = yield* put(upload.parts[0]!.url, pattern(10))
          const e = yield* failure(bucket.completeMultipartUpload("taken.bin", upload.uploadId, [
            { partNumber: 1, etag: answer.headers.get("etag") ?? "" }
          ]))
          assert.strictEqual(e.code, "already_exists")
          assert.strictEqual(e.etag, occupant.etag)
          assert.strictEqual(yield* bucket.getText("taken.bin"), "occupant")
          assert.strictEqual((yield* failure(bucket.listParts("taken.bin", upload.uploadId))).code, "not_found")
        })
      )
    })

    describe("presigned single PUT and GET", () => {
      test(
        "the signed type and size are enforced; a second PUT without overwrite is 412; a read URL serves the bytes",
        Effect.gen(function*() {
          const bucket = yield* Bucket
          const signed = yield* bucket.signedUploadUrl("up.png", { contentType: "image/png", size: PNG.length })
          assert.strictEqual(signed.method, "PUT")
          assert.deepStrictEqual(signed.headers, { "content-type": "image/png", "if-none-match": "*" })
          const wrongType = yield* put(signed.url, PNG, { ...signed.headers, "content-type": "image/jpeg" })
          assert.strictEqual(wrongType.status, 403)
          const wrongSize = yield* put(signed.url, new Uint8Array([...PNG, 0]), signed.headers)
          assert.strictEqual(wrongSize.status, 403)
          assert.isFalse(yield* bucket.exists("up.png"))
          assert.strictEqual((yield* put(signed.url, PNG, signed.headers)).status, 200)
          const info = yield* bucket.info("up.png")
          assert.strictEqual(info.size, PNG.length)
          assert.strictEqual(info.contentType, "image/png")
          assert.strictEqual((yield* put(signed.url, PNG, signed.headers)).status, 412)

          const read = yield* bucket.signedReadUrl("up.png")
          const got = yield* Effect.promise(() => signedFetch(read))
          assert.strictEqual(got.status, 200)
          assert.deepStrictEqual([...new Uint8Array(yield* Effect.promise(() => got.arrayBuffer()))], [...PNG])
        })
      )
    })

    describe("list, copy, move, del", () => {
      test(
        "lists by prefix in pages (cursor), folded into folders; a limit out of range is invalid_input",
        Effect.gen(function*() {
          const bucket = yield* Bucket
          const paths = [...Array.from({ length: 7 }, (_, i) => `logs/2024/${i}.txt`), "logs/top.txt", "keep/a.txt", "root.txt"]
          yield* Effect.forEach(paths, (p) => bucket.put(p, p), { concurrency: 4 })
          const seen: Array<string> = []
          let cursor: string | undefined
          let pages = 0
          do {
            const page = yield* bucket.list({ prefix: "logs/", limit: 3, cursor })
            seen.push(...page.objects.map((o) => o.path))
            assert.strictEqual(page.hasMore, page.cursor !== undefined)
            cursor = page.cursor
            pages++
          } while (cursor !== undefined)
          assert.strictEqual(pages, 3)
          assert.deepStrictEqual(seen, paths.filter((p) => p.startsWith("logs/")).sort())
          const folded = yield* bucket.list({ prefix: "logs/", mode: "folded" })
          assert.deepStrictEqual(folded.folders, ["logs/2024/"])
          assert.deepStrictEqual(folded.objects.map((o) => o.path), ["logs/top.txt"])
          const top = yield* bucket.list({ mode: "folded" })
          assert.deepStrictEqual(top.folders, ["keep/", "logs/"])
          assert.deepStrictEqual(top.objects.map((o) => [o.path, o.size]), [["root.txt", 8]])
          assert.strictEqual((yield* failure(bucket.list({ limit: 0 }))).code, "invalid_input")
          assert.strictEqual((yield* failure(bucket.list({ limit: 1001 }))).code, "invalid_input")
        })
      )

      test(
        "copy (already_exists onto an occupied path, not_found from a missing one, a new type), move",
        Effect.gen(function*() {
          const bucket = yield* Bucket
          const src = yield* bucket.put("src.txt", "payload", { metadata: { k: "v" } })
          const copied = yield* bucket.copy("src.txt", "copy.txt")
          assert.strictEqual(copied.size, 7)
          assert.strictEqual(copied.etag, src.etag)
          assert.strictEqual(copied.metadata["k"], "v")
          assert.strictEqual((yield* failure(bucket.copy("src.txt", "copy.txt"))).code, "already_exists")
          assert.strictEqual((yield* failure(bucket.copy("missing.txt", "x.txt"))).code, "not_found")
          const retyped = yield* bucket.copy("src.txt", "copy.txt", { allowOverwrite: true, contentType: "text/markdown" })
          assert.strictEqual(retyped.contentType, "text/markdown")
          const moved = yield* bucket.move("src.txt", "dir/moved.txt")
          assert.strictEqual(moved.path, "dir/moved.txt")
          assert.isFalse(yield* bucket.exists("src.txt"))
          assert.strictEqual(yield* bucket.getText("dir/moved.txt"), "payload")
        })
      )

      test(
        "deletes a path, a list and a prefix; an empty prefix needs everything: true",
        Effect.gen(function*() {
          const bucket = yield* Bucket
          yield* Effect.forEach(["p/a", "p/b", "p/c/d", "q/a", "r"], (p) => bucket.put(p, "x"), { concurrency: 4 })
          assert.strictEqual((yield* bucket.del({ prefix: "p/" })).deleted, 3)
          assert.deepStrictEqual((yield* bucket.list()).objects.map((o) => o.path), ["q/a", "r"])
          const empty = yield* failure(bucket.del({ prefix: "" }))
          assert.strictEqual(empty.code, "invalid_input")
          assert.strictEqual((yield* failure(bucket.del(42 as never))).code, "invalid_input")
          assert.strictEqual((yield* bucket.del(["q/a"])).deleted, 1)
          assert.strictEqual((yield* bucket.del("r")).deleted, 1)
          yield* bucket.put("last", "x")
          assert.strictEqual((yield* bucket.del({ prefix: "", everything: true })).deleted, 1)
          assert.deepStrictEqual((yield* bucket.list()).objects, [])
        })
      )

      test(
        "del is idempotent: a path that is not there is no error and counts among the deleted (storage answers alike); a prefix counts what it found",
        Effect.gen(function*() {
          const bucket = yield* Bucket
          assert.strictEqual((yield* bucket.del("never/stored.txt")).deleted, 1)
          yield* bucket.put("once.txt", "x")
          assert.strictEqual((yield* bucket.del(["once.txt", "never/stored.txt"])).deleted, 2)
          assert.strictEqual((yield* bucket.del(["once.txt"])).deleted, 1)
          assert.isFalse(yield* bucket.exists("once.txt"))
          assert.strictEqual((yield* bucket.del({ prefix: "never/" })).deleted, 0)
        })
      )
    })
  })
}
