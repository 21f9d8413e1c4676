/**
 * Storage error normalization and the retry policy, against a scripted S3 (a local HTTP server answering
 * each storage error) reached through the real SDK.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as net from "node:net"
import { Bucket, makeBucketUnsafe } from "../src/server/Bucket.ts"
import type { BucketApi } from "../src/server/Bucket.ts"
import type { RetryOptions } from "../src/server/retry.ts"
import { normalizeStorageError } from "../src/server/normalize.ts"
import { formatBlobToken } from "../src/server/token.ts"
import { BlobError } from "../src/shared/BlobError.ts"
import { type ScriptedAnswer, type ScriptedRequest, scriptedServer, xmlError } from "./support/scripted.ts"

const SECRET = "sEcReTkEy0123456789abcdefABCDEF0123456789"

const scriptedBucket = (
  script: (request: ScriptedRequest, index: number) => ScriptedAnswer,
  retry: RetryOptions = { times: 0 }
) =>
  Effect.gen(function*() {
    const server = yield* scriptedServer(script)
    const bucket: BucketApi = yield* Bucket.make({
      token: formatBlobToken({ endpoint: server.url, bucket: "scripted", accessKeyId: "AKID", secretAccessKey: SECRET }),
      retry
    })
    return { bucket, requests: server.requests }
  })

const rows: ReadonlyArray<{
  readonly answer: ScriptedAnswer
  readonly code: string
  readonly status: number
  readonly message?: RegExp
  readonly hint?: RegExp
  readonly retryAfter?: number
}> = [
  { answer: { status: 404, body: xmlError("NoSuchKey") }, code: "not_found", status: 404, message: /^Not found: some\/key\.txt$/ },
  // the bucket itself is missing: the message names it, not the object
  { answer: { status: 404, body: xmlError("NoSuchBucket") }, code: "not_found", status: 404, message: /^Bucket not found: scripted$/ },
  { answer: { status: 404, body: xmlError("NoSuchUpload") }, code: "not_found", status: 404 },
  { answer: { status: 400, body: xmlError("NoSuchUpload") }, code: "not_found", status: 404 },
  { answer: { status: 412, body: xmlError("PreconditionFailed") }, code: "conflict", status: 409 },
  { answer: { status: 400, body: xmlError("PreconditionFailed") }, code: "conflict", status: 409 },
  { answer: { status: 401, body: xmlError("Unauthorized") }, code: "unauthorized", status: 401 },
  // The bucket here signs with the token's long-lived key: any 403 refuses the token (the rows for a
  // minted credential or a presigned URL are below).
  ...["ExpiredToken", "InvalidAccessKeyId", "TokenRefreshRequired", "AccessDenied", "SignatureDoesNotMatch"].map((c) => ({
    answer: { status: 403, body: xmlError(c) },
    code: "unauthorized",
    status: 401,
    message: /^Storage rejected the bucket token$/
  })),
  {
    answer: { status: 429, headers: { "retry-after": "3" }, body: xmlError("TooManyRequests") },
    code: "rate_limited",
    status: 429,
    message: /^Storage rate limited the request$/,
    retryAfter: 3
  },
  { answer: { status: 503, body: xmlError("SlowDown") }, code: "rate_limited", status: 429 },
  { answer: { status: 400, body: xmlError("TooManyRequests") }, code: "rate_limited", status: 429 },
  { answer: { status: 503, body: xmlError("ServiceUnavailable") }, code: "not_ready", status: 503 },
  { answer: { status: 413, body: xmlError("RequestEntityTooLarge") }, code: "too_large", status: 413 },
  { answer: { status: 400, body: xmlError("EntityTooLarge") }, code: "too_large", status: 413 },
  {
    answer: { status: 500, body: xmlError("InternalError", "disk on fire at /var/lib/ceph") },
    code: "request_failed",
    status: 502,
    message: /^Storage answered 500 InternalError$/
  },
  { answer: { status: 501, body: xmlError("NotImplemented") }, code: "request_failed", status: 502 },
  { answer: { status: 400, body: xmlError("InvalidArgument") }, code: "request_failed", status: 400, message: /400 InvalidArgument/ },
  { answer: { status: 409, body: xmlError("OperationAborted") }, code: "request_failed", status: 409 }
]

describe("storage error normalization (scripted S3)", () => {
  for (const row of rows) {
    it.live(`${row.answer.status} ${/<Code>(\w+)/.exec(row.answer.body ?? "")?.[1]} -> ${row.code}`, () =>
      Effect.gen(function*() {
        const { bucket, requests } = yield* scriptedBucket(() => row.answer)
        const error = yield* Effect.flip(bucket.getBytes("some/key.txt"))
        assert.isTrue(BlobError.is(error))
        assert.strictEqual(error.code, row.code)
        assert.strictEqual(error.status, row.status)
        if (row.message !== undefined) assert.match(error.message, row.message)
        if (row.hint !== undefined) assert.match(error.hint ?? "", row.hint)
        if (row.retryAfter !== undefined) assert.strictEqual(error.retryAfter, row.retryAfter)
        assert.notInclude(error.message, SECRET)
        assert.notInclude(error.message, "/var/lib")
        assert.strictEqual(requests.length, 1)
        if (row.code === "request_failed") {
          // storage's own message goes on cause
          assert.match(String((error.cause as Error).message), new RegExp(`answered ${row.answer.status}`))
        }
      }))
  }

  it.live("del on a missing bucket is not_found naming the bucket, for one path and for a list (not partial_delete)", () =>
    Effect.gen(function*() {
      const { bucket } = yield* scriptedBucket(() => ({ status: 404, body: xmlError("NoSuchBucket") }))
      for (const target of ["a.txt", ["a.txt", "b.txt"], { prefix: "p/" }] as const) {
        const error = yield* Effect.flip(bucket.del(target))
        assert.deepStrictEqual([error.code, error.message], ["not_found", "Bucket not found: scripted"], JSON.stringify(target))
      }
    }))

  it.live("a list delete storage refuses whole is storage's own error (nothing was deleted), not partial_delete naming every path", () =>
    Effect.gen(function*() {
      const { bucket, requests } = yield* scriptedBucket(() => ({ status: 403, body: xmlError("AccessDenied") }))
      const error = yield* Effect.flip(bucket.del(["a.txt", "b.txt"]))
      assert.strictEqual(error.code, "unauthorized")
      assert.isUndefined(error.failed)
      assert.strictEqual(requests.length, 1)
    }))

  it.live("a list delete refused after a first batch went through is partial_delete naming the refusal", () =>
    Effect.gen(function*() {
      const paths = Array.from({ length: 1001 }, (_, i) => `p/${i}.txt`)
      const { bucket } = yield* scriptedBucket((_, index) =>
        index === 0
          ? { status: 200, body: `<?xml version="1.0" encoding="UTF-8"?><DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"></DeleteResult>` }
          : { status: 403, body: xmlError("AccessDenied") }
      )
      const error = yield* Effect.flip(bucket.del(paths))
      assert.strictEqual(error.code, "partial_delete")
      assert.deepStrictEqual(error.failed, ["p/1000.txt"])
      assert.match(error.message, /^1 of 1001 paths were not deleted; storage refused a batch: /)
      assert.strictEqual((error.cause as BlobError).code, "unauthorized")
    }))

  it.live("a store that cannot be reached is request_failed 502", () =>
    Effect.gen(function*() {
      const bucket = yield* Bucket.make({
        token: formatBlobToken({ endpoint: "http://127.0.0.1:1", bucket: "scripted", accessKeyId: "A", secretAccessKey: SECRET }),
        retry: { times: 0 }
      })
      const error = yield* Effect.flip(bucket.getBytes("k"))
      assert.strictEqual(error.code, "request_failed")
      assert.strictEqual(error.status, 502)
      assert.match(error.message, /could not be reached/)
    }))

  it.live("a store that accepts and then says nothing fails the call after storageTimeout of silence, request_failed 502", () =>
    Effect.gen(function*() {
      const silent = yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const sockets = new Set<net.Socket>()
          const server = net.createServer((socket) => {
            sockets.add(socket)
            socket.resume() // reads the request, never answers
          })
          await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
          return { server, sockets, port: (server.address() as net.AddressInfo).port }
        }),
        ({ server, sockets }) => Effect.sync(() => {
          for (const socket of sockets) socket.destroy()
          server.close()
        })
      )
      const bucket = yield* Bucket.make({
        token: formatBlobToken({ endpoint: `http://127.0.0.1:${silent.port}`, bucket: "scripted", accessKeyId: "A", secretAccessKey: SECRET }),
        retry: { times: 0 },
        storageTimeout: "300 millis"
      })
      const started = Date.now()
      const error = yield* Effect.flip(bucket.info("k").pipe(Effect.timeout("10 seconds")))
      assert.instanceOf(error, BlobError)
      assert.strictEqual((error as BlobError).code, "request_failed")
      assert.match((error as BlobError).message, /could not be reached \(TimeoutError\)/)
      assert.isBelow(Date.now() - started, 5_000)
      const token = formatBlobToken({ endpoint: "http://127.0.0.1:1", bucket: "scripted", accessKeyId: "A", secretAccessKey: SECRET })
      assert.throws(() => makeBucketUnsafe({ token, storageTimeout: "0 seconds" }), TypeError, /storageTimeout/)
    }).pipe(Effect.scoped))

  it.live("a suspended account is unauthorized with the notice on cause", () =>
    Effect.gen(function*() {
      const { bucket } = yield* scriptedBucket(() => ({ status: 403, body: xmlError("UserSuspended") }))
      const error = yield* Effect.flip(bucket.getBytes("k"))
      assert.strictEqual(error.code, "unauthorized")
      assert.strictEqual(error.message, "Unauthorized")
      assert.match(String((error.cause as Error).message), /suspended/)
    }))
})

describe("the 403 rows for a minted credential or a presigned URL (not signed with the token's own key)", () => {
  /** A storage refusal as the SDK reports it. */
  const refusal = (code: string) => Object.assign(new Error(code), { name: code, Code: code, $metadata: { httpStatusCode: 403 } })
  for (const code of ["ExpiredToken", "InvalidAccessKeyId", "TokenRefreshRequired"]) {
    it(`403 ${code} -> unauthorized, the temporary credential refused`, () => {
      const error = normalizeStorageError(refusal(code), { signedWithToken: false })
      assert.strictEqual(error.code, "unauthorized")
      assert.match(error.message, /^Storage refused the temporary credential \(it expired mid-request; the client re-mints it and retries once\)$/)
    })
  }
  for (const code of ["AccessDenied", "SignatureDoesNotMatch"]) {
    it(`403 ${code} -> signature_mismatch`, () => {
      const error = normalizeStorageError(refusal(code))
      assert.strictEqual(error.code, "signature_mismatch")
      assert.match(error.hint ?? "", /did not match what was authorized/)
    })
  }
  it("a suspended account stays a suspension whoever signed", () => {
    const error = normalizeStorageError(refusal("UserSuspended"), { signedWithToken: true })
    assert.strictEqual(error.code, "unauthorized")
    assert.match(String((error.cause as Error).message), /suspended/)
  })
})

describe("retries (scripted S3)", () => {
  it.live("an idempotent verb retries transient failures and succeeds", () =>
    Effect.gen(function*() {
      const { bucket, requests } = yield* scriptedBucket(
        (_, i) => i < 2 ? { status: 503, body: xmlError("ServiceUnavailable") } : { status: 200, body: "ok" },
        { times: 4, base: "5 millis" }
      )
      const text = yield* bucket.getText("k")
      assert.strictEqual(text, "ok")
      assert.strictEqual(requests.length, 3)
    }))

  it.live("gives up after the schedule's retries with the last error", () =>
    Effect.gen(function*() {
      const { bucket, requests } = yield* scriptedBucket(
        () => ({ status: 500, body: xmlError("InternalError") }),
        { times: 3, base: "5 millis" }
      )
      const error = yield* Effect.flip(bucket.getText("k"))
      assert.strictEqual(error.code, "request_failed")
      assert.strictEqual(error.status, 502)
      assert.strictEqual(requests.length, 4)
    }))

  it.live("waits out a short Retry-After", () =>
    Effect.gen(function*() {
      const { bucket, requests } = yield* scriptedBucket(
        (_, i) => i === 0 ? { status: 429, headers: { "retry-after": "1" }, body: xmlError("SlowDown") } : { status: 200, body: "ok" },
        { times: 2, base: "1 millis" }
      )
      const start = Date.now()
      assert.strictEqual(yield* bucket.getText("k"), "ok")
      assert.isAtLeast(Date.now() - start, 950)
      assert.strictEqual(requests.length, 2)
    }))

  it.live("surfaces a long Retry-After at once, with retryAfter", () =>
    Effect.gen(function*() {
      const { bucket, requests } = yield* scriptedBucket(
        () => ({ status: 503, headers: { "retry-after": "30" }, body: xmlError("SlowDown") }),
        { times: 4, base: "1 millis" }
      )
      const start = Date.now()
      const error = yield* Effect.flip(bucket.getText("k"))
      assert.strictEqual(error.code, "rate_limited")
      assert.strictEqual(error.retryAfter, 30)
      assert.strictEqual(requests.length, 1)
      // at once: not after the 30 s it names (a generous bound: a busy machine may be slow to answer)
      assert.isBelow(Date.now() - start, 10_000)
    }))

  it.live("never retries non-idempotent verbs or refusals", () =>
    Effect.gen(function*() {
      const { bucket, requests } = yield* scriptedBucket(
        () => ({ status: 500, body: xmlError("InternalError") }),
        { times: 4, base: "1 millis" }
      )
      // a conditional put (allowOverwrite false): one PUT (then a HEAD to see what landed)
      yield* Effect.flip(bucket.put("k.txt", "x"))
      assert.strictEqual(requests.filter((r) => r.method === "PUT").length, 1)
      // a stream put
      const before = requests.length
      yield* Effect.flip(bucket.put("s.txt", (async function*() {
        yield new Uint8Array(100)
      })(), { size: 100, allowOverwrite: true, sniff: false }))
      assert.strictEqual(requests.slice(before).filter((r) => r.method === "PUT").length, 1)
      // an unconditional put of bytes is idempotent: retried
      const before2 = requests.length
      yield* Effect.flip(bucket.put("b.txt", "x", { allowOverwrite: true }))
      assert.strictEqual(requests.slice(before2).filter((r) => r.method === "PUT").length, 5)
    }))

  it.live("never retries a non-transient refusal", () =>
    Effect.gen(function*() {
      const { bucket, requests } = yield* scriptedBucket(
        () => ({ status: 403, body: xmlError("AccessDenied") }),
        { times: 4, base: "1 millis" }
      )
      yield* Effect.flip(bucket.getText("k"))
      assert.strictEqual(requests.length, 1)
    }))
})
