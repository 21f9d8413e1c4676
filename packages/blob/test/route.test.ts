/**
 * Upload routes: the resolution order (in process, no storage needed), then begin -> PUT -> complete
 * against radosgw, in process and over a real socket.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { TestObjectStorage } from "../../platform/src/testing/objectStorage.ts"
import { Bucket, type BucketApi } from "../src/server/Bucket.ts"
import {
  createUploadHandler,
  createUploadRoute,
  toNodeListener,
  type UploadHandler,
  type UploadRouteOptions
} from "../src/server/route.ts"
import { BlobError } from "../src/shared/BlobError.ts"
import type { BeginUploadResponse } from "../src/shared/protocol.ts"
import { freshBucket, tokenFor } from "./support/storage.ts"

/** `handler` on a node server on a free 127.0.0.1 port, closed with the scope. */
const listening = (handler: Parameters<typeof toNodeListener>[0]) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const s = createServer(toNodeListener(handler))
      await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve))
      return s
    }),
    (s) => Effect.promise(() => new Promise<void>((resolve) => s.close(() => resolve())))
  )

const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 73, 72, 68, 82, 1, 2, 3, 4])

const post = (handler: UploadHandler, body: unknown, path = "/api/upload") =>
  handler(new Request(`http://app${path}`, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } }))

const begin = { type: "begin", pathname: "avatars/me.png", contentType: "image/png", size: PNG.length }

// a bucket that is never reached: the resolution-order tests fail before any storage call
const offline = () =>
  Effect.runSync(Effect.scoped(Bucket.make({ token: "s3+http://k:s@127.0.0.1:1/offline-bucket", retry: { times: 0 } })))

const routeWith = (overrides: Partial<UploadRouteOptions>) =>
  createUploadRoute({ bucket: offline(), onBeforeUpload: () => true, ...overrides })

describe("upload route: resolution order", () => {
  it("onError first: a Response it returns is the answer", async () => {
    const handler = routeWith({
      onBeforeUpload: () => {
        throw new BlobError("conflict")
      },
      onError: () => new Response("custom", { status: 418 })
    })
    const response = await post(handler, begin)
    assert.strictEqual(response.status, 418)
    assert.strictEqual(await response.text(), "custom")
  })

  it("onError first: a BlobError it returns is answered as JSON at its status, with its optional fields", async () => {
    const seen: Array<unknown> = []
    const handler = routeWith({
      onBeforeUpload: () => {
        throw new Error("boom")
      },
      onError: (error) => {
        seen.push(error)
        return new BlobError("rate_limited", { retryAfter: 7, hint: "Slow down" })
      }
    })
    const response = await post(handler, begin)
    assert.strictEqual(response.status, 429)
    assert.strictEqual(response.headers.get("retry-after"), "7")
    assert.strictEqual(response.headers.get("content-type"), "application/json")
    const body = await response.json()
    assert.deepStrictEqual(body, { code: "rate_limited", status: 429, message: "Rate limited (slow down)", hint: "Slow down", retryAfter: 7 })
    assert.strictEqual((seen[0] as Error).message, "boom")
    const rebuilt = BlobError.fromJSON(body)
    assert.isTrue(BlobError.is(rebuilt, "rate_limited"))
  })

  it("carries failed, etag and size in the body when set", async () => {
    const handler = routeWith({
      onBeforeUpload: () => {
        throw new BlobError("already_exists", { etag: "\"abc\"", size: 12 })
      }
    })
    const response = await post(handler, begin)
    assert.strictEqual(response.status, 409)
    assert.deepStrictEqual(await response.json(), { code: "already_exists", status: 409, message: "Already exists", etag: "\"abc\"", size: 12 })
    const partial = routeWith({
      onBeforeUpload: () => {
        throw new BlobError("partial_delete", { failed: ["a", "b"] })
      }
    })
    assert.deepStrictEqual((await (await post(partial, begin)).json()).failed, ["a", "b"])
  })

  it("onError returning nothing: a thrown BlobError is answered as itself", async () => {
    const handler = routeWith({
      onBeforeUpload: () => {
        throw new BlobError("forbidden", { message: "Not your folder" })
      },
      onError: () => undefined
    })
    const response = await post(handler, begin)
    assert.strictEqual(response.status, 403)
    assert.strictEqual((await response.json()).message, "Not your folder")
  })

  it("an application error with a status is mapped by the table; other statuses keep theirs as request_failed", async () => {
    const table: ReadonlyArray<readonly [number, string]> = [
      [401, "unauthorized"],
      [403, "forbidden"],
      [404, "not_found"],
      [409, "conflict"],
      [411, "length_required"],
      [413, "too_large"],
      [429, "rate_limited"],
      [400, "request_failed"],
      [418, "request_failed"],
      [500, "request_failed"],
      [503, "request_failed"]
    ]
    for (const [status, code] of table) {
      const handler = routeWith({
        onBeforeUpload: () => {
          throw Object.assign(new Error("quota exceeded"), { status })
        }
      })
      const response = await post(handler, begin)
      const body = await response.json()
      assert.strictEqual(body.code, code, `status ${status}`)
      assert.strictEqual(response.status, code === "request_failed" ? status : body.status)
      assert.match(body.message, /^Quota exceeded/) // sentence-cased; length_required adds its built-in hint
    }
    const statusCode = routeWith({
      onBeforeUpload: () => {
        throw { statusCode: 404 }
      }
    })
    assert.strictEqual((await (await post(statusCode, begin)).json()).code, "not_found")
  })

  it("anything else is rethrown unchanged", async () => {
    const bug = new TypeError("cannot read properties of undefined")
    const handler = routeWith({
      onBeforeUpload: () => {
        throw bug
      }
    })
    const thrown = await post(handler, begin).then(() => undefined, (e: unknown) => e)
    assert.strictEqual(thrown, bug)
    const outOfRange = routeWith({
      onBeforeUpload: () => {
        throw Object.assign(new Error("redirect"), { status: 302 })
      }
    })
    assert.strictEqual(((await post(outOfRange, begin).catch((e: unknown) => e)) as Error).message, "redirect")
  })

  it("over node:http an application bug is a 500 for the client and written to the server's log (it was written nowhere)", async () => {
    const bug = new Error("db down at /srv/app/users.ts")
    const logged: Array<ReadonlyArray<unknown>> = []
    const original = console.error
    console.error = (...args: Array<unknown>) => void logged.push(args)
    const server = createServer(toNodeListener(routeWith({
      onBeforeUpload: () => {
        throw bug
      }
    })))
    try {
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/api/upload`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(begin)
      })
      assert.strictEqual(response.status, 500)
      assert.deepStrictEqual(await response.json(), { code: "internal_error", status: 500, message: "Internal error" })
      assert.deepStrictEqual(logged, [["upload route: the handler failed (an application error, answered 500)", bug]])
    } finally {
      console.error = original
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })

  it("refusals of the request itself", async () => {
    const handler = routeWith({ contentTypes: ["image/*"], maxSize: 10 })
    const refused = routeWith({ onBeforeUpload: () => false })
    const cases: ReadonlyArray<readonly [UploadHandler, unknown, number, string]> = [
      [refused, begin, 401, "unauthorized"],
      [handler, { ...begin, contentType: "text/html", size: 5 }, 400, "content_type_not_allowed"],
      [handler, begin, 413, "too_large"],
      [handler, { ...begin, size: 0 }, 400, "empty_body"],
      [handler, { ...begin, pathname: "a//b.png", size: 5 }, 400, "invalid_input"],
      [handler, { type: "begin", pathname: 42 }, 400, "invalid_input"],
      [handler, { type: "complete", completionToken: "v1.bad.token" }, 403, "forbidden"]
    ]
    for (const [h, body, status, code] of cases) {
      const response = await post(h, body)
      assert.strictEqual(response.status, status, code)
      assert.strictEqual((await response.json()).code, code)
    }
    // a file's type is a media type: a pattern matched the route's pattern, escaped sniffing and was stored
    for (const contentType of ["image/*", "image", "*/*", "image/png/x"]) {
      const response = await post(handler, { ...begin, contentType, size: 5 })
      const answer = await response.json()
      assert.strictEqual(response.status, 400, contentType)
      assert.strictEqual(answer.code, "invalid_input", contentType)
      assert.include(answer.message, `Invalid content type ${JSON.stringify(contentType)}`)
    }
    const long = await (await post(handler, { ...begin, contentType: `text/${"x".repeat(5000)}`, size: 5 })).json()
    assert.strictEqual(long.code, "invalid_input") // over MAX_DECLARED_TYPE, before the route's patterns are asked
    assert.include(long.message, "5005 characters, over the limit of 1024")
    assert.isBelow(long.message.length, 200, "the type is shown cut")
    const gib = routeWith({ maxSize: "1GiB" })
    const oneByteOver = await (await post(gib, { ...begin, size: 2 ** 30 + 1 })).json()
    assert.strictEqual(oneByteOver.code, "too_large")
    assert.include(oneByteOver.message, "1073741825 bytes, over the limit of 1073741824 bytes (1 GiB)")
    const notJson = await handler(new Request("http://app/u", { method: "POST", body: "{nope", headers: { "content-type": "application/json" } }))
    assert.strictEqual((await notJson.json()).code, "invalid_input")
    // the suite's rules for JSON bodies: what would be read as other than what was sent is refused, named
    const raw = (body: string | Buffer) =>
      handler(new Request("http://app/u", { method: "POST", body: typeof body === "string" ? body : new Blob([new Uint8Array(body)]), headers: { "content-type": "application/json" } }))
    const strict: ReadonlyArray<readonly [string | Buffer, RegExp]> = [
      [Buffer.concat([Buffer.from('{"type":"begin","pathname":"caf'), Buffer.from([0xe9]), Buffer.from('.png","contentType":"image/png","size":5}')]), /not valid UTF-8/],
      ['{"type":"begin","pathname":"a\\ud800.png","contentType":"image/png","size":5}', /pathname holds an unpaired surrogate/],
      ['{"type":"begin","pathname":"a.png","contentType":"image/png","size":5,"size":6}', /size is given twice/],
      ['{"type":"begin","pathname":"a.png","contentType":"image/png","size":5,"zz":1}', /^Malformed upload request: Expected no excess property at \["zz"\]/]
    ]
    for (const [body, problem] of strict) {
      const response = await raw(body)
      const answer = await response.json()
      assert.strictEqual(response.status, 400, String(body))
      assert.strictEqual(answer.code, "invalid_input")
      assert.match(answer.message, problem)
    }
    const notJsonType = await handler(new Request("http://app/u", { method: "POST", body: JSON.stringify(begin) }))
    assert.strictEqual(notJsonType.status, 415)
    assert.strictEqual((await notJsonType.json()).code, "request_failed")
    const multi = createUploadHandler({
      routes: { avatar: { bucket: offline(), onBeforeUpload: () => true }, docs: { bucket: offline(), onBeforeUpload: () => true } }
    })
    const unknown = await post(multi, begin, "/api/upload/videos")
    assert.strictEqual(unknown.status, 404)
    assert.strictEqual((await unknown.json()).code, "not_found")
  })

  it("bad route options throw where they are written", () => {
    assert.throws(() => createUploadRoute({ bucket: offline() } as never), TypeError, /onBeforeUpload/)
    assert.throws(() => routeWith({ maxSize: "a lot" }), TypeError, /maxSize/)
    assert.throws(() => routeWith({ completionWait: -1 }), TypeError, /completionWait/)
    const patternError = (() => {
      try {
        routeWith({ contentTypes: ["images"] })
      } catch (e) {
        return e
      }
    })()
    assert.isTrue(BlobError.is(patternError, "invalid_content_type_pattern"))
    assert.throws(() => createUploadHandler({ routes: {}, secret: "short" }), TypeError)
  })
})

/** The browser side of the protocol, in miniature: begin, PUT the bytes, complete. */
const upload = async (
  call: (body: unknown) => Promise<Response>,
  bytes: Uint8Array,
  options: { pathname?: string; contentType?: string; putContentType?: string; route?: string } = {}
) => {
  const beginResponse = await call({
    type: "begin",
    pathname: options.pathname ?? "avatars/me.png",
    contentType: options.contentType ?? "image/png",
    size: bytes.length,
    ...(options.route === undefined ? {} : { route: options.route })
  })
  if (beginResponse.status !== 200) return { stage: "begin", response: beginResponse }
  const started = await beginResponse.json() as BeginUploadResponse
  const parts: Array<{ partNumber: number; etag: string }> = []
  if (started.multipart !== undefined) {
    for (const part of started.multipart.parts) {
      const from = (part.partNumber - 1) * started.multipart.partSize
      const put = await fetch(part.url, { method: "PUT", body: bytes.subarray(from, from + part.size) as BodyInit, headers: started.headers })
      assert.strictEqual(put.status, 200)
      parts.push({ partNumber: part.partNumber, etag: put.headers.get("etag") ?? "" })
    }
  } else {
    const headers = { ...started.headers, ...(options.putContentType === undefined ? {} : { "content-type": options.putContentType }) }
    const put = await fetch(started.url!, { method: "PUT", body: bytes as BodyInit, headers })
    if (put.status !== 200) return { stage: "put", response: put, started }
  }
  const completeResponse = await call({
    type: "complete",
    completionToken: started.completionToken,
    ...(parts.length === 0 ? {} : { parts }),
    ...(options.route === undefined ? {} : { route: options.route })
  })
  return { stage: "complete", response: completeResponse, started }
}

layer(TestObjectStorage, { excludeTestServices: true })("upload route (radosgw)", (it) => {
  it.effect("begin -> PUT -> complete, with onUploadComplete and the token payload", () =>
    Effect.gen(function*() {
      const bucket: BucketApi = yield* freshBucket("route")
      const completed: Array<unknown> = []
      const handler = createUploadRoute({
        bucket,
        contentTypes: ["image/png", "image/jpeg"],
        maxSize: "1MB",
        onBeforeUpload: ({ pathname }) => ({ path: `users/42/${pathname}`, tokenPayload: "user-42" }),
        onUploadComplete: (args) => {
          completed.push({ path: args.path, size: args.size, tokenPayload: args.tokenPayload, contentType: args.contentType })
        }
      })
      const result = yield* Effect.promise(() => upload((b) => post(handler, b), PNG))
      assert.strictEqual(result.stage, "complete")
      assert.strictEqual(result.response.status, 200)
      const body = yield* Effect.promise(() => result.response.json())
      assert.strictEqual(body.path, "users/42/avatars/me.png")
      assert.strictEqual(body.size, PNG.length)
      assert.deepStrictEqual(completed, [{ path: "users/42/avatars/me.png", size: PNG.length, tokenPayload: "user-42", contentType: "image/png" }])
      assert.strictEqual((yield* bucket.getBytes("users/42/avatars/me.png")).length, PNG.length)
      // the signed PUT refuses another content type: the browser client turns that 403 into signature_mismatch
      const wrong = yield* Effect.promise(() => upload((b) => post(handler, b), PNG, { pathname: "x.png", putContentType: "image/jpeg" }))
      assert.strictEqual(wrong.stage, "put")
      assert.strictEqual(wrong.response.status, 403)
    }))

  it.effect("complete refuses another route's, a tampered or an expired token, and a missing object", () =>
    Effect.gen(function*() {
      const bucket = yield* freshBucket("tokens")
      const handler = createUploadHandler({
        secret: "a-secret-of-enough-length",
        routes: {
          avatar: { bucket, onBeforeUpload: () => true },
          docs: { bucket, onBeforeUpload: () => true },
          // its own route for the expired token: the checks on avatar's must not race a 1 s expiry
          brief: { bucket, onBeforeUpload: () => true, expiresIn: 1 }
        }
      })
      const started = yield* Effect.promise(async () =>
        (await post(handler, { ...begin, route: "avatar" })).json() as Promise<BeginUploadResponse>
      )
      const short = yield* Effect.promise(async () =>
        (await post(handler, { ...begin, route: "brief" })).json() as Promise<BeginUploadResponse>
      )
      const complete = (token: string, route: string) =>
        Effect.promise(async () => {
          const r = await post(handler, { type: "complete", completionToken: token, route })
          return { status: r.status, body: await r.json() }
        })
      const other = yield* complete(started.completionToken, "docs")
      assert.strictEqual(other.status, 403)
      assert.strictEqual(other.body.code, "forbidden")
      assert.match(other.body.message, /another upload route/)
      const [v, payload, signature] = started.completionToken.split(".")
      const forged = JSON.parse(Buffer.from(payload!, "base64url").toString())
      forged.s = 999
      const tampered = yield* complete(`${v}.${Buffer.from(JSON.stringify(forged)).toString("base64url")}.${signature}`, "avatar")
      assert.strictEqual(tampered.body.code, "forbidden")
      const missing = yield* complete(started.completionToken, "avatar")
      assert.strictEqual(missing.status, 404)
      assert.strictEqual(missing.body.code, "not_found")
      assert.match(missing.body.message, /never arrived/)
      yield* Effect.sleep("1100 millis")
      const expired = yield* complete(short.completionToken, "brief")
      assert.strictEqual(expired.body.code, "forbidden")
      assert.match(expired.body.message, /expired/)
      // a token of another handler (another secret)
      const stranger = createUploadHandler({ secret: "another-secret-of-enough-length", routes: { avatar: { bucket, onBeforeUpload: () => true } } })
      const foreign = yield* Effect.promise(async () => (await post(stranger, { ...begin, pathname: "f.png", route: "avatar" })).json() as Promise<BeginUploadResponse>)
      assert.strictEqual((yield* complete(foreign.completionToken, "avatar")).body.code, "forbidden")
    }))

  it.effect("a stored object that differs from the declaration is signature_mismatch and deleted", () =>
    Effect.gen(function*() {
      const bucket = yield* freshBucket("mismatch")
      const handler = createUploadRoute({ bucket, onBeforeUpload: () => ({ allowOverwrite: true }) })
      const started = yield* Effect.promise(async () => (await post(handler, begin)).json() as Promise<BeginUploadResponse>)
      // something else lands at the path (same type, other size)
      yield* bucket.put("avatars/me.png", new Uint8Array([...PNG, ...PNG]), { allowOverwrite: true })
      const response = yield* Effect.promise(() => post(handler, { type: "complete", completionToken: started.completionToken }))
      assert.strictEqual(response.status, 403)
      const body = yield* Effect.promise(() => response.json())
      assert.strictEqual(body.code, "signature_mismatch")
      assert.match(body.hint, /did not match what was authorized/)
      assert.isFalse(yield* bucket.exists("avatars/me.png"))
    }))

  it.effect("a throw from onUploadComplete deletes the object first, then answers the error", () =>
    Effect.gen(function*() {
      const bucket = yield* freshBucket("oncomplete")
      let existedDuringError: boolean | undefined
      const handler = createUploadRoute({
        bucket,
        onBeforeUpload: () => true,
        onUploadComplete: () => {
          throw Object.assign(new Error("the album is full"), { status: 409 })
        },
        onError: async (error) => {
          existedDuringError = await Effect.runPromise(bucket.exists("avatars/me.png"))
          assert.match((error as Error).message, /album is full/)
          return undefined
        }
      })
      const result = yield* Effect.promise(() => upload((b) => post(handler, b), PNG))
      assert.strictEqual(result.response.status, 409)
      const body = yield* Effect.promise(() => result.response.json())
      assert.strictEqual(body.code, "conflict")
      assert.strictEqual(body.message, "The album is full")
      assert.isFalse(existedDuringError)
      assert.isFalse(yield* bucket.exists("avatars/me.png"))
    }))

  it.effect("bytes that contradict the declared type are refused at completion", () =>
    Effect.gen(function*() {
      const bucket = yield* freshBucket("sniff")
      const handler = createUploadRoute({ bucket, onBeforeUpload: () => true })
      const notPng = new TextEncoder().encode("%PDF-1.7 this is really a pdf")
      const result = yield* Effect.promise(() => upload((b) => post(handler, b), notPng))
      assert.strictEqual(result.response.status, 400)
      assert.strictEqual((yield* Effect.promise(() => result.response.json())).code, "content_type_not_allowed")
      assert.isFalse(yield* bucket.exists("avatars/me.png"))
    }))

  it.effect("completion is single-use: 20 concurrent completes, in process and over real sockets to two instances, run the hook once", () =>
    Effect.gen(function*() {
      // two instances (each its own Bucket client, as two processes would have) share the bucket and the secret
      const name = "single-use"
      const first = yield* freshBucket(name)
      const second = yield* Bucket.make({ token: yield* tokenFor(first.name) })
      let runs = 0
      const instance = (bucket: BucketApi) =>
        createUploadRoute({
          bucket,
          secret: "a-secret-shared-by-both-instances",
          contentTypes: ["image/png"],
          onBeforeUpload: ({ pathname }) => ({ path: `u/${pathname}` }),
          onUploadComplete: () =>
            new Promise<void>((resolve) => {
              runs++
              setTimeout(resolve, 50)
            })
        })
      const handlers = [instance(first), instance(second)]
      const servers = yield* Effect.forEach(handlers, listening)
      const overSocket = (i: number, body: unknown) =>
        Effect.promise(async () => {
          const port = (servers[i % 2]!.address() as AddressInfo).port
          const r = await fetch(`http://127.0.0.1:${port}/api/upload`, {
            method: "POST",
            body: JSON.stringify(body),
            headers: { "content-type": "application/json" }
          })
          return { status: r.status, body: await r.json() }
        })
      const inProcess = (i: number, body: unknown) =>
        Effect.promise(async () => {
          const r = await post(handlers[i % 2]!, body)
          return { status: r.status, body: await r.json() }
        })
      for (const [how, call] of [["in process", inProcess], ["over sockets", overSocket]] as const) {
        runs = 0
        const result = yield* Effect.promise(() => upload((b) => post(handlers[0]!, b), PNG, { pathname: `${how.replace(" ", "-")}.png` }))
        assert.strictEqual(result.response.status, 200, how) // completed once by the upload itself
        assert.strictEqual(runs, 1, how)
        const token = result.started!.completionToken
        const firstAnswer = yield* Effect.promise(() => result.response.json())
        const answers = yield* Effect.all(
          Array.from({ length: 20 }, (_, i) => call(i, { type: "complete", completionToken: token })),
          { concurrency: "unbounded" }
        )
        assert.deepStrictEqual(answers.map((a) => a.status), Array.from({ length: 20 }, () => 200), how)
        for (const answer of answers) assert.deepStrictEqual(answer.body, firstAnswer, how)
        assert.strictEqual(runs, 1, how)
        // and later
        const later = yield* call(1, { type: "complete", completionToken: token })
        assert.deepStrictEqual([later.status, later.body], [200, firstAnswer], how)
        assert.strictEqual(runs, 1, how)
      }
      // concurrent from the start (no first completion before them): one runs the hook, all answer alike
      runs = 0
      const started = yield* Effect.promise(async () =>
        (await post(handlers[0]!, { ...begin, pathname: "race.png" })).json() as Promise<BeginUploadResponse>
      )
      const put = yield* Effect.promise(() => fetch(started.url!, { method: "PUT", body: PNG as BodyInit, headers: started.headers }))
      assert.strictEqual(put.status, 200)
      const raced = yield* Effect.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? overSocket : inProcess)(i, { type: "complete", completionToken: started.completionToken })),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(raced.map((a) => a.status), Array.from({ length: 20 }, () => 200))
      for (const answer of raced) assert.deepStrictEqual(answer.body, raced[0]!.body)
      assert.strictEqual(raced[0]!.body.path, "u/race.png")
      assert.strictEqual(runs, 1)
    }))

  it.effect("a multipart upload over a real socket: parts, completion, the stored bytes", () =>
    Effect.gen(function*() {
      const bucket = yield* freshBucket("routemulti")
      yield* bucket.configureCors()
      const handler = createUploadHandler({
        routes: {
          video: {
            bucket,
            contentTypes: ["video/*"],
            multipartThreshold: "6MB",
            partSize: "5MB",
            onBeforeUpload: () => true
          }
        }
      })
      const server = yield* listening(handler)
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      const size = 11 * 1024 * 1024 + 5
      const bytes = new Uint8Array(size)
      bytes.set([0, 0, 0, 0x18, 0x66, 0x74, 0x79, 0x70, 0x6d, 0x70, 0x34, 0x32]) // ....ftypmp42
      for (let i = 12; i < size; i++) bytes[i] = i % 251
      const call = (body: unknown) =>
        fetch(`${base}/api/upload/video`, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } })
      const result = yield* Effect.promise(() => upload(call, bytes, { pathname: "clips/a.mp4", contentType: "video/mp4" }))
      assert.strictEqual(result.started?.multipart?.parts.length, 3)
      assert.strictEqual(result.response.status, 200)
      const body = yield* Effect.promise(() => result.response.json())
      assert.strictEqual(body.size, size)
      const stored = yield* bucket.getBytes("clips/a.mp4")
      assert.isTrue(Buffer.from(stored).equals(Buffer.from(bytes)))
      // refusals over the socket keep their status and JSON
      const refused = yield* Effect.promise(() => call({ type: "begin", pathname: "x.png", contentType: "image/png", size: 10 }))
      assert.strictEqual(refused.status, 400)
      assert.strictEqual((yield* Effect.promise(() => refused.json())).code, "content_type_not_allowed")
    }))

  it.effect("resume: re-signs a single PUT; lists landed parts of a multipart upload and signs the others", () =>
    Effect.gen(function*() {
      const bucket = yield* freshBucket("resume")
      const handler = createUploadHandler({
        secret: "a-secret-of-enough-length",
        routes: {
          video: { bucket, multipartThreshold: "6MB", partSize: "5MB", onBeforeUpload: () => true },
          other: { bucket, onBeforeUpload: () => true }
        }
      })
      const json = (body: unknown) => Effect.promise(async () => {
        const r = await post(handler, body)
        return { status: r.status, body: await r.json() as any }
      })
      // single PUT: a fresh URL and a new token; the PUT and the completion work with them
      const single = yield* json({ ...begin, route: "video" })
      const renewed = yield* json({ type: "resume", route: "video", completionToken: single.body.completionToken })
      assert.strictEqual(renewed.status, 200)
      assert.strictEqual(renewed.body.type, "resume")
      assert.strictEqual(renewed.body.path, "avatars/me.png")
      assert.notStrictEqual(renewed.body.completionToken, single.body.completionToken)
      const put = yield* Effect.promise(() => fetch(renewed.body.url, { method: "PUT", body: PNG as BodyInit, headers: renewed.body.headers }))
      assert.strictEqual(put.status, 200)
      assert.strictEqual((yield* json({ type: "complete", route: "video", completionToken: renewed.body.completionToken })).status, 200)
      // bound to the route
      const elsewhere = yield* json({ type: "resume", route: "other", completionToken: single.body.completionToken })
      assert.strictEqual(elsewhere.body.code, "forbidden")

      // multipart: 3 parts, part 2 lands, then resume lists it and signs 1 and 3
      const size = 11 * 1024 * 1024
      const bytes = new Uint8Array(size).map((_, i) => i % 253)
      const started = yield* json({ type: "begin", route: "video", pathname: "clips/b.bin", contentType: "application/octet-stream", size })
      const plan = started.body.multipart
      assert.strictEqual(plan.parts.length, 3)
      const sendPart = (part: { partNumber: number; url: string; size: number }) =>
        Effect.promise(async () => {
          const from = (part.partNumber - 1) * plan.partSize
          const r = await fetch(part.url, { method: "PUT", body: bytes.subarray(from, from + part.size) as BodyInit })
          assert.strictEqual(r.status, 200)
          return { partNumber: part.partNumber, etag: r.headers.get("etag")! }
        })
      const second = yield* sendPart(plan.parts[1])
      const resumed = yield* json({ type: "resume", route: "video", completionToken: started.body.completionToken })
      assert.strictEqual(resumed.status, 200)
      assert.deepStrictEqual(resumed.body.multipart.landed, [{ partNumber: 2, etag: second.etag, size: plan.partSize }])
      assert.deepStrictEqual(resumed.body.multipart.parts.map((p: any) => p.partNumber), [1, 3])
      assert.strictEqual(resumed.body.multipart.uploadId, plan.uploadId)
      // naming parts re-signs exactly those (expired URLs mid-upload), without listing
      const named = yield* json({ type: "resume", route: "video", completionToken: resumed.body.completionToken, parts: [3] })
      assert.deepStrictEqual(named.body.multipart.parts.map((p: any) => p.partNumber), [3])
      assert.isUndefined(named.body.multipart.landed)
      const outside = yield* json({ type: "resume", route: "video", completionToken: resumed.body.completionToken, parts: [4] })
      assert.strictEqual(outside.body.code, "invalid_input")
      const first = yield* sendPart(resumed.body.multipart.parts[0])
      const third = yield* sendPart(named.body.multipart.parts[0])
      const done = yield* json({ type: "complete", route: "video", completionToken: named.body.completionToken, parts: [first, second, third] })
      assert.strictEqual(done.status, 200)
      assert.isTrue(Buffer.from(yield* bucket.getBytes("clips/b.bin")).equals(Buffer.from(bytes)))
      // the upload is gone once completed: resuming it is not_found
      const gone = yield* json({ type: "resume", route: "video", completionToken: named.body.completionToken })
      assert.strictEqual(gone.body.code, "not_found")
    }))

  it.effect("resume takes a token expired less than resumeWindow ago; complete never takes an expired one", () =>
    Effect.gen(function*() {
      const bucket = yield* freshBucket("resumewin")
      const handler = createUploadRoute({ bucket, onBeforeUpload: () => true, expiresIn: 1, resumeWindow: 60 })
      const strict = createUploadRoute({ bucket, onBeforeUpload: () => true, expiresIn: 1, resumeWindow: 0, secret: "a-secret-of-enough-length" })
      const started = yield* Effect.promise(async () => (await post(handler, begin)).json() as Promise<BeginUploadResponse>)
      const strictStarted = yield* Effect.promise(async () => (await post(strict, begin)).json() as Promise<BeginUploadResponse>)
      yield* Effect.sleep("1100 millis")
      const expired = yield* Effect.promise(async () => (await post(handler, { type: "complete", completionToken: started.completionToken })).json())
      assert.strictEqual(expired.code, "forbidden")
      const resumed = yield* Effect.promise(async () => {
        const r = await post(handler, { type: "resume", completionToken: started.completionToken })
        return { status: r.status, body: await r.json() as any }
      })
      assert.strictEqual(resumed.status, 200)
      assert.isAbove(resumed.body.expiresAt, Date.now())
      const refused = yield* Effect.promise(async () => (await post(strict, { type: "resume", completionToken: strictStarted.completionToken })).json())
      assert.strictEqual(refused.code, "forbidden")
      assert.match(refused.message, /expired/)
    }))

  it.effect("a declared type whose parameters no header can carry is 400 naming it, before storage is asked, over a socket", () =>
    Effect.gen(function*() {
      // Multipart begin sends the type to storage itself: a NUL or CR LF was 502 "Storage could not be
      // reached" (undici refused the header), an é 401 "Storage rejected the bucket token" (signed as
      // UTF-8, sent as Latin-1); a single PUT signed it for a browser that cannot send it (outside sweep).
      const bucket = yield* freshBucket("routetypes")
      const handler = createUploadRoute({ bucket, multipartThreshold: "6MB", partSize: "5MB", onBeforeUpload: () => true })
      const server = yield* listening(handler)
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/upload`
      const call = (contentType: string, size: number) =>
        Effect.promise(async () => {
          const response = await fetch(url, {
            method: "POST",
            body: JSON.stringify({ type: "begin", pathname: "docs/a.txt", contentType, size }),
            headers: { "content-type": "application/json" }
          })
          return { status: response.status, body: await response.json() as any }
        })
      const multipart = 7 * 1024 * 1024
      for (const contentType of ["text/plain; x=a\u0000b", "text/plain; x=\r\ny", "text/plain; x=\u00e9", "text/plain; x=\u0100", "text/plain; x=\ud83d\ude00"]) {
        for (const size of [5, multipart]) {
          const answer = yield* call(contentType, size)
          assert.strictEqual(answer.status, 400, `${JSON.stringify(contentType)} ${size}: ${JSON.stringify(answer.body)}`)
          assert.strictEqual(answer.body.code, "invalid_input")
          assert.include(answer.body.message, `Invalid content type ${JSON.stringify(contentType)}`)
          assert.include(answer.body.message, "cannot carry")
        }
      }
      for (const size of [5, multipart]) {
        const long = yield* call(`text/plain; x=${"a".repeat(20_000)}`, size)
        assert.strictEqual(long.status, 400, JSON.stringify(long.body))
        assert.strictEqual(long.body.code, "invalid_input")
        assert.match(long.body.message, /20014 characters, over the limit of 1024/)
        assert.isBelow(long.body.message.length, 300, "the type is shown cut")
        // parameters in ASCII are still taken, and stored as declared
        const fine = yield* call("text/plain; charset=utf-8", size)
        assert.strictEqual(fine.status, 200, JSON.stringify(fine.body))
        assert.strictEqual(fine.body.headers?.["content-type"] ?? "text/plain; charset=utf-8", "text/plain; charset=utf-8")
      }
    }))
})
