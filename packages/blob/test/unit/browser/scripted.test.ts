/**
 * The browser upload client against a scripted upload route (fetch) and scripted storage (XHR): the
 * protocol, progress, the part pool, retries and their exhaustion, expiry re-signing, the four browser
 * rules of the spec, cancel, and resuming a multipart upload.
 */
import { assert, describe, it } from "@effect/vitest"
import { PLATFORM_CAP_HINT, RETRY_HINT, upload, type UploadOptions } from "../../../src/browser/upload.ts"
import { BlobError } from "../../../src/shared/BlobError.ts"
import {
  completed,
  fileOf,
  memoryStore,
  MiB,
  multipartBegin,
  type PutScript,
  scriptedRoute,
  scriptedStorage,
  singleBegin
} from "../../browser/scripted.ts"

const fast = { retryDelay: { base: 1, cap: 5 }, resume: false } as const

const failure = (promise: Promise<unknown>) => promise.then(() => assert.fail("expected a rejection"), (e: unknown) => e)

describe("upload: the protocol", () => {
  it("single PUT: begin, PUT with the signed headers, complete; progress up to 100%", async () => {
    const route = scriptedRoute((body) => body.type === "begin" ? singleBegin() : completed(5))
    const storage = scriptedStorage(() => ({ status: 200, etag: "\"e1\"" }))
    const progress: Array<number> = []
    const result = await upload(fileOf(5, "file.bin"), {
      route: "/api/upload",
      routeName: "files",
      pathname: "uploads/file.bin",
      clientPayload: "album-7",
      headers: { authorization: "Bearer t" },
      fetch: route.fetch,
      XMLHttpRequest: storage.Xhr,
      onProgress: (p) => progress.push(p.percentage),
      ...fast
    })
    assert.deepStrictEqual(result, { path: "uploads/file.bin", size: 5, contentType: "application/octet-stream", etag: "\"final\"" })
    assert.deepStrictEqual(route.calls[0], {
      type: "begin",
      pathname: "uploads/file.bin",
      contentType: "application/octet-stream",
      size: 5,
      clientPayload: "album-7",
      route: "files"
    })
    assert.deepStrictEqual(route.calls[1], { type: "complete", completionToken: "token-1", route: "files" })
    assert.strictEqual(storage.puts.length, 1)
    assert.deepStrictEqual(storage.puts[0]!.headers, { "content-type": "application/octet-stream", "if-none-match": "*" })
    assert.strictEqual(progress.at(-1), 100)
    assert.deepStrictEqual(progress, [...progress].sort((a, b) => a - b))
  })

  it("multipart: every part PUT at most `concurrency` at once, completed with the etags in order", async () => {
    const size = 5 * MiB + 3
    const route = scriptedRoute((body) => body.type === "begin" ? multipartBegin(size, MiB) : completed(size))
    const storage = scriptedStorage((put) => ({ status: 200, etag: `"etag-${/part(\d+)/.exec(put.url)![1]}"` }))
    const progress: Array<number> = []
    await upload(fileOf(size), {
      route: "/u",
      fetch: route.fetch,
      XMLHttpRequest: storage.Xhr,
      concurrency: 2,
      onProgress: (p) => progress.push(p.loaded),
      ...fast
    })
    assert.strictEqual(storage.puts.length, 6)
    assert.strictEqual(storage.maxInFlight, 2)
    assert.deepStrictEqual(storage.puts.map((p) => p.size).sort((a, b) => a - b), [3, MiB, MiB, MiB, MiB, MiB])
    assert.deepStrictEqual(route.calls[1]!.parts, [1, 2, 3, 4, 5, 6].map((n) => ({ partNumber: n, etag: `"etag-${n}"` })))
    assert.strictEqual(progress.at(-1), size)
  })
})

describe("upload: retries", () => {
  it("a part answered 503 twice, then 200, lands; a route 502 without JSON is retried too", async () => {
    const size = 2 * MiB
    let beginCalls = 0
    const route = scriptedRoute((body) => {
      if (body.type === "begin" && beginCalls++ === 0) return new Response("Bad gateway", { status: 502 })
      return body.type === "begin" ? multipartBegin(size, MiB) : completed(size)
    })
    const storage = scriptedStorage((put) =>
      put.url.includes("part2") && put.attempt <= 2 ? { status: 503, body: "<Error><Code>SlowDown</Code></Error>" } : { status: 200, etag: "\"e\"" }
    )
    await upload(fileOf(size), { route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, ...fast })
    assert.strictEqual(storage.puts.filter((p) => p.url.includes("part2")).length, 3)
    assert.strictEqual(beginCalls, 2)
  })

  it("retries used up: request_failed with the attempt count and the last status; no hint, nothing landed", async () => {
    const route = scriptedRoute((body) => body.type === "begin" ? singleBegin() : completed(5))
    const storage = scriptedStorage(() => ({ status: 500, body: "<Error><Code>InternalError</Code></Error>" }))
    const error = await failure(upload(fileOf(5), { route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, retries: 2, ...fast }))
    assert.isTrue(BlobError.is(error, "request_failed"))
    const e = error as BlobError
    assert.strictEqual(storage.puts.length, 3)
    assert.match(e.message, /^The upload failed after 3 attempts \(last status 500\)$/)
    assert.isUndefined(e.hint)
    assert.strictEqual(e.status, 500)
  })

  it("retries used up after parts landed: the hint says the landed parts are kept", async () => {
    const size = 3 * MiB
    const route = scriptedRoute((body) => body.type === "begin" ? multipartBegin(size, MiB) : completed(size))
    const storage = scriptedStorage((put) => put.url.includes("part3") ? { status: 503 } : { status: 200, etag: "\"e\"" })
    const e = await failure(upload(fileOf(size), { route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, retries: 1, concurrency: 1, ...fast })) as BlobError
    assert.match(e.message, /^The upload of part 3 failed after 2 attempts \(last status 503\)/)
    assert.strictEqual(e.hint, RETRY_HINT)
    assert.include(e.message, "landed parts are kept")
  })

  it("a begin call whose retries are used up has no hint about landed parts: none did", async () => {
    const route = scriptedRoute(() => new Response("<html>boom</html>", { status: 500 }))
    const storage = scriptedStorage(() => ({ status: 200, etag: "\"e\"" }))
    const e = await failure(upload(fileOf(5), { route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, retries: 1, ...fast })) as BlobError
    assert.match(e.message, /^Starting the upload failed after 2 attempts \(last status 500\)$/)
    assert.isUndefined(e.hint)
    assert.strictEqual(storage.puts.length, 0)
  })

  const badTimes: ReadonlyArray<readonly [string, number, Partial<UploadOptions>, number]> = [
    ...[Number.NaN, 0, -1, Number.POSITIVE_INFINITY].map((ms) => ["stallTimeout", ms, { stallTimeout: ms }, 1] as const),
    ...[Number.NaN, -1, Number.POSITIVE_INFINITY].map((ms) => ["freshFor", ms, { freshFor: ms }, 0] as const),
    ...[Number.NaN, -5].map((ms) => ["retryDelay.base", ms, { retryDelay: { base: ms } }, 0] as const),
    ...[Number.NaN, Number.POSITIVE_INFINITY].map((ms) => ["retryDelay.cap", ms, { retryDelay: { cap: ms } }, 0] as const)
  ]
  for (const [name, ms, bad, minimum] of badTimes) {
    it(`${name} ${ms} is refused with a TypeError before any call`, async () => {
      const route = scriptedRoute((body) => body.type === "begin" ? singleBegin() : completed(5))
      const storage = scriptedStorage(() => ({ status: 200, etag: "\"e\"" }))
      const e = await failure(upload(fileOf(5), { route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, ...fast, ...bad }))
      assert.instanceOf(e, TypeError)
      assert.strictEqual((e as TypeError).message, `upload: ${name} must be a finite number of milliseconds >= ${minimum} (got ${ms})`)
      assert.strictEqual(route.calls.length, 0)
    })
  }

  it("a connection dropped after bytes went out is retried; the retry meeting its own object completes", async () => {
    const route = scriptedRoute((body) => body.type === "begin" ? singleBegin() : completed(5))
    const storage = scriptedStorage((put): PutScript =>
      put.attempt === 1 ? { drop: true, sent: 3 } : { status: 412, body: "<Error><Code>PreconditionFailed</Code></Error>" }
    )
    const result = await upload(fileOf(5), { route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, ...fast })
    assert.strictEqual(result.size, 5)
    assert.strictEqual(storage.puts.length, 2)
    assert.strictEqual(route.calls[1]!.type, "complete")
  })

  it("a PUT that stalls (no progress, no answer) is given up after stallTimeout and retried", async () => {
    const route = scriptedRoute((body) => body.type === "begin" ? singleBegin() : completed(5))
    const storage = scriptedStorage((put): PutScript => put.attempt === 1 ? { hang: true } : { status: 200, etag: "\"e\"" })
    const result = await upload(fileOf(5), { route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, stallTimeout: 30, ...fast })
    assert.strictEqual(result.size, 5)
    assert.strictEqual(storage.puts.length, 2)
    assert.strictEqual(storage.aborted.length, 1)
    // a route call that never answers is given up the same way
    const silent = scriptedRoute(() => new Promise(() => undefined))
    const e = await failure(upload(fileOf(5), { route: "/u", fetch: silent.fetch, XMLHttpRequest: storage.Xhr, stallTimeout: 20, retries: 1, ...fast })) as BlobError
    assert.strictEqual(e.code, "request_failed")
    assert.match(e.message, /^Starting the upload failed after 2 attempts \(last status none: no answer\)/)
  })

  it("no answer ever: the exhaustion message says so and the status is 502", async () => {
    const route = scriptedRoute((body) => body.type === "begin" ? singleBegin() : completed(5))
    const storage = scriptedStorage(() => ({ drop: true, sent: 2 }))
    const e = await failure(upload(fileOf(5), { route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, retries: 1, ...fast })) as BlobError
    assert.strictEqual(e.code, "request_failed")
    assert.strictEqual(e.status, 502)
    assert.match(e.message, /after 2 attempts \(last status none: no answer\)/)
  })
})

describe("upload: the browser rules of the spec", () => {
  it("1. no status and no bytes sent: the CORS message, not retried", async () => {
    const route = scriptedRoute((body) => body.type === "begin" ? singleBegin() : completed(5))
    const storage = scriptedStorage(() => ({ drop: true, sent: 0 }))
    const e = await failure(upload(fileOf(5), { route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, ...fast })) as BlobError
    assert.isTrue(BlobError.is(e, "request_failed"))
    assert.strictEqual(storage.puts.length, 1)
    assert.match(e.message, /the bucket must allow PUT and the signed headers \(content-type, content-length, if-none-match\) from /)
    assert.match(e.hint!, /CORS/)
    assert.strictEqual(route.calls.length, 1) // never completed
  })

  it("1. not once storage took bytes of the upload: a PUT that then ends unanswered and unsent is retried (a store gone, a network dropped)", async () => {
    // the single PUT: the first attempt is cut after bytes went out, the retry's connection is refused
    // (radosgw stopped), the third lands: storage took this page's PUT, so its CORS rules allow it
    const route = scriptedRoute((body) => body.type === "begin" ? singleBegin() : completed(5))
    const storage = scriptedStorage((put): PutScript =>
      put.attempt === 1 ? { drop: true, sent: 3 } : put.attempt === 2 ? { drop: true, sent: 0 } : { status: 200, etag: "\"e\"" }
    )
    const result = await upload(fileOf(5), { route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, ...fast })
    assert.strictEqual(result.size, 5)
    assert.strictEqual(storage.puts.length, 3)
    // a multipart upload: part 1 landed, part 2 meets the refused connection until its retries run out
    const size = 2 * MiB
    const parts = scriptedRoute((body) => body.type === "begin" ? multipartBegin(size, MiB) : completed(size))
    const gone = scriptedStorage((put): PutScript => put.url.includes("part1") ? { status: 200, etag: "\"e\"" } : { drop: true, sent: 0 })
    const e = await failure(upload(fileOf(size), { route: "/u", fetch: parts.fetch, XMLHttpRequest: gone.Xhr, concurrency: 1, retries: 2, ...fast })) as BlobError
    assert.strictEqual(e.code, "request_failed")
    assert.strictEqual(e.message, `The upload of part 2 failed after 3 attempts (last status none: no answer) (${RETRY_HINT.charAt(0).toLowerCase()}${RETRY_HINT.slice(1)})`)
    assert.strictEqual(e.hint, RETRY_HINT)
    assert.strictEqual(gone.puts.filter((p) => p.url.includes("part2")).length, 3)
  })

  it("1. not while the browser is offline (navigator.onLine false): retried as no answer", async () => {
    let online = false
    const route = scriptedRoute((body) => body.type === "begin" ? singleBegin() : completed(5))
    // offline for the first PUT (the first this upload sends: nothing reached storage yet), back for the retry
    const storage = scriptedStorage((put): PutScript => {
      if (put.attempt === 1) return { drop: true, sent: 0 }
      online = true
      return { status: 200, etag: "\"e\"" }
    })
    const navigator = Object.getOwnPropertyDescriptor(globalThis, "navigator")
    Object.defineProperty(globalThis, "navigator", { configurable: true, value: { get onLine() { return online } } })
    try {
      const result = await upload(fileOf(5), { route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, ...fast })
      assert.strictEqual(result.size, 5)
      assert.strictEqual(storage.puts.length, 2)
    } finally {
      if (navigator === undefined) delete (globalThis as { navigator?: unknown }).navigator
      else Object.defineProperty(globalThis, "navigator", navigator)
    }
  })

  it("2a. a 403 on a freshly issued URL is signature_mismatch, with its built-in hint", async () => {
    const route = scriptedRoute((body) => body.type === "begin" ? singleBegin() : completed(5))
    const storage = scriptedStorage(() => ({ status: 403, body: "<Error><Code>SignatureDoesNotMatch</Code></Error>" }))
    const e = await failure(upload(fileOf(5), { route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, ...fast })) as BlobError
    assert.strictEqual(e.code, "signature_mismatch")
    assert.strictEqual(e.status, 403)
    assert.match(e.hint!, /did not match what was authorized/)
    assert.strictEqual(storage.puts.length, 1)
    assert.isFalse(route.calls.some((c) => c.type === "resume"))
  })

  it("2b. a 403 on an older URL is expiry: the route re-signs (resume) and the PUT is sent again", async () => {
    const route = scriptedRoute((body) => {
      if (body.type === "begin") return singleBegin()
      if (body.type === "resume") {
        return { ...singleBegin({ url: "https://storage.test/bucket/uploads/file.bin?X-Amz-Signature=2", completionToken: "token-2" }), type: "resume" }
      }
      return completed(5)
    })
    const storage = scriptedStorage((put) =>
      put.url.endsWith("Signature=1") ? { status: 403, body: "<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>" } : { status: 200, etag: "\"e\"" }
    )
    // freshFor 0: every URL counts as older than fresh
    await upload(fileOf(5), { route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, freshFor: 0, retries: 0, ...fast })
    assert.deepStrictEqual(route.calls.map((c) => c.type), ["begin", "resume", "complete"])
    assert.deepStrictEqual(route.calls[1], { type: "resume", completionToken: "token-1" })
    assert.strictEqual(route.calls[2]!.completionToken, "token-2") // the renewed token from then on
    assert.strictEqual(storage.puts.length, 2)
  })

  it("2c. expired part URLs are renewed together, once: a part not sent yet goes straight to its new URL", async () => {
    const size = 3 * MiB
    let resumes = 0
    const route = scriptedRoute((body) => {
      if (body.type === "begin") return multipartBegin(size, MiB, "1")
      if (body.type === "resume") {
        resumes++
        const plan = multipartBegin(size, MiB, "2")
        return {
          ...plan,
          type: "resume",
          completionToken: "token-2",
          multipart: { ...plan.multipart, parts: plan.multipart.parts.filter((p) => body.parts.includes(p.partNumber)) }
        }
      }
      return completed(size)
    })
    // part 1 lands; parts 2 and 3 meet expired signatures
    const storage = scriptedStorage((put) =>
      put.url.endsWith("Signature=1") && !put.url.includes("part1") ? { status: 403 } : { status: 200, etag: "\"e\"" }
    )
    await upload(fileOf(size), { route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, freshFor: 0, concurrency: 1, ...fast })
    assert.strictEqual(resumes, 1)
    assert.deepStrictEqual(route.calls[1]!.parts, [2, 3])
    // part 1, part 2 refused, part 2 again, part 3 (renewed before it was first sent)
    assert.deepStrictEqual(storage.puts.map((p) => /part(\d)\?X-Amz-Signature=(\d)/.exec(p.url)!.slice(1).join("@")), ["1@1", "2@1", "2@2", "3@2"])
    assert.strictEqual(route.calls.at(-1)!.completionToken, "token-2")
  })

  it("2d. a renewed URL refused again is signature_mismatch (no loop)", async () => {
    const route = scriptedRoute((body) => body.type === "resume" ? { ...singleBegin(), type: "resume" } : singleBegin())
    const storage = scriptedStorage(() => ({ status: 403 }))
    const e = await failure(upload(fileOf(5), { route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, freshFor: 0, ...fast })) as BlobError
    assert.strictEqual(e.code, "signature_mismatch")
    assert.isAtMost(storage.puts.length, 2)
  })

  it("3. a 413 from a platform cap in front of the route is too_large naming the caps", async () => {
    const route = scriptedRoute(() => new Response("Request Entity Too Large", { status: 413 }))
    const storage = scriptedStorage(() => ({ status: 200 }))
    const e = await failure(upload(fileOf(5), { route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, ...fast })) as BlobError
    assert.strictEqual(e.code, "too_large")
    assert.strictEqual(e.hint, PLATFORM_CAP_HINT)
    assert.match(e.message, /4\.5 MB/)
    assert.match(e.message, /6 MB/)
    assert.match(e.message, /100 MB/)
    // a proxied PUT refused by the platform the same way (not storage's EntityTooLarge)
    const route2 = scriptedRoute((body) => body.type === "begin" ? singleBegin() : completed(5))
    const proxy = scriptedStorage(() => ({ status: 413, body: "<html>413 Payload Too Large</html>" }))
    const e2 = await failure(upload(fileOf(5), { route: "/u", fetch: route2.fetch, XMLHttpRequest: proxy.Xhr, ...fast })) as BlobError
    assert.strictEqual(e2.hint, PLATFORM_CAP_HINT)
    const direct = scriptedStorage(() => ({ status: 413, body: "<Error><Code>EntityTooLarge</Code></Error>" }))
    const e3 = await failure(upload(fileOf(5), { route: "/u", fetch: route2.fetch, XMLHttpRequest: direct.Xhr, ...fast })) as BlobError
    assert.strictEqual(e3.code, "too_large")
    assert.isUndefined(e3.hint)
  })

  it("4. cancel rejects with an AbortError (never a BlobError) and aborts the PUTs in flight", async () => {
    const size = 3 * MiB
    const route = scriptedRoute((body) => body.type === "begin" ? multipartBegin(size, MiB) : completed(size))
    const storage = scriptedStorage(() => ({ hang: true }))
    const controller = new AbortController()
    const pending = upload(fileOf(size), { route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, signal: controller.signal, ...fast })
    await new Promise((resolve) => setTimeout(resolve, 20))
    assert.strictEqual(storage.puts.length, 3)
    controller.abort()
    const e = await failure(pending)
    assert.instanceOf(e, DOMException)
    assert.strictEqual((e as DOMException).name, "AbortError")
    assert.isFalse(BlobError.is(e))
    assert.strictEqual(storage.aborted.length, 3)
    assert.isFalse(route.calls.some((c) => c.type === "complete"))
    // an already aborted signal: nothing is sent
    const again = await failure(upload(fileOf(5), { route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, signal: controller.signal }))
    assert.strictEqual((again as DOMException).name, "AbortError")
  })

  it("the route's refusals are its BlobError, rebuilt from the JSON (same class and code)", async () => {
    const refusal = new BlobError("content_type_not_allowed", { message: "text/html is not allowed here" })
    const route = scriptedRoute(() => Response.json(refusal.toJSON(), { status: 400 }))
    const storage = scriptedStorage(() => ({ status: 200 }))
    const e = await failure(upload(fileOf(5, "a.html", "text/html"), { route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, ...fast }))
    assert.instanceOf(e, BlobError)
    assert.isTrue(BlobError.is(e, "content_type_not_allowed"))
    assert.strictEqual((e as BlobError).message, "text/html is not allowed here")
    assert.strictEqual(route.calls.length, 1) // a refusal is not retried
    assert.strictEqual(storage.puts.length, 0)
  })
})

describe("upload: a completion token that expired while the bytes went out", () => {
  const expired = () => Response.json(new BlobError("forbidden", { message: "The completion token has expired" }).toJSON(), { status: 403 })

  it("complete refused (forbidden): the token is renewed once (resume) and complete sent again with it", async () => {
    const route = scriptedRoute((body) => {
      if (body.type === "begin") return singleBegin()
      if (body.type === "resume") return { ...singleBegin({ completionToken: "token-2" }), type: "resume" }
      return body.completionToken === "token-1" ? expired() : completed(5)
    })
    const storage = scriptedStorage(() => ({ status: 200, etag: "\"e\"" }))
    const result = await upload(fileOf(5), { route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, ...fast })
    assert.strictEqual(result.size, 5)
    assert.deepStrictEqual(route.calls.map((c) => c.type), ["begin", "complete", "resume", "complete"])
    assert.deepStrictEqual(route.calls[2], { type: "resume", completionToken: "token-1" })
    assert.strictEqual(route.calls[3]!.completionToken, "token-2")
    assert.strictEqual(storage.puts.length, 1) // the bytes went once
  })

  it("a multipart upload renews with no parts to sign, and completes with the same etags", async () => {
    const size = 2 * MiB
    const route = scriptedRoute((body) => {
      if (body.type === "begin") return multipartBegin(size, MiB)
      if (body.type === "resume") {
        const plan = multipartBegin(size, MiB, "2")
        return { ...plan, type: "resume", completionToken: "token-2", multipart: { ...plan.multipart, parts: [] } }
      }
      return body.completionToken === "token-1" ? expired() : completed(size)
    })
    const storage = scriptedStorage((put) => ({ status: 200, etag: `"etag-${/part(\d+)/.exec(put.url)![1]}"` }))
    await upload(fileOf(size), { route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, ...fast })
    assert.deepStrictEqual(route.calls.map((c) => c.type), ["begin", "complete", "resume", "complete"])
    assert.deepStrictEqual(route.calls[2], { type: "resume", completionToken: "token-1", parts: [] })
    assert.deepStrictEqual(route.calls[3], { type: "complete", completionToken: "token-2", parts: route.calls[1]!.parts })
    assert.strictEqual(storage.puts.length, 2)
  })

  it("a token resume refuses too is the complete's own refusal; a renewed token refused again is not renewed again", async () => {
    const storage = scriptedStorage(() => ({ status: 200, etag: "\"e\"" }))
    const refusing = scriptedRoute((body) => body.type === "begin" ? singleBegin() : expired())
    const e = await failure(upload(fileOf(5), { route: "/u", fetch: refusing.fetch, XMLHttpRequest: storage.Xhr, ...fast })) as BlobError
    assert.strictEqual(e.code, "forbidden")
    assert.strictEqual(e.message, "The completion token has expired")
    assert.deepStrictEqual(refusing.calls.map((c) => c.type), ["begin", "complete", "resume"])
    const again = scriptedRoute((body) =>
      body.type === "begin" ? singleBegin() : body.type === "resume" ? { ...singleBegin({ completionToken: "token-2" }), type: "resume" } : expired()
    )
    const twice = await failure(upload(fileOf(5), { route: "/u", fetch: again.fetch, XMLHttpRequest: storage.Xhr, ...fast })) as BlobError
    assert.strictEqual(twice.code, "forbidden")
    assert.deepStrictEqual(again.calls.map((c) => c.type), ["begin", "complete", "resume", "complete"])
  })
})

describe("upload: resuming a multipart upload", () => {
  it("the same file picked again sends only the parts storage does not hold, then completes with all", async () => {
    const size = 3 * MiB
    const store = memoryStore()
    const part2Fails = { on: true }
    const route = scriptedRoute((body) => {
      if (body.type === "begin") return multipartBegin(size, MiB)
      if (body.type === "resume") {
        const plan = multipartBegin(size, MiB, "3")
        return {
          ...plan,
          type: "resume",
          completionToken: "token-3",
          multipart: {
            ...plan.multipart,
            parts: plan.multipart.parts.filter((p) => p.partNumber === 2),
            landed: [{ partNumber: 1, etag: "\"s1\"", size: MiB }, { partNumber: 3, etag: "\"s3\"", size: MiB }]
          }
        }
      }
      return completed(size)
    })
    const storage = scriptedStorage((put) =>
      put.url.includes("part2") && part2Fails.on ? { status: 500 } : { status: 200, etag: `"x${/part(\d)/.exec(put.url)![1]}"` }
    )
    const file = fileOf(size, "movie.mp4")
    const options: UploadOptions = { route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, retries: 0, resume: store, retryDelay: { base: 1 } }
    const e = await failure(upload(file, options)) as BlobError
    assert.strictEqual(e.code, "request_failed")
    assert.strictEqual(store.map.size, 1) // remembered for resuming
    part2Fails.on = false
    storage.puts.length = 0
    const progress: Array<number> = []
    const result = await upload(file, { ...options, onProgress: (p) => progress.push(p.loaded) })
    assert.strictEqual(result.size, size)
    assert.deepStrictEqual(route.calls.map((c) => c.type), ["begin", "resume", "complete"])
    assert.deepStrictEqual(route.calls[1], { type: "resume", completionToken: "token-1" })
    assert.deepStrictEqual(storage.puts.map((p) => p.url.includes("part2")), [true])
    assert.deepStrictEqual(route.calls[2]!.parts, [
      { partNumber: 1, etag: "\"s1\"" },
      { partNumber: 2, etag: "\"x2\"" },
      { partNumber: 3, etag: "\"s3\"" }
    ])
    assert.strictEqual(route.calls[2]!.completionToken, "token-3")
    assert.strictEqual(progress[0], 2 * MiB) // the landed parts count from the start
    assert.strictEqual(store.map.size, 0) // forgotten once complete
  })

  it("a remembered upload the route no longer knows starts over with begin", async () => {
    const store = memoryStore()
    const file = fileOf(2 * MiB)
    const options: UploadOptions = { route: "/u", resume: store, retryDelay: { base: 1 }, XMLHttpRequest: scriptedStorage(() => ({ status: 200, etag: "\"e\"" })).Xhr }
    const { fingerprint } = await import("../../../src/browser/upload.ts")
    store.setItem(fingerprint(file, options, file.name, file.type), JSON.stringify({ completionToken: "old", savedAt: 0 }))
    const route = scriptedRoute((body) =>
      body.type === "resume"
        ? Response.json(new BlobError("forbidden", { message: "The completion token has expired" }).toJSON(), { status: 403 })
        : body.type === "begin"
        ? multipartBegin(2 * MiB, MiB)
        : completed(2 * MiB)
    )
    await upload(file, { ...options, fetch: route.fetch })
    assert.deepStrictEqual(route.calls.map((c) => c.type), ["resume", "begin", "complete"])
  })
})
