/**
 * The server-side bucket client, on `@aws-sdk/client-s3`.
 *
 * - Effect: `Bucket` is a `Context.Service` (`Bucket.layer(options)`, `Bucket.layerConfig()` reading
 *   `SVC_BLOB_TOKEN`, `Bucket.make(options)` scoped, `Bucket.layerMemory()` for tests); every verb is an
 *   `Effect<_, BlobError>`.
 * - Promise: `createBucket(options?)` gives the same verbs returning Promises that reject with BlobError.
 *
 * Retries: idempotent verbs (get, info, exists, list, del, copy, signed URLs' minting, a put of a
 * replayable body that may overwrite, each multipart part) retry transient failures with the policy of
 * `retry.ts`; non-idempotent ones (a conditional put — allowOverwrite false or ifUnchanged —, a put of a
 * stream, creating or completing a multipart upload, move as a whole, updateJson's write) never do.
 * A refusal of an expired temporary credential is re-minted and retried once by every verb whose body
 * can be sent again.
 *
 * The pieces live in `bucket/`: `types` (the interface, options, results), `body` (put bodies),
 * `client` (S3 client, send, retries; credentials in `credentials.ts`), `keys` (paths, etags),
 * `reads`, `list`, `putPlan` + `put`, `multipart`, `conditional`, `copy`, `delete`, `updateJson`,
 * `presign`, `cors`, `promise`, and `memory` (the in-memory store of `layerMemory`). This file assembles
 * them.
 *
 * @module
 */
import { Config, ConfigProvider, Context, Effect, Layer } from "effect"
import type { Scope } from "effect"
import { makeS3Context } from "./bucket/client.ts"
import { makeConditional } from "./bucket/conditional.ts"
import { makeCopy, makeMove } from "./bucket/copy.ts"
import { makeCors } from "./bucket/cors.ts"
import { makeDel, makeS3Delete } from "./bucket/delete.ts"
import { makeList } from "./bucket/list.ts"
import { makeMemoryBucket, type MemoryBucketOptions } from "./bucket/memory.ts"
import { makeMultipart } from "./bucket/multipart.ts"
import { makePresign } from "./bucket/presign.ts"
import { type PromiseBucket, promiseBucket } from "./bucket/promise.ts"
import { makePut } from "./bucket/put.ts"
import { makeReads } from "./bucket/reads.ts"
import type { BucketApi, BucketOptions } from "./bucket/types.ts"
import { makeS3JsonStore, makeUpdateJson } from "./bucket/updateJson.ts"
import { parseBlobToken } from "./token.ts"

export type * from "./bucket/types.ts"
export type { PromiseBucket } from "./bucket/promise.ts"
export type { MemoryBucketOptions } from "./bucket/memory.ts"
export { memoryFetch } from "./bucket/memoryStore.ts"

/** Builds a bucket client. Synchronous; `close` releases it. Throws TypeError for bad options. */
export const makeBucketUnsafe = (options: BucketOptions): BucketApi => {
  const s3 = makeS3Context(options)
  const reads = makeReads(s3)
  const conditional = makeConditional(reads)
  const multipart = makeMultipart(s3, reads, conditional)
  const { put, putOnce } = makePut(s3, reads, conditional, multipart)
  const list = makeList(s3)
  const { deleteOne, deleteMany } = makeS3Delete(s3)
  const del = makeDel({ readOnly: s3.token.readOnly, deleteOne, deleteMany, list })
  const { copyObject, copy } = makeCopy(s3, reads, conditional)
  const move = makeMove({ info: reads.info, copyObject, deleteOne })
  const updateJson = makeUpdateJson(makeS3JsonStore(s3, { putOnce }))
  const presign = makePresign(s3, multipart)
  const configureCors = makeCors(s3)
  return {
    name: s3.Bucket,
    endpoint: s3.token.endpoint,
    url: s3.url,
    put: (path, body, options) => put(path, body, options),
    get: reads.get,
    getBytes: reads.getBytes,
    getText: reads.getText,
    info: reads.info,
    exists: reads.exists,
    copy: (from, to, options) => copy(from, to, options),
    move: (from, to, options) => move(from, to, options),
    del,
    list,
    updateJson,
    signedReadUrl: (path, options) => presign.signedReadUrl(path, options),
    signedUploadUrl: presign.signedUploadUrl,
    signedMultipartUpload: presign.signedMultipartUpload,
    completeMultipartUpload: (path, uploadId, parts, options) => multipart.completeMultipartUpload(path, uploadId, parts, options),
    abortMultipartUpload: (path, uploadId) => multipart.abortUpload(path, uploadId),
    listParts: multipart.listParts,
    signedUploadParts: (path, uploadId, parts, options) => presign.signedUploadParts(path, uploadId, parts, options),
    configureCors: (options) => configureCors(options),
    close: s3.close
  }
}

// --- the Effect service --------------------------------------------------------------------------------

export class Bucket extends Context.Service<Bucket, BucketApi>()("@svc/blob/Bucket") {
  /** A bucket client for the scope's lifetime. Bad options throw TypeError (a defect). */
  static readonly make = (options: BucketOptions): Effect.Effect<BucketApi, never, Scope.Scope> =>
    Effect.acquireRelease(Effect.sync(() => makeBucketUnsafe(options)), (bucket) => bucket.close)

  /** The `Bucket` service from explicit options. */
  static readonly layer = (options: BucketOptions): Layer.Layer<Bucket> => Layer.effect(Bucket, Bucket.make(options))

  /**
   * The `Bucket` service over an in-memory store (tests only), fresh per layer build: the same verbs,
   * conditional writes, multipart and errors as `layer` (see `bucket/memory.ts`; signed URLs are served by
   * `memoryFetch`, not by the network).
   */
  static readonly layerMemory = (options: MemoryBucketOptions = {}): Layer.Layer<Bucket> =>
    Layer.effect(Bucket, Effect.acquireRelease(Effect.sync(() => makeMemoryBucket(options)), (bucket) => bucket.close))

  /**
   * The `Bucket` service from `SVC_BLOB_TOKEN` (a `Config.Redacted`, read once at layer build). A missing
   * variable is a ConfigError; a malformed token a ConfigError naming the variable (never its value).
   */
  static readonly layerConfig = (
    options: Omit<BucketOptions, "token"> = {}
  ): Layer.Layer<Bucket, Config.ConfigError> =>
    Layer.effect(
      Bucket,
      Effect.gen(function*() {
        const token = yield* Config.Redacted("SVC_BLOB_TOKEN")
        try {
          parseBlobToken(token, "SVC_BLOB_TOKEN")
        } catch (error) {
          return yield* Effect.fail(new Config.ConfigError(new ConfigProvider.SourceError({ message: (error as Error).message })))
        }
        return yield* Bucket.make({ ...options, token })
      })
    )
}

/**
 * A bucket for Promise code. `options.token` defaults to `process.env.SVC_BLOB_TOKEN`; a missing or
 * malformed token throws TypeError here, naming the one it read.
 */
export const createBucket = (options: Partial<BucketOptions> = {}): PromiseBucket => {
  const token = options.token ?? process.env["SVC_BLOB_TOKEN"]
  // one read from the environment is checked here, to name it; makeBucketUnsafe names options.token
  if (options.token === undefined) parseBlobToken(token, "SVC_BLOB_TOKEN")
  return promiseBucket(makeBucketUnsafe({ ...options, token: token ?? "" }))
}
