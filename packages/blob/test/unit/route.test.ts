/**
 * Upload routes in the fast tier: the handler (a plain `Request -> Response` function, called in
 * process) over `Bucket.layerMemory`, the browser's PUTs served by `memoryFetch`: no socket, no radosgw.
 * begin -> PUT -> complete (single and multipart), resume, and the main error answers.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { Bucket, type BucketApi } from "../../src/server/Bucket.ts"
import { createUploadHandler, createUploadRoute, type UploadHandler, type UploadRouteOptions } from "../../src/server/route.ts"
import { BlobError } from "../../src/shared/BlobError.ts"
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

const beginRequest = (body: unknown) =>
  new Request("http://app/api/upload", { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } })

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
        const routes = createUploadHandler({ routes: { avatar: { bucket, onBeforeUpload: () => true } } })
        const unknown = yield* post(routes, { ...beginPng, route: "banner" }, "/api/upload/banner")
        assert.deepStrictEqual([unknown.status, unknown.json.code], [404, "not_found"])
      })))

  it.live("image/* does not admit active SVG (or any +xml type): 400 content_type_not_allowed saying SVG must be listed; listed, it is allowed", () =>
    withRoute({ contentTypes: ["image/*"] }, (handler, bucket) =>
      Effect.gen(function*() {
        const svg = new TextEncoder().encode("<svg><script>alert(1)</script></svg>")
        const beginSvg = { type: "begin", pathname: "x.svg", contentType: "image/svg+xml", size: svg.length }
        for (const contentType of ["image/svg+xml", "Image/SVG+XML; charset=utf-8", "image/foo+xml"]) {
          const refused = yield* post(handler, { ...beginSvg, contentType })
          assert.deepStrictEqual([refused.status, refused.json.code], [400, "content_type_not_allowed"], contentType)
          assert.include(refused.json["message"] as string, "image/* does not admit", contentType)
          assert.include(refused.json["message"] as string, "must be listed explicitly", contentType)
        }
        const svgMessage = (yield* post(handler, beginSvg)).json["message"] as string
        assert.include(svgMessage, "SVG must be listed explicitly (image/svg+xml)")
        // other images still pass the wildcard
        assert.strictEqual((yield* post(handler, beginPng)).status, 200)
        // a put with the same patterns follows the same rule
        const put = yield* Effect.flip(bucket.put("p.svg", svg, { contentType: "image/svg+xml", contentTypes: ["image/*"] }))
        assert.strictEqual(put.code, "content_type_not_allowed")
        // named exactly, SVG is allowed, end to end
        const listed = createUploadRoute({ bucket, contentTypes: ["image/*", "image/svg+xml"], onBeforeUpload: () => true })
        const begun = yield* post(listed, beginSvg)
        assert.strictEqual(begun.status, 200, JSON.stringify(begun.json))
        const begin = begun.json as unknown as BeginUploadResponse
        assert.strictEqual((yield* send(begin.url!, svg, begin.headers)).status, 200)
        const done = yield* post(listed, { type: "complete", completionToken: begin.completionToken })
        assert.deepInclude(done.json, { type: "complete", contentType: "image/svg+xml" })
      })))

  it.live("a path starting with \"/\" is refused for that, not as an empty segment, and nothing in the message is scrubbed", () =>
    withRoute({ onBeforeUpload: () => true }, (handler, bucket) =>
      Effect.gen(function*() {
        const leading = 'Invalid path: a path must not start with "/" (object paths are relative to the bucket: a/b.png)'
        const cases: ReadonlyArray<readonly [string, string]> = [
          ["/etc/passwd", leading],
          ["/a.png", leading],
          ["a/", 'Invalid path: a path must not end with "/" (it names an object, not a folder)'],
          ["a//b.png", 'Invalid path: the path "a//b.png" has an empty segment ("//")']
        ]
        for (const [pathname, message] of cases) {
          const refused = yield* post(handler, { ...beginPng, pathname })
          assert.deepStrictEqual([refused.status, refused.json.code, refused.json["message"]], [400, "invalid_input", message], pathname)
          const put = yield* Effect.flip(bucket.put(pathname, PNG, { contentType: "image/png" }))
          assert.deepStrictEqual([put.code, put.message], ["invalid_input", message], pathname)
        }
        // the path onBeforeUpload gives is held to the same rule
        const moved = createUploadRoute({ bucket, onBeforeUpload: () => ({ path: "/etc/passwd" }) })
        const answer = yield* post(moved, beginPng)
        assert.deepStrictEqual([answer.status, answer.json["message"]], [400, leading])
      })))

  it.live("onBeforeUpload allows only with true or an object: null, undefined or a number refuses (401), never the client's own path", () =>
    withRoute({}, (_, bucket) =>
      Effect.gen(function*() {
        for (const decided of [null, undefined, 5, "yes", []]) {
          const route = createUploadRoute({ bucket, onBeforeUpload: () => decided as unknown as boolean })
          const refused = yield* post(route, beginPng)
          assert.deepStrictEqual([refused.status, refused.json.code, refused.json["message"]], [401, "unauthorized", "The upload was refused"], String(decided))
        }
        const allowed = yield* post(createUploadRoute({ bucket, onBeforeUpload: () => true }), beginPng)
        assert.deepStrictEqual([allowed.status, allowed.json["path"]], [200, "me.png"])
      })))

  it.live("a body a parser read before the handler is invalid_input saying so, not a raw TypeError", () =>
    withRoute({}, (handler) =>
      Effect.gen(function*() {
        const request = beginRequest(beginPng)
        yield* Effect.promise(() => request.text())
        const answer = yield* Effect.promise(() => handler(request))
        const json = (yield* Effect.promise(() => answer.json())) as Record<string, unknown>
        assert.deepStrictEqual([answer.status, json["code"]], [400, "invalid_input"])
        assert.match(String(json["message"]), /^The upload request's body was already read before the upload handler \(hand the handler the request as received/)
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
        // the token exactly as issued, nothing else: base64url decoding skipped these, and they passed
        const [v, payload, signature] = begin.completionToken.split(".")
        for (
          const variant of [
            ...["!", "\u0000", " ", "=", "==", "*", "\n", "😀"].map((extra) => begin.completionToken + extra),
            `${v}.${payload}.${signature!.slice(0, 5)}*${signature!.slice(5)}`,
            `${v}.${payload}.${signature!.replaceAll("-", "+").replaceAll("_", "/")}`
          ].filter((variant) => variant !== begin.completionToken)
        ) {
          const malleated = yield* post(handler, { type: "complete", completionToken: variant })
          assert.deepStrictEqual([malleated.status, malleated.json.code], [403, "forbidden"], JSON.stringify(variant))
        }
        const other = createUploadRoute({ bucket, onBeforeUpload: () => true })
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

describe("upload route: completion is single-use", () => {
  /** begin -> PUT of a PNG under `pathname`: the begin answer */
  const uploaded = (handler: UploadHandler, pathname = "me.png") =>
    Effect.gen(function*() {
      const begin = (yield* post(handler, { ...beginPng, pathname })).json as unknown as BeginUploadResponse
      assert.strictEqual((yield* send(begin.url!, PNG, begin.headers)).status, 200)
      return begin
    })
  const completeWith = (handler: UploadHandler, completionToken: string) => post(handler, { type: "complete", completionToken })

  it.live("20 concurrent completes with one token: onUploadComplete runs once, every answer is the first's; a later repeat too", () => {
    let runs = 0
    return withRoute({
      onUploadComplete: () =>
        new Promise<void>((resolve) => {
          runs++
          setTimeout(resolve, 50) // still running while the others arrive
        })
    }, (handler) =>
      Effect.gen(function*() {
        const begin = yield* uploaded(handler)
        const answers = yield* Effect.all(Array.from({ length: 20 }, () => completeWith(handler, begin.completionToken)), {
          concurrency: "unbounded"
        })
        assert.strictEqual(runs, 1)
        assert.deepStrictEqual(answers.map((a) => a.status), Array.from({ length: 20 }, () => 200))
        const first = answers[0]!.json
        assert.deepInclude(first, { type: "complete", path: "users/42/me.png", size: PNG.length, contentType: "image/png" })
        for (const answer of answers) assert.deepStrictEqual(answer.json, first)
        const later = yield* completeWith(handler, begin.completionToken)
        assert.deepStrictEqual([later.status, later.json], [200, first])
        assert.strictEqual(runs, 1)
      }))
  })

  it.live("several instances sharing the bucket and the secret complete an upload once between them", () => {
    let runs = 0
    return Effect.gen(function*() {
      const bucket = yield* Bucket
      const instance = () =>
        createUploadRoute({
          bucket,
          secret: "a-secret-shared-by-every-instance",
          onBeforeUpload: () => true,
          onUploadComplete: () => void runs++
        })
      const instances = [instance(), instance(), instance()]
      const begin = yield* uploaded(instances[0]!)
      const answers = yield* Effect.all(
        Array.from({ length: 12 }, (_, i) => completeWith(instances[i % 3]!, begin.completionToken)),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(answers.map((a) => a.status), Array.from({ length: 12 }, () => 200))
      assert.strictEqual(runs, 1)
    }).pipe(Effect.provide(Bucket.layerMemory()))
  })

  it.live("a token from resume is the same upload: completing with both runs the hook once; resume after completion is not_found", () => {
    let runs = 0
    return withRoute({ onUploadComplete: () => void runs++ }, (handler) =>
      Effect.gen(function*() {
        const begin = yield* uploaded(handler)
        // a token is signed with its expiry in milliseconds: one signed in the same millisecond is the same token
        yield* Effect.sleep("5 millis")
        const resumed = (yield* post(handler, { type: "resume", completionToken: begin.completionToken })).json as unknown as ResumeUploadResponse
        assert.notStrictEqual(resumed.completionToken, begin.completionToken)
        const first = yield* completeWith(handler, resumed.completionToken)
        const second = yield* completeWith(handler, begin.completionToken)
        assert.deepStrictEqual([first.status, second.status], [200, 200])
        assert.deepStrictEqual(second.json, first.json)
        assert.strictEqual(runs, 1)
        // no new URL for a completed upload: another PUT could replace what the answer describes
        const again = yield* post(handler, { type: "resume", completionToken: begin.completionToken })
        assert.deepStrictEqual([again.status, again.json.code], [404, "not_found"])
        assert.match(String(again.json["message"]), /already completed/)
      }))
  })

  it.live("multipart: concurrent completes complete the upload and run the hook once", () => {
    let runs = 0
    return withRoute({
      multipartThreshold: "5MB",
      partSize: "5MB",
      contentTypes: ["application/octet-stream"],
      onUploadComplete: () => void runs++
    }, (handler, bucket) =>
      Effect.gen(function*() {
        const size = 5 * MiB + 10
        const data = new Uint8Array(size).map((_, i) => i & 0xff)
        const begun = (yield* post(handler, { type: "begin", pathname: "big.bin", contentType: "application/octet-stream", size }))
          .json as unknown as BeginUploadResponse
        const parts: Array<{ partNumber: number; etag: string }> = []
        for (const part of begun.multipart!.parts) {
          const from = (part.partNumber - 1) * begun.multipart!.partSize
          const sent = yield* send(part.url, data.subarray(from, from + part.size))
          parts.push({ partNumber: part.partNumber, etag: sent.headers.get("etag")! })
        }
        const answers = yield* Effect.all(
          Array.from({ length: 8 }, () => post(handler, { type: "complete", completionToken: begun.completionToken, parts })),
          { concurrency: "unbounded" }
        )
        assert.deepStrictEqual(answers.map((a) => a.status), Array.from({ length: 8 }, () => 200))
        for (const answer of answers) assert.deepStrictEqual(answer.json, answers[0]!.json)
        assert.strictEqual(runs, 1)
        assert.strictEqual((yield* bucket.info("users/42/big.bin")).size, size)
      }))
  })

  it.live("a completion that failed before the hook does not use the token up; one whose hook threw answers that refusal again", () => {
    let runs = 0
    return withRoute({
      onUploadComplete: ({ path }) => {
        runs++
        if (path.endsWith("reject.png")) throw Object.assign(new Error("quota exceeded"), { status: 409 })
      }
    }, (handler) =>
      Effect.gen(function*() {
        // too early (nothing stored yet): not_found, and the same token completes once the bytes are there
        const begin = (yield* post(handler, beginPng)).json as unknown as BeginUploadResponse
        const early = yield* completeWith(handler, begin.completionToken)
        assert.deepStrictEqual([early.status, early.json.code], [404, "not_found"])
        yield* send(begin.url!, PNG, begin.headers)
        assert.strictEqual((yield* completeWith(handler, begin.completionToken)).status, 200)
        assert.strictEqual(runs, 1)

        const reject = yield* uploaded(handler, "reject.png")
        const refusals = yield* Effect.all(Array.from({ length: 5 }, () => completeWith(handler, reject.completionToken)), {
          concurrency: "unbounded"
        })
        const later = yield* completeWith(handler, reject.completionToken)
        for (const refusal of [...refusals, later]) {
          assert.deepStrictEqual([refusal.status, refusal.json.code, refusal.json["message"]], [409, "conflict", "Quota exceeded"])
        }
        assert.strictEqual(runs, 2)
      }))
  })

  it.live("a repeat waits for the completion in progress up to completionWait, then answers conflict", () => {
    let release: () => void = () => undefined
    const hookHeld = new Promise<void>((resolve) => {
      release = resolve
    })
    let runs = 0
    return withRoute({
      completionWait: 0.2,
      onUploadComplete: () => {
        runs++
        return hookHeld
      }
    }, (handler) =>
      Effect.gen(function*() {
        const begin = yield* uploaded(handler)
        const first = yield* Effect.forkChild(completeWith(handler, begin.completionToken))
        // the first request holds the completion (it is in the hook) before the second is sent
        for (const deadline = Date.now() + 30_000; runs === 0; yield* Effect.sleep("5 millis")) {
          if (Date.now() > deadline) assert.fail("the first complete never reached onUploadComplete")
        }
        const impatient = yield* completeWith(handler, begin.completionToken)
        assert.deepStrictEqual([impatient.status, impatient.json.code], [409, "conflict"])
        assert.match(String(impatient.json["message"]), /being completed by another request/)
        // a resume meanwhile is refused too
        const resume = yield* post(handler, { type: "resume", completionToken: begin.completionToken })
        assert.deepStrictEqual([resume.status, resume.json.code], [409, "conflict"])
        release()
        const done = yield* Fiber.join(first)
        assert.strictEqual(done.status, 200)
        const after = yield* completeWith(handler, begin.completionToken)
        assert.deepStrictEqual([after.status, after.json], [200, done.json])
        assert.strictEqual(runs, 1)
      }))
  })

  it.live("begin refuses paths under .svc-blob/, where completion records live", () =>
    withRoute({ onBeforeUpload: ({ pathname }) => ({ path: pathname }) }, (handler) =>
      Effect.gen(function*() {
        const refused = yield* post(handler, { ...beginPng, pathname: ".svc-blob/completions/x.json" })
        assert.deepStrictEqual([refused.status, refused.json.code], [400, "invalid_input"])
        assert.match(String(refused.json["message"]), /\.svc-blob\//)
      })))
})

describe("upload route: the request's Content-Type", () => {
  const raw = (handler: UploadHandler, body: string, headers: Record<string, string>) =>
    Effect.promise(async () => {
      const response = await handler(new Request("http://app/api/upload", { method: "POST", body, headers }))
      return { status: response.status, json: await response.json() as Record<string, unknown> }
    })

  it.live("JSON (any case, any parameters, or no Content-Type at all) is read; another media type is 415 naming application/json", () => {
    const seen: Array<unknown> = []
    return withRoute({ onError: (error) => void seen.push(error) }, (handler) =>
      Effect.gen(function*() {
        const message = JSON.stringify(beginPng)
        for (const type of ["application/json", "Application/JSON; charset=utf-8", " application/json ;charset=UTF-8"]) {
          assert.strictEqual((yield* raw(handler, message, { "content-type": type })).status, 200, type)
        }
        // no Content-Type: read as JSON, as the suite's other JSON APIs (effect's HttpApi) do
        const bare = yield* Effect.promise(async () => {
          const request = new Request("http://app/api/upload", { method: "POST", body: new TextEncoder().encode(message) })
          assert.isNull(request.headers.get("content-type"))
          return (await handler(request)).status
        })
        assert.strictEqual(bare, 200)
        for (const type of ["text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx", ""]) {
          const refused = yield* raw(handler, message, { "content-type": type })
          assert.strictEqual(refused.status, 415, type)
          assert.strictEqual(refused.json["code"], "request_failed")
          assert.strictEqual(refused.json["status"], 415)
          assert.include(String(refused.json["message"]), "application/json")
          assert.isTrue(BlobError.is(BlobError.fromJSON(refused.json), "request_failed"))
        }
        const plain = yield* raw(handler, message, { "content-type": "text/plain" })
        assert.match(String(plain.json["message"]), /^Unsupported content-type: text\/plain \(send upload requests as application\/json\)$/)
        // through the route's onError like every refusal
        assert.isTrue(BlobError.is(seen.at(-1), "request_failed"))
      }))
  })
})
