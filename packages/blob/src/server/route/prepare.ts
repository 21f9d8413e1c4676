/**
 * A route's options checked once (TypeError where they are written) and their defaults: expiry, resume
 * window, completion wait, multipart threshold and the body cap (`maxBodySize`).
 *
 * @module
 */
import { Effect } from "effect"
import { BlobError } from "../../shared/BlobError.ts"
import { checkContentTypePatterns } from "../../shared/contentTypes.ts"
import { parseOptionalSize } from "../../shared/size.ts"
import type { BucketApi, PromiseBucket } from "../Bucket.ts"
import type { UploadRouteOptions } from "./types.ts"

const effectBucket = (bucket: BucketApi | PromiseBucket): BucketApi => "effect" in bucket ? bucket.effect : bucket

export const run = <A>(effect: Effect.Effect<A, BlobError>) => Effect.runPromise(effect)

export interface PreparedRoute {
  readonly name: string
  readonly options: UploadRouteOptions
  readonly bucket: BucketApi
  readonly contentTypes: ReadonlyArray<string> | undefined
  readonly maxSize: number | undefined
  readonly expiresIn: number
  readonly multipartThreshold: number
  readonly partSize: number | undefined
  readonly resumeWindow: number
  /** seconds a repeated complete waits for the completion in progress */
  readonly completionWait: number
  readonly maxBodySize: number
}

/** The default cap on an upload request body: begin, complete and resume messages are small JSON. */
export const DEFAULT_MAX_BODY_SIZE = 64 * 1024
/** Room for one part of a multipart `complete` message (`{"partNumber":10000,"etag":"\"…32 hex…\""}`, with margin). */
const BYTES_PER_PART = 128
const MiB = 1024 * 1024

/**
 * The default body cap of a route: 64 KiB, or more when its largest multipart upload (at most 10,000
 * parts, S3's limit; parts at least 5 MiB, or the route's part size) completes with a longer message.
 */
const defaultMaxBodySize = (maxSize: number | undefined, partSize: number | undefined): number => {
  const parts = maxSize === undefined ? 10_000 : Math.min(10_000, Math.ceil(maxSize / Math.max(partSize ?? 5 * MiB, 5 * MiB)))
  return Math.max(DEFAULT_MAX_BODY_SIZE, 4 * 1024 + parts * BYTES_PER_PART)
}

export const prepareRoute = (name: string, options: UploadRouteOptions, handlerMaxBodySize?: number): PreparedRoute => {
  if (typeof options !== "object" || options === null) throw new TypeError(`upload route ${name}: options must be an object`)
  if (typeof options.onBeforeUpload !== "function") {
    throw new TypeError(`upload route ${name}: onBeforeUpload is required (the application's own check)`)
  }
  if (options.bucket === undefined) throw new TypeError(`upload route ${name}: bucket is required`)
  let contentTypes: ReadonlyArray<string> | undefined
  if (options.contentTypes !== undefined) {
    const checked = checkContentTypePatterns(options.contentTypes)
    if (BlobError.is(checked)) throw checked
    contentTypes = checked
  }
  const expiresIn = options.expiresIn ?? 3600
  if (!Number.isFinite(expiresIn) || expiresIn <= 0) throw new TypeError(`upload route ${name}: expiresIn must be seconds > 0`)
  const resumeWindow = options.resumeWindow ?? 86_400
  if (!Number.isFinite(resumeWindow) || resumeWindow < 0) throw new TypeError(`upload route ${name}: resumeWindow must be seconds >= 0`)
  const completionWait = options.completionWait ?? 10
  if (!Number.isFinite(completionWait) || completionWait < 0) throw new TypeError(`upload route ${name}: completionWait must be seconds >= 0`)
  const maxSize = parseOptionalSize(options.maxSize, "maxSize")
  const partSize = parseOptionalSize(options.partSize, "partSize")
  const maxBodySize = parseOptionalSize(options.maxBodySize, "maxBodySize") ?? handlerMaxBodySize ??
    defaultMaxBodySize(maxSize, partSize)
  if (maxBodySize < 1024) throw new TypeError(`upload route ${name}: maxBodySize must be at least 1 KiB`)
  return {
    name,
    options,
    bucket: effectBucket(options.bucket),
    contentTypes,
    maxSize,
    expiresIn,
    multipartThreshold: parseOptionalSize(options.multipartThreshold, "multipartThreshold") ?? 64 * 1024 * 1024,
    partSize,
    resumeWindow,
    completionWait,
    maxBodySize
  }
}
