/**
 * The browser upload client's whole flow in memory (fast tier): `upload` against an in-memory route and
 * object store that keeps state (`memoryRoute.ts`), so each test checks what ended up stored, not only
 * what was sent: a single PUT, a multipart upload with its progress, a part failing then sent again, a
 * recorded upload resumed, and the route's refusals arriving as its BlobError. The scripted cases of the
 * spec's browser rules stay in `test/browser/upload.test.ts`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { upload, uploadEffect, type UploadOptions, type UploadProgress } from "../../../src/browser/upload.ts"
import { BlobError } from "../../../src/shared/BlobError.ts"
import { memoryStore } from "../../browser/scripted.ts"
import { memoryRoute, partNumberOf, patternedFile } from "./memoryRoute.ts"

const fast = { retryDelay: { base: 1, cap: 5 }, resume: false } as const

const clientOf = (route: ReturnType<typeof memoryRoute>) => ({ route: "/api/upload", fetch: route.fetch, XMLHttpRequest: route.Xhr })

const bytesOf = async (file: Blob) => new Uint8Array(await file.arrayBuffer())

const partOf = (url: string) => partNumberOf(url) ?? 0

describe("upload in memory", () => {
  it("single PUT: begin, the file's bytes stored under the route's path, complete reports the stored object", async () => {
    const route = memoryRoute()
    const file = patternedFile(700, "notes.txt", "text/plain")
    const progress: Array<UploadProgress> = []
    const result = await upload(file, { ...clientOf(route), pathname: "docs/notes.txt", onProgress: (p) => progress.push(p), ...fast })
    const stored = route.objects.get("docs/notes.txt")!
    assert.deepStrictEqual(result, { path: "docs/notes.txt", size: 700, contentType: "text/plain", etag: stored.etag })
    assert.deepStrictEqual(await route.bytesOf("docs/notes.txt"), await bytesOf(file))
    assert.deepStrictEqual(route.calls.map((c) => c.type), ["begin", "complete"])
    assert.strictEqual(route.storage.puts.length, 1)
    assert.deepStrictEqual(progress.at(-1), { loaded: 700, total: 700, percentage: 100 })
  })

  it("multipart: parts sent `concurrency` at once land at their offsets; progress climbs to 100%", async () => {
    const route = memoryRoute({ multipartThreshold: 1024, partSize: 256 })
    const file = patternedFile(2000)
    const progress: Array<UploadProgress> = []
    const result = await upload(file, { ...clientOf(route), pathname: "big.bin", concurrency: 3, onProgress: (p) => progress.push(p), ...fast })
    assert.strictEqual(result.size, 2000)
    assert.deepStrictEqual(await route.bytesOf("big.bin"), await bytesOf(file))
    // 8 parts: 7 of 256 bytes and the last of 208
    assert.deepStrictEqual(route.storage.puts.map((p) => partOf(p.url)).sort((a, b) => a - b), [1, 2, 3, 4, 5, 6, 7, 8])
    assert.strictEqual(route.storage.maxInFlight, 3)
    assert.deepStrictEqual(route.calls.at(-1)!.parts.map((p: { partNumber: number }) => p.partNumber), [1, 2, 3, 4, 5, 6, 7, 8])
    const loaded = progress.map((p) => p.loaded)
    assert.deepStrictEqual(loaded, [...loaded].sort((a, b) => a - b))
    assert.isTrue(loaded.some((n) => n > 0 && n < 2000))
    assert.deepStrictEqual(progress.at(-1), { loaded: 2000, total: 2000, percentage: 100 })
    assert.strictEqual(route.uploads.size, 0) // completed: no upload left open
  })

  it("a part answered 503, then dropped mid-way, is sent again and the object is intact", async () => {
    const route = memoryRoute({
      partSize: 256,
      fault: (put) =>
        partOf(put.url) !== 3 ? undefined : put.attempt === 1 ? { status: 503 } : put.attempt === 2 ? { drop: true, sent: 100 } : undefined
    })
    const file = patternedFile(1500)
    const progress: Array<number> = []
    await upload(file, { ...clientOf(route), pathname: "retried.bin", onProgress: (p) => progress.push(p.loaded), ...fast })
    assert.deepStrictEqual(await route.bytesOf("retried.bin"), await bytesOf(file))
    assert.strictEqual(route.storage.puts.filter((p) => partOf(p.url) === 3).length, 3)
    assert.strictEqual(route.storage.puts.length, 8) // 6 parts + 2 retries
    assert.isTrue(progress.every((n) => n <= 1500))
    assert.strictEqual(progress.at(-1), 1500)
  })

  it("a recorded upload is resumed: only the part storage lacks is sent, then it completes intact", async () => {
    let failing = true
    const route = memoryRoute({ multipartThreshold: 512, partSize: 256, fault: (put) => failing && partOf(put.url) === 2 ? { status: 500 } : undefined })
    const store = memoryStore()
    const file = patternedFile(1000, "movie.mp4", "video/mp4")
    const options: UploadOptions = { ...clientOf(route), resume: store, retries: 0, retryDelay: { base: 1 } }

    const error = await upload(file, options).then(() => assert.fail("expected a rejection"), (e: unknown) => e)
    assert.isTrue(BlobError.is(error, "request_failed"))
    assert.strictEqual(store.map.size, 1) // recorded for resuming
    assert.deepStrictEqual([...[...route.uploads.values()][0]!.landed.keys()].sort(), [1, 3, 4]) // the parts in flight landed

    failing = false
    route.storage.puts.length = 0
    const progress: Array<number> = []
    const result = await upload(file, { ...options, onProgress: (p) => progress.push(p.loaded) })
    assert.deepStrictEqual(route.calls.map((c) => c.type), ["begin", "resume", "complete"])
    assert.deepStrictEqual(route.storage.puts.map((p) => partOf(p.url)), [2])
    assert.strictEqual(progress[0], 1000 - 256) // the landed parts count from the start
    assert.deepStrictEqual(await route.bytesOf(result.path), await bytesOf(file))
    assert.strictEqual(store.map.size, 0) // forgotten once complete
  })

  it("an onProgress that throws is reported (reportError) as a throwing subscriber is, and stops nothing: a single PUT and a multipart upload complete", async () => {
    const page = globalThis as { reportError?: ((error: unknown) => void) | undefined }
    const original = page.reportError
    const reported: Array<unknown> = []
    page.reportError = (error) => void reported.push(error)
    try {
      for (const [size, layout] of [[700, {}], [2000, { multipartThreshold: 1024, partSize: 256 }]] as const) {
        reported.length = 0
        const route = memoryRoute(layout)
        const file = patternedFile(size)
        const bug = new Error("the progress bar has a bug")
        let calls = 0
        const onProgress = () => {
          calls++
          throw bug
        }
        const result = await upload(file, { ...clientOf(route), pathname: "p.bin", onProgress, ...fast })
        assert.deepStrictEqual(await route.bytesOf(result.path), await bytesOf(file))
        assert.isAbove(calls, 1, "called again after it threw")
        assert.strictEqual(reported.length, calls)
        assert.isTrue(reported.every((error) => error === bug))
      }
    } finally {
      page.reportError = original
    }
  })

  it("a refusal of begin arrives as the route's BlobError (code, status, message, hint), not retried", async () => {
    const route = memoryRoute({
      onBegin: (request) =>
        request.contentType === "text/html"
          ? new BlobError("content_type_not_allowed", { message: "text/html is not allowed here", hint: "Upload an image" })
          : new BlobError("rate_limited", { message: "Too many uploads", retryAfter: 30 })
    })
    const refused = await upload(patternedFile(10, "a.html", "text/html"), { ...clientOf(route), ...fast }).catch((e: unknown) => e)
    assert.instanceOf(refused, BlobError)
    const e = refused as BlobError
    assert.strictEqual(e.code, "content_type_not_allowed")
    assert.strictEqual(e.status, 400)
    assert.strictEqual(e.hint, "Upload an image")
    assert.match(e.message, /^text\/html is not allowed here/)
    // a 429 with the route's JSON is its refusal too: kept as rate_limited with retryAfter, not retried
    const limited = await upload(patternedFile(10), { ...clientOf(route), ...fast }).catch((e: unknown) => e) as BlobError
    assert.strictEqual(limited.code, "rate_limited")
    assert.strictEqual(limited.retryAfter, 30)
    assert.deepStrictEqual(route.calls.map((c) => c.type), ["begin", "begin"])
    assert.strictEqual(route.storage.puts.length, 0)
  })

  it.effect("a refusal of complete fails uploadEffect with that BlobError", () =>
    Effect.gen(function*() {
      // storage answers 200 but keeps nothing: complete finds no object
      const route = memoryRoute({ fault: () => ({ status: 200, etag: "\"lost\"" }) })
      const error = yield* uploadEffect(patternedFile(10), { ...clientOf(route), pathname: "lost.bin", ...fast }).pipe(Effect.flip)
      assert.isTrue(BlobError.is(error, "not_found"))
      assert.strictEqual(error.message, "Nothing was uploaded")
      assert.deepStrictEqual(route.calls.map((c) => c.type), ["begin", "complete"])
    }))
})
