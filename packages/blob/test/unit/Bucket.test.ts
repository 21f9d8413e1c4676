/**
 * The Bucket contract against `Bucket.layerMemory` (fast tier: no radosgw, no socket), and what only
 * the memory layer has: a read-only store, signed URLs served by `memoryFetch` (expired, unknown).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Bucket, memoryFetch } from "../../src/server/Bucket.ts"
import { BlobError } from "../../src/shared/BlobError.ts"
import { makeMemoryBucket } from "../../src/server/bucket/memory.ts"
import { promiseBucket } from "../../src/server/bucket/promise.ts"
import { bucketContract, contractOptions } from "../contracts/Bucket.ts"

bucketContract("memory", Bucket.layerMemory(contractOptions))

describe("the Promise API, as JavaScript without types calls it", () => {
  it("null options, a number for a string, a string for a list, a missing update function: invalid_input naming it, nothing done", async () => {
    const bucket = promiseBucket(makeMemoryBucket())
    for (const [message, call] of [
      ["Invalid arguments to put: options: expected an object, got null", () => bucket.put("a.txt", "x", null as never)],
      ["Invalid arguments to put: options.contentType: expected a string, got number", () => bucket.put("a.txt", "x", { contentType: 5 as never })],
      ["Invalid arguments to put: options.metadata: expected an object, got null", () => bucket.put("a.txt", "x", { metadata: null as never })],
      ["Invalid arguments to put: options.ifUnchanged: expected a string, got number", () => bucket.put("a.txt", "x", { ifUnchanged: 5 as never })],
      ["Invalid arguments to put: options.contentTypes: expected an array of strings, got string", () => bucket.put("a.txt", "x", { contentTypes: "text/plain" as never })],
      ["Invalid arguments to list: options: expected an object, got null", () => bucket.list(null as never)],
      ["Invalid arguments to list: options.prefix: expected a string, got number", () => bucket.list({ prefix: 5 as never })],
      ["Invalid arguments to copy: options: expected an object, got null", () => bucket.copy("a.txt", "b.txt", null as never)],
      ["Invalid arguments to signedReadUrl: options: expected an object, got null", () => bucket.signedReadUrl("a.txt", null as never)],
      ["Invalid arguments to signedUploadUrl: options: expected an object, got undefined", () => (bucket.signedUploadUrl as (path: string) => Promise<unknown>)("a.txt")],
      ["Invalid arguments to signedUploadUrl: options.size is missing", () => bucket.signedUploadUrl("a.txt", { contentType: "text/plain" } as never)],
      ["Invalid arguments to signedMultipartUpload: options: expected an object, got null", () => bucket.signedMultipartUpload("a.txt", null as never)],
      ["Invalid arguments to signedUploadParts: parts: expected an array", () => bucket.signedUploadParts("a.txt", "id", null as never)],
      ["Invalid arguments to completeMultipartUpload: parts: expected an array", () => bucket.completeMultipartUpload("a.txt", "id", null as never)],
      ["Invalid arguments to updateJson: update: expected a function", () => bucket.updateJson("a.json", 5 as never)],
      ["Invalid arguments to configureCors: options.origins: expected an array of strings, got string", () => bucket.configureCors({ origins: "http://a.invalid" as never })]
    ] as const) {
      const error = await call().then(() => undefined, (rejected: unknown) => rejected)
      assert.isTrue(BlobError.is(error, "invalid_input"), `${message}: ${String(error)}`)
      assert.strictEqual((error as BlobError).message, message)
    }
    assert.deepStrictEqual((await bucket.list()).objects, [])
    await bucket.close()
  })
})

describe("Bucket.layerMemory", () => {
  it.live("a read-only store refuses writes and upload URLs with forbidden, and still reads", () =>
    Effect.gen(function*() {
      const bucket = yield* Bucket
      const e = yield* Effect.flip(bucket.put("x.txt", "x"))
      assert.isTrue(BlobError.is(e, "forbidden"))
      assert.match(String((e.cause as Error).message), /read-only/)
      assert.strictEqual((yield* Effect.flip(bucket.signedUploadUrl("x.txt", { contentType: "text/plain", size: 1 }))).code, "forbidden")
      assert.strictEqual((yield* Effect.flip(bucket.del("x.txt"))).code, "forbidden")
      assert.isFalse(yield* bucket.exists("x.txt"))
    }).pipe(Effect.provide(Bucket.layerMemory({ readOnly: true }))))

  it.live("signed URLs: an expired one is 403; a closed bucket's are not served", () =>
    Effect.gen(function*() {
      const url = yield* Effect.gen(function*() {
        const bucket = yield* Bucket
        yield* bucket.put("a.txt", "a")
        const short = yield* bucket.signedReadUrl("a.txt", { expiresIn: 1 })
        assert.strictEqual((yield* Effect.promise(() => memoryFetch(new Request(short)))).status, 200)
        yield* Effect.sleep("1100 millis")
        assert.strictEqual((yield* Effect.promise(() => memoryFetch(new Request(short)))).status, 403)
        const forged = short.replace(/X-Memory-Grant=[^&]+/, "X-Memory-Grant=forged")
        assert.strictEqual((yield* Effect.promise(() => memoryFetch(new Request(forged)))).status, 403)
        return yield* bucket.signedReadUrl("a.txt")
      }).pipe(Effect.provide(Bucket.layerMemory())) // released here: its URLs are no longer served
      const refused = yield* Effect.promise(() => memoryFetch(new Request(url)).then(() => undefined, (e: unknown) => e))
      assert.instanceOf(refused, TypeError)
    }))
})
