/**
 * The Bucket contract against `Bucket.layerMemory` (fast tier: no radosgw, no socket), and what only
 * the memory layer has: a read-only store, signed URLs served by `memoryFetch` (expired, unknown).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Bucket, memoryFetch } from "../../src/server/Bucket.ts"
import { BlobError } from "../../src/shared/BlobError.ts"
import { bucketContract, contractOptions } from "../contracts/Bucket.ts"

bucketContract("memory", Bucket.layerMemory(contractOptions))

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
