/**
 * Upload routes in the fast tier: the handler (a plain `Request -> Response` function, called in
 * process) over `Bucket.layerMemory`, the browser's PUTs served by `memoryFetch`: no socket, no radosgw.
 * begin -> PUT -> complete (single and multipart), resume, and the main error answers.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Bucket, type BucketApi } from "../../src/server/Bucket.ts"
import { createUploadHandler, createUploadRoute, type UploadHandler, type UploadRouteOptions } from "../../src/server/route.ts"
import type { BeginUploadResponse, ResumeUploadResponse } from "../../src/shared/protocol.ts"
import { signedFetch } from "../support/signedFetch.ts"

const MiB = 1024 * 1024
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 73, 72, 68, 82, 1, 2, 3, 4])
const JPEG = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0, 16, 74, 70, 73, 70, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0])

const post = (handler: UploadHandler, body: unknown, path = "/api/upload") =>
  Effect.promise(async () => {
    const response = await handler(
      new Request(`http://app${path}`, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } })
    )
    return { status: response.status, json: await response.json() as Record<string, unknown> & { code?: string } }
  })

const send = (url: string, body: Uint8Array, headers: Record<string, string> = {}) =>
  Effect.promise(() => signedFetch(url, { method: "PUT", body: body as BodyInit, headers }))

const beginPng = { type: "begin", pathname: "me.png", contentType: "image/png", size: PNG.length }

/** A test over a fresh memory bucket and an avatar route on it. */
const withRoute = (
  overrides: Partial<UploadRouteOptions>,
  body: (handler: UploadHandler, bucket: BucketApi) => Effect.Effect<void, unknown>
) =>
  Effect.gen(function*() {
    const bucket = yield* Bucket
    const handler = createUploadRoute({
      bucket,
      contentTypes: ["image/png", "image/jpeg"],
      maxSize: "8MB",
      onBeforeUpload: ({ pathname }) => ({ path: `users/42/${pathname}`, tokenPayload: "user-42" }),
      ...overrides
    })
    yield* body(handler, bucket)
  }).pipe(Effect.provide(Bucket.layerMemory()))

describe("upload route over Bucket.layerMemory", () => {
  it.live("begin -> PUT -> complete stores the file and runs onUploadComplete", () => {
    const completed: Array<unknown> = []
    return withRoute({ onUploadComplete: (args) => void completed.push(args) }, (handler, bucket) =>
      Effect.gen(function*() {
        const begun = yield* post(handler, beginPng)
        assert.strictEqual(begun.status, 200)
        const begin = begun.json as unknown as BeginUploadResponse
        assert.strictEqual(begin.path, "users/42/me.png")
        assert.strictEqual((yield* send(begin.url!, PNG, begin.headers)).status, 200)
        const done = yield* post(handler, { type: "complete", completionToken: begin.completionToken })
        assert.strictEqual(done.status, 200)
        assert.deepInclude(done.json, { type: "complete", path: "users/42/me.png", size: PNG.length, contentType: "image/png" })
        assert.strictEqual((yield* bucket.info("users/42/me.png")).etag, done.json["etag"])
        assert.deepInclude(completed[0] as object, { path: "users/42/me.png", tokenPayload: "user-42", size: PNG.length })
        // the same path again: storage refuses the signed PUT (if-none-match: *)
        const again = (yield* post(handler, beginPng)).json as unknown as BeginUploadResponse
        assert.strictEqual((yield* send(again.url!, PNG, again.headers)).status, 412)
      }))
  })

  it.live("multipart: begin signs the parts, resume lists what landed, complete assembles them", () =>
    withRoute({ multipartThreshold: "5MB", partSize: "5MB", contentTypes: ["application/octet-stream"] }, (handler, bucket) =>
      Effect.gen(function*() {
        const size = 5 * MiB + 10
        const data = new Uint8Array(size).map((_, i) => i & 0xff)
        const begun = (yield* post(handler, { type: "begin", pathname: "big.bin", contentType: "application/octet-stream", size }))
          .json as unknown as BeginUploadResponse
        assert.deepStrictEqual(begun.multipart!.parts.map((p) => [p.partNumber, p.size]), [[1, 5 * MiB], [2, 10]])
        const first = yield* send(begun.multipart!.parts[0]!.url, data.subarray(0, 5 * MiB))
        const resumed = yield* post(handler, { type: "resume", completionToken: begun.completionToken })
        assert.strictEqual(resumed.status, 200)
        const resume = resumed.json as unknown as ResumeUploadResponse
        assert.deepStrictEqual(resume.multipart!.landed!.map((p) => p.partNumber), [1])
        assert.deepStrictEqual(resume.multipart!.parts.map((p) => p.partNumber), [2])
        const second = yield* send(resume.multipart!.parts[0]!.url, data.subarray(5 * MiB))
        const parts = [
          { partNumber: 1, etag: first.headers.get("etag")! },
          { partNumber: 2, etag: second.headers.get("etag")! }
        ]
        const bad = yield* post(handler, { type: "complete", completionToken: resume.completionToken, parts: [parts[0], { partNumber: 2, etag: "\"0\"" }] })
        assert.strictEqual(bad.status, 400)
        assert.strictEqual(bad.json.code, "request_failed")
        const done = yield* post(handler, { type: "complete", completionToken: resume.completionToken, parts })
        assert.strictEqual(done.status, 200)
        assert.strictEqual(done.json["size"], size)
        assert.isTrue(Buffer.from(yield* bucket.getBytes("users/42/big.bin")).equals(Buffer.from(data)))
      })))

  it.live("begin refusals: type, size, onBeforeUpload false, malformed requests, unknown route", () =>
    withRoute({}, (handler, bucket) =>
      Effect.gen(function*() {
        const type = yield* post(handler, { ...beginPng, contentType: "application/pdf" })
        assert.deepStrictEqual([type.status, type.json.code], [400, "content_type_not_allowed"])
        const big = yield* post(handler, { ...beginPng, size: 9 * MiB })
        assert.deepStrictEqual([big.status, big.json.code], [413, "too_large"])
        const empty = yield* post(handler, { ...beginPng, size: 0 })
        assert.deepStrictEqual([empty.status, empty.json.code], [400, "empty_body"])
        const malformed = yield* post(handler, { type: "begin", pathname: "x.png" })
        assert.deepStrictEqual([malformed.status, malformed.json.code], [400, "invalid_input"])
        const get = yield* Effect.promise(() => handler(new Request("http://app/api/upload")))
        assert.strictEqual(get.status, 400)
        const refused = createUploadRoute({ bucket, onBeforeUpload: () => false })
        const no = yield* post(refused, beginPng)
        assert.deepStrictEqual([no.status, no.json.code], [401, "unauthorized"])
        const routes = createUploadHandler({ routes: { avatar: { bucket, onBeforeUpload: () => undefined } } })
        const unknown = yield* post(routes, { ...beginPng, route: "banner" }, "/api/upload/banner")
        assert.deepStrictEqual([unknown.status, unknown.json.code], [404, "not_found"])
      })))

  it.live("complete refusals: a forged or foreign token, an upload that never arrived, lying bytes, onUploadComplete throwing", () =>
    withRoute({
      onUploadComplete: ({ path }) => {
        if (path.endsWith("reject.png")) throw Object.assign(new Error("quota exceeded"), { status: 409 })
      }
    }, (handler, bucket) =>
      Effect.gen(function*() {
        const begin = (yield* post(handler, beginPng)).json as unknown as BeginUploadResponse
        const forged = yield* post(handler, { type: "complete", completionToken: `${begin.completionToken.slice(0, -2)}xx` })
        assert.deepStrictEqual([forged.status, forged.json.code], [403, "forbidden"])
        const other = createUploadRoute({ bucket, onBeforeUpload: () => undefined })
        const foreign = yield* post(other, { type: "complete", completionToken: begin.completionToken })
        assert.deepStrictEqual([foreign.status, foreign.json.code], [403, "forbidden"])
        const early = yield* post(handler, { type: "complete", completionToken: begin.completionToken })
        assert.deepStrictEqual([early.status, early.json.code], [404, "not_found"])

        // JPEG bytes under a PNG declaration (same length: storage takes them): refused and deleted
        assert.strictEqual((yield* send(begin.url!, JPEG, begin.headers)).status, 200)
        const lying = yield* post(handler, { type: "complete", completionToken: begin.completionToken })
        assert.deepStrictEqual([lying.status, lying.json.code], [400, "content_type_not_allowed"])
        assert.isFalse(yield* bucket.exists("users/42/me.png"))

        const reject = (yield* post(handler, { ...beginPng, pathname: "reject.png" })).json as unknown as BeginUploadResponse
        yield* send(reject.url!, PNG, reject.headers)
        const thrown = yield* post(handler, { type: "complete", completionToken: reject.completionToken })
        assert.deepStrictEqual([thrown.status, thrown.json.code], [409, "conflict"])
        assert.isFalse(yield* bucket.exists("users/42/reject.png"))
      })))
})
