/**
 * One route call (`src/browser/upload/route.ts`) against routes that answer badly: a real local HTTP
 * server that sends headers and then stalls (the stall timer must cover the body too, not only the
 * headers), and scripted answers of the wrong shape, each of which must be a BlobError naming the field
 * and must never send the file's bytes anywhere.
 */
import { assert, describe, it } from "@effect/vitest"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { upload, type UploadOptions } from "../../../src/browser/upload.ts"
import { BlobError } from "../../../src/shared/BlobError.ts"
import { completed, fileOf, memoryStore, MiB, multipartBegin, scriptedRoute, scriptedStorage, singleBegin } from "../../browser/scripted.ts"

const fast = { retryDelay: { base: 1, cap: 5 }, resume: false } as const

const failure = (promise: Promise<unknown>) => promise.then(() => assert.fail("expected a rejection"), (e: unknown) => e)

/** Settles within `ms` or fails the test (the fault was an upload that never settles). */
const within = <A>(promise: Promise<A>, ms: number) =>
  Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`not settled after ${ms} ms`)), ms))])

/** A route on 127.0.0.1 that answers 200 with JSON headers, writes `start` of the body, then nothing. */
const stallingRoute = async (start: string) => {
  let requests = 0
  const server = http.createServer((req, res) => {
    requests++
    req.resume()
    res.writeHead(200, { "content-type": "application/json" })
    if (start === "") res.flushHeaders()
    else res.write(start)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/api/upload`,
    requests: () => requests,
    close: () => {
      server.closeAllConnections()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

describe("route call: stallTimeout covers the whole answer", () => {
  for (const [name, start] of [["headers, then nothing", ""], ["headers and half a body, then nothing", "{\"type\":"]] as const) {
    it(`a route that sends ${name} is given up after stallTimeout, retried, then request_failed`, async () => {
      const route = await stallingRoute(start)
      try {
        const storage = scriptedStorage(() => ({ status: 200, etag: "\"e\"" }))
        const error = await within(
          failure(upload(fileOf(5), { route: route.url, XMLHttpRequest: storage.Xhr, stallTimeout: 150, retries: 1, ...fast })),
          5_000
        )
        assert.isTrue(BlobError.is(error, "request_failed"), String(error))
        assert.match((error as BlobError).message, /^Starting the upload failed after 2 attempts \(last status none: no answer\)/)
        assert.strictEqual(route.requests(), 2)
        assert.strictEqual(storage.puts.length, 0)
      } finally {
        await route.close()
      }
    })
  }
})

/**
 * Uploads through a route answering `answer`; the failure, the route's calls and storage's PUTs. With
 * `freshFor: 0`, storage refuses the URLs begin signed (`Signature=1`) as expired, so the route is asked
 * to renew them.
 */
const refused = async (answer: (body: Record<string, any>) => unknown, size = 5, extra: Partial<UploadOptions> = {}) => {
  const route = scriptedRoute(answer)
  const storage = scriptedStorage((put) =>
    extra.freshFor === 0 && put.url.endsWith("Signature=1") ? { status: 403 } : { status: 200, etag: "\"e\"" }
  )
  const error = await failure(upload(fileOf(size), { route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, ...fast, ...extra }))
  assert.isTrue(BlobError.is(error, "request_failed"), `expected request_failed, got ${String(error)}`)
  return { error: error as BlobError, calls: route.calls, puts: storage.puts }
}

const { url: _url, ...beginWithoutUrl } = singleBegin()

describe("route call: a wrongly shaped answer is request_failed naming the field, and sends no bytes", () => {
  const cases: ReadonlyArray<readonly [string, unknown, RegExp]> = [
    ["{}", {}, /^The upload route answered starting the upload with something that is not a valid begin answer: completionToken must be a non-empty string \(it is missing\)$/],
    ["null", null, /not a valid begin answer: the answer must be a JSON object \(got null\)$/],
    ["an array", [singleBegin()], /not a valid begin answer: the answer must be a JSON object/],
    ["no url (a PUT to \"undefined\": the page's own origin)", beginWithoutUrl, /not a valid begin answer: url must be a non-empty string \(the signed PUT URL\) \(it is missing\)$/],
    ["an empty url", singleBegin({ url: "" }), /not a valid begin answer: url must be a non-empty string/],
    ["headers that are not strings", singleBegin({ headers: { "content-type": 7 } }), /not a valid begin answer: headers must be an object of string headers/],
    ["no expiresAt", singleBegin({ expiresAt: "soon" }), /not a valid begin answer: expiresAt must be a number \(epoch ms\) \(got "soon"\)$/],
    ["multipart: {}", singleBegin({ multipart: {} }), /not a valid begin answer: multipart.partSize must be an integer >= 1 \(it is missing\)$/],
    ["multipart without parts", { ...multipartBegin(2 * MiB, MiB), multipart: { uploadId: "u", partSize: MiB } }, /not a valid begin answer: multipart.parts must be an array \(it is missing\)$/],
    [
      "a part without its url",
      { ...multipartBegin(2 * MiB, MiB), multipart: { uploadId: "u", partSize: MiB, parts: [{ partNumber: 1, size: MiB }] } },
      /not a valid begin answer: multipart.parts\[0\].url must be a non-empty string \(it is missing\)$/
    ]
  ]
  for (const [name, answer, message] of cases) {
    it(`begin answered ${name}`, async () => {
      const { error, calls, puts } = await refused((body) => body.type === "begin" ? answer : completed(5), 2 * MiB)
      assert.match(error.message, message)
      assert.strictEqual(error.status, 502)
      assert.deepStrictEqual(calls.map((c) => c.type), ["begin"]) // not retried: it would be wrong again
      assert.strictEqual(puts.length, 0)
    })
  }

  it("complete answered { ok: true }: refused, not resolved with an empty result", async () => {
    const { error, calls, puts } = await refused((body) => body.type === "begin" ? singleBegin() : { ok: true })
    assert.match(error.message, /^The upload route answered completing the upload with something that is not a valid complete answer: path must be a non-empty string \(it is missing\)$/)
    assert.deepStrictEqual(calls.map((c) => c.type), ["begin", "complete"])
    assert.strictEqual(puts.length, 1)
  })

  it("complete answered a size that is not a number", async () => {
    const { error } = await refused((body) => body.type === "begin" ? singleBegin() : { ...completed(5), size: "5" })
    assert.match(error.message, /not a valid complete answer: size must be an integer >= 0 \(got "5"\)$/)
  })

  it("a renewal of an expired URL answered without a url: refused, the PUT not sent to \"undefined\"", async () => {
    const { error, calls, puts } = await refused(
      (body) => body.type === "begin" ? singleBegin() : body.type === "resume" ? beginWithoutUrl : completed(5),
      5,
      { freshFor: 0 }
    )
    assert.match(error.message, /^The upload route answered renewing the upload URL with something that is not a valid resume answer: url must be a non-empty string/)
    assert.deepStrictEqual(calls.map((c) => c.type), ["begin", "resume"])
    assert.deepStrictEqual(puts.map((p) => p.url), [singleBegin().url])
  })

  it("a renewal of expired part URLs answered without multipart: refused", async () => {
    const size = 2 * MiB
    const { error, puts } = await refused(
      (body) => body.type === "begin" ? multipartBegin(size, MiB) : body.type === "resume" ? singleBegin() : completed(size),
      size,
      { freshFor: 0, concurrency: 1 }
    )
    assert.match(error.message, /renewing the part URLs with something that is not a valid resume answer: multipart must be a JSON object \(it is missing\)$/)
    assert.isTrue(puts.every((p) => p.url.endsWith("Signature=1")))
  })

  it("resuming a remembered upload answered landed parts without etags: refused, nothing sent", async () => {
    const size = 2 * MiB
    const store = memoryStore()
    const file = fileOf(size)
    const route = scriptedRoute((body) =>
      body.type === "resume"
        ? { ...multipartBegin(size, MiB), type: "resume", multipart: { ...multipartBegin(size, MiB).multipart, landed: [{ partNumber: 1, size: MiB }] } }
        : multipartBegin(size, MiB)
    )
    const storage = scriptedStorage(() => ({ status: 200, etag: "\"e\"" }))
    const options: UploadOptions = { route: "/u", fetch: route.fetch, XMLHttpRequest: storage.Xhr, ...fast, resume: store }
    // a first attempt whose complete fails after the parts landed leaves the upload remembered
    await failure(upload(file, { ...options, fetch: scriptedRoute((body) => body.type === "begin" ? multipartBegin(size, MiB) : new Response("", { status: 503 })).fetch, retries: 0 }))
    assert.strictEqual([...store.map.values()].filter((v) => v.includes("token-1")).length, 1)
    storage.puts.length = 0
    const error = await failure(upload(file, options)) as BlobError
    assert.isTrue(BlobError.is(error, "request_failed"))
    assert.match(error.message, /resuming the upload with something that is not a valid resume answer: multipart.landed\[0\].etag must be a non-empty string \(it is missing\)$/)
    assert.strictEqual(storage.puts.length, 0)
  })
})

describe("route call: a refusal that is not the route's BlobError keeps its reason", () => {
  const cases: ReadonlyArray<readonly [string, () => Response, number, RegExp]> = [
    // the server's own refusal before the route ran (the suite's platform answers JSON with a message)
    [
      "the server's JSON refusal",
      () => Response.json({ code: "invalid_request", message: "Query parameter x: is not valid percent-encoded UTF-8" }, { status: 400 }),
      400,
      /^The upload route answered 400: Query parameter x: is not valid percent-encoded UTF-8$/
    ],
    ["a plain-text 405", () => new Response("POST is not allowed on /u: it takes GET, HEAD, OPTIONS", { status: 405 }), 405, /^The upload route answered 405: POST is not allowed on \/u: it takes GET, HEAD, OPTIONS$/],
    ["a JSON body naming the error in `error`", () => Response.json({ error: "Origin not allowed" }, { status: 403 }), 403, /^The upload route answered 403: Origin not allowed$/],
    // an HTML error page is no message; neither is an empty body
    ["a proxy's HTML page", () => new Response("<html><body><h1>403 Forbidden</h1></body></html>", { status: 403 }), 403, /^The upload route answered 403$/],
    ["an empty 404", () => new Response("", { status: 404 }), 404, /^The upload route answered 404$/],
    ["a long text, cut", () => new Response("x".repeat(5_000), { status: 400 }), 400, /^The upload route answered 400: x{200}…$/]
  ]
  for (const [name, answer, status, message] of cases) {
    it(name, async () => {
      const { error, calls, puts } = await refused(() => answer())
      assert.strictEqual(error.status, status)
      assert.match(error.message, message)
      // a refusal is not retried, and no byte is sent
      assert.strictEqual(calls.length, 1)
      assert.strictEqual(puts.length, 0)
    })
  }
})
