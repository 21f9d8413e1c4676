/**
 * The browser client against the real upload route and radosgw, in Node: XHR is a thin shim over fetch
 * (Node has no XMLHttpRequest), everything else is real — presigned URLs that really expire, storage's
 * own 403 for them, the route's resume message, ListParts. Paths no scripted test can prove: an
 * expired URL re-signed and sent again, an upload outlasting its completion token completed with a
 * renewed one, and a failed multipart upload resumed with only the missing part.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TestObjectStorage } from "../../../platform/src/testing/objectStorage.ts"
import { createUploadRoute } from "../../src/server/route.ts"
import { upload, type XhrLike } from "../../src/browser/upload.ts"
import { BlobError } from "../../src/shared/BlobError.ts"
import { freshBucket } from "../support/storage.ts"
import { memoryStore } from "./scripted.ts"

const MiB = 1024 * 1024

/**
 * XMLHttpRequest over fetch. `before(url, n)` runs before the n-th PUT (1-based) and may delay it, or
 * answer it with a status without sending anything; `after(url, n)` runs once storage answered it, before
 * the page hears of it (a slow upload: the URL was valid when the PUT started).
 */
const fetchXhr = (
  before: (url: string, n: number) => Promise<number | undefined> = async () => undefined,
  after: (url: string, n: number) => Promise<void> = async () => undefined
) => {
  let count = 0
  const sent: Array<string> = []
  class FetchXhr implements XhrLike {
    status = 0
    responseText = ""
    upload: XhrLike["upload"] = { onprogress: null }
    onload: (() => void) | null = null
    onerror: (() => void) | null = null
    ontimeout: (() => void) | null = null
    onabort: (() => void) | null = null
    private url = ""
    private headers: Record<string, string> = {}
    private answer = new Headers()
    private controller = new AbortController()
    open(_method: string, url: string) {
      this.url = url
    }
    setRequestHeader(name: string, value: string) {
      this.headers[name] = value
    }
    getResponseHeader(name: string) {
      return this.answer.get(name)
    }
    send(body: Blob) {
      const n = ++count
      void (async () => {
        const scripted = await before(this.url, n)
        if (scripted !== undefined) {
          this.status = scripted
          this.onload?.()
          return
        }
        sent.push(this.url)
        const response = await fetch(this.url, { method: "PUT", headers: this.headers, body, signal: this.controller.signal })
        await after(this.url, n)
        this.upload.onprogress?.({ loaded: body.size })
        this.answer = response.headers
        this.responseText = await response.text()
        this.status = response.status
        this.onload?.()
      })().catch(() => {
        if (!this.controller.signal.aborted) this.onerror?.()
      })
    }
    abort() {
      this.controller.abort()
    }
  }
  return { Xhr: FetchXhr, sent }
}

/** The route as the client's fetch: a Request straight into the handler. */
const routeFetch = (options: Parameters<typeof createUploadRoute>[0]) => {
  const handler = createUploadRoute(options)
  const calls: Array<string> = []
  const fetchImpl = (async (url: string | URL | Request, init?: RequestInit) => {
    calls.push(JSON.parse(String(init?.body)).type)
    return handler(new Request(new URL(String(url), "http://app"), init))
  }) as typeof fetch
  return { fetch: fetchImpl, calls }
}

const pattern = (size: number) => new Uint8Array(size).map((_, i) => (i * 7) % 251)

layer(TestObjectStorage, { excludeTestServices: true })("browser client on radosgw", (it) => {
  it.effect("a presigned URL that expired before the PUT: storage's 403, the route re-signs, the PUT lands", () =>
    Effect.gen(function*() {
      const bucket = yield* freshBucket("expiry")
      const route = routeFetch({ bucket, onBeforeUpload: () => true, expiresIn: 1 })
      // the first PUT leaves 1.5 s after begin: its URL (1 s) has expired by then
      const xhr = fetchXhr((_url, n) => new Promise((resolve) => setTimeout(() => resolve(undefined), n === 1 ? 1500 : 0)))
      const bytes = new TextEncoder().encode("expired once\n")
      const file = new File([bytes], "late.txt", { type: "text/plain" })
      const result = yield* Effect.promise(() =>
        upload(file, { route: "/api/upload", fetch: route.fetch, XMLHttpRequest: xhr.Xhr, freshFor: 1000, resume: false, retryDelay: { base: 1 } })
      )
      assert.deepStrictEqual(route.calls, ["begin", "resume", "complete"])
      assert.strictEqual(xhr.sent.length, 2)
      assert.strictEqual(result.size, bytes.length)
      assert.strictEqual(new TextDecoder().decode(yield* bucket.getBytes("late.txt")), "expired once\n")
    }))

  it.effect("an upload that outlasts its completion token (the route's expiresIn): the bytes land, the token is renewed (resume), then complete", () =>
    Effect.gen(function*() {
      const bucket = yield* freshBucket("outlast")
      yield* bucket.configureCors()
      const completed: Array<string> = []
      const route = routeFetch({
        bucket,
        onBeforeUpload: () => true,
        onUploadComplete: ({ path }) => void completed.push(path),
        expiresIn: 1,
        multipartThreshold: "6MB",
        partSize: "5MB"
      })
      // every PUT starts at once (its URL valid) and is answered 1.5 s later: the token (1 s) has expired
      const slow = () => fetchXhr(undefined, () => new Promise((resolve) => setTimeout(resolve, 1500)))
      const options = { route: "/api/upload", fetch: route.fetch, freshFor: 1000, resume: false, retryDelay: { base: 1 } } as const
      const small = new TextEncoder().encode("a slow single PUT\n")
      const single = slow()
      const one = yield* Effect.promise(() => upload(new File([small], "slow.txt", { type: "text/plain" }), { ...options, XMLHttpRequest: single.Xhr }))
      assert.deepStrictEqual(route.calls, ["begin", "complete", "resume", "complete"])
      assert.strictEqual(single.sent.length, 1) // the bytes went once
      assert.strictEqual(new TextDecoder().decode(yield* bucket.getBytes(one.path)), "a slow single PUT\n")

      // the token expired while the bytes went: complete refused, resume renews it, complete lands. On a
      // busy machine the parts' URLs may outlive their freshness first, and are renewed (resume) before
      // the first complete too: any number of those, nothing else.
      const renewedThenCompleted = (calls: ReadonlyArray<string>) => {
        assert.strictEqual(calls[0], "begin", calls.join(","))
        assert.deepStrictEqual(calls.slice(-3), ["complete", "resume", "complete"], calls.join(","))
        assert.isTrue(calls.slice(1, -3).every((call) => call === "resume"), calls.join(","))
      }
      const bytes = pattern(7 * MiB)
      const parts = slow()
      const two = yield* Effect.promise(() => upload(new File([bytes], "slow.bin"), { ...options, XMLHttpRequest: parts.Xhr }))
      renewedThenCompleted(route.calls.slice(4))
      assert.strictEqual(parts.sent.length, 2)
      assert.isTrue(Buffer.from(yield* bucket.getBytes(two.path)).equals(Buffer.from(bytes)))
      assert.deepStrictEqual(completed, ["slow.txt", "slow.bin"])
    }))

  it.effect("a multipart upload that failed on one part resumes with only that part (ListParts) and lands intact", () =>
    Effect.gen(function*() {
      const bucket = yield* freshBucket("resume")
      yield* bucket.configureCors()
      const route = routeFetch({ bucket, onBeforeUpload: () => true, multipartThreshold: "6MB", partSize: "5MB", secret: "a-secret-of-enough-length" })
      const store = memoryStore()
      const bytes = pattern(12 * MiB + 17)
      const file = new File([bytes], "clip.bin", { type: "application/octet-stream", lastModified: 1 })
      const options = { route: "/api/upload", fetch: route.fetch, resume: store, retries: 1, retryDelay: { base: 1 } } as const
      // part 2 fails every time in the first session
      const failing = fetchXhr(async (url) => url.includes("partNumber=2") ? 500 : undefined)
      const error = yield* Effect.promise(() => upload(file, { ...options, XMLHttpRequest: failing.Xhr }).then(() => undefined, (e: unknown) => e))
      assert.isTrue(BlobError.is(error, "request_failed"))
      assert.match((error as BlobError).message, /part 2 failed after 2 attempts \(last status 500\)/)
      assert.strictEqual(store.map.size, 1)
      assert.strictEqual(failing.sent.length, 2) // parts 1 and 3 landed

      // the same file picked again: storage says 1 and 3 are there, only part 2 goes out
      const healthy = fetchXhr()
      const progress: Array<number> = []
      const result = yield* Effect.promise(() =>
        upload(file, { ...options, XMLHttpRequest: healthy.Xhr, onProgress: (p) => progress.push(p.loaded) })
      )
      assert.deepStrictEqual(healthy.sent.map((url) => new URL(url).searchParams.get("partNumber")), ["2"])
      assert.deepStrictEqual(route.calls.slice(-2), ["resume", "complete"])
      assert.strictEqual(progress[0], 7 * MiB + 17) // parts 1 (5 MiB) and 3 (2 MiB + 17) count from the start
      assert.strictEqual(result.size, bytes.length)
      assert.isTrue(Buffer.from(yield* bucket.getBytes(result.path)).equals(Buffer.from(bytes)))
      assert.strictEqual(store.map.size, 0)
    }))
})
