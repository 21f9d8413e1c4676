/**
 * A bucket token that does not parse is a TypeError naming where it came from — `options.token`, the
 * `SVC_BLOB_TOKEN` variable, or another setting that holds one — and never its value.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Layer } from "effect"
import { Bucket, createBucket, makeBucketUnsafe } from "../../src/server/Bucket.ts"
import { parseBlobToken } from "../../src/server/token.ts"

const SECRET = "s3cr3t-never-shown"
const BAD = `s3+http://KEY:${SECRET}@127.0.0.1:1/a/b` // two path segments

const thrown = (f: () => unknown): Error => {
  try {
    f()
  } catch (error) {
    assert.instanceOf(error, TypeError)
    assert.notInclude((error as Error).message, SECRET)
    return error as Error
  }
  return assert.fail("expected a TypeError")
}

/** Runs `f` with `SVC_BLOB_TOKEN` set to `value` (or unset), restoring it after. */
const withEnvToken = <A>(value: string | undefined, f: () => A): A => {
  const saved = process.env["SVC_BLOB_TOKEN"]
  if (value === undefined) delete process.env["SVC_BLOB_TOKEN"]
  else process.env["SVC_BLOB_TOKEN"] = value
  try {
    return f()
  } finally {
    if (saved === undefined) delete process.env["SVC_BLOB_TOKEN"]
    else process.env["SVC_BLOB_TOKEN"] = saved
  }
}

describe("a bad bucket token names where it came from", () => {
  it("passed as an option: options.token, even with SVC_BLOB_TOKEN set", () => {
    withEnvToken(`s3+http://KEY:${SECRET}@127.0.0.1:1/fine`, () => {
      assert.strictEqual(
        thrown(() => createBucket({ token: BAD })).message,
        "options.token is not a valid bucket token: the path must be exactly /<bucket>"
      )
      assert.strictEqual(
        thrown(() => createBucket({ token: "https://nope.invalid/b" })).message,
        "options.token is not a valid bucket token: scheme must be s3, s3+https or s3+http (got https)"
      )
    })
    assert.strictEqual(
      thrown(() => makeBucketUnsafe({ token: BAD })).message,
      "options.token is not a valid bucket token: the path must be exactly /<bucket>"
    )
    assert.match(thrown(() => makeBucketUnsafe({ token: "" })).message, /^options\.token is not set: pass a bucket token/)
  })

  it("read from the environment: SVC_BLOB_TOKEN (createBucket() and Bucket.layerConfig())", () => {
    withEnvToken(BAD, () => {
      assert.strictEqual(thrown(() => createBucket()).message, "SVC_BLOB_TOKEN is not a valid bucket token: the path must be exactly /<bucket>")
    })
    withEnvToken(undefined, () => {
      assert.match(thrown(() => createBucket()).message, /^SVC_BLOB_TOKEN is not set: pass a bucket token/)
    })
    const exit = Effect.runSyncExit(
      Layer.build(Bucket.layerConfig()).pipe(
        Effect.scoped,
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({ SVC_BLOB_TOKEN: BAD })))
      )
    )
    assert.isTrue(Exit.isFailure(exit))
    assert.include(String(exit), "SVC_BLOB_TOKEN is not a valid bucket token: the path must be exactly /<bucket>")
    assert.notInclude(String(exit), SECRET)
  })

  it("another setting that holds one names itself", () => {
    assert.strictEqual(
      thrown(() => parseBlobToken(BAD, "OFFER_IMAGES_STORAGE")).message,
      "OFFER_IMAGES_STORAGE is not a valid bucket token: the path must be exactly /<bucket>"
    )
    assert.strictEqual(
      thrown(() => parseBlobToken(`s3+http://KEY:${SECRET}@127.0.0.1:1/bucket?sts=ftp://x.invalid`, "OFFER_IMAGES_STORAGE")).message,
      "OFFER_IMAGES_STORAGE is not a valid bucket token: sts must be an http(s) URL"
    )
  })
})
