/**
 * The server-side bucket client, on `@aws-sdk/client-s3`.
 *
 * - Effect: `Bucket` is a `Context.Service` (`Bucket.layer(options)`, `Bucket.layerConfig()` reading
 *   `SVC_BLOB_TOKEN`, `Bucket.make(options)` scoped); every verb is an `Effect<_, BlobError>`.
 * - Promise: `createBucket(options?)` gives the same verbs returning Promises that reject with BlobError.
 *
 * Retries: idempotent verbs (get, info, exists, list, del, copy, signed URLs' minting, a put of a
 * replayable body that may overwrite, each multipart part) retry transient failures with the policy of
 * `retry.ts`; non-idempotent ones (a conditional put — allowOverwrite false or ifUnchanged —, a put of a
 * stream, creating or completing a multipart upload, move as a whole, updateJson's write) never do.
 * A refusal of an expired temporary credential is re-minted and retried once by every verb whose body
 * can be sent again.
 *
 * @module
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  PutBucketCorsCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand
} from "@aws-sdk/client-s3"
import { getSignedUrl } from "@aws-sdk/s3-request-presigner"
import { Clock, Config, ConfigProvider, Context, Duration, Effect, Layer, Random, Redacted } from "effect"
import type { Scope } from "effect"
import { createHash, randomUUID } from "node:crypto"
import { Readable } from "node:stream"
import { BlobError } from "../shared/BlobError.ts"
import {
  checkContentTypePatterns,
  contentTypeFromPath,
  contentTypeRefusal,
  essence,
  SNIFF_BYTES,
  sniffRefusal
} from "../shared/contentTypes.ts"
import { checkPath, metadataProblem } from "../shared/paths.ts"
import type { PresignedPart } from "../shared/protocol.ts"
import { formatBytes, parseOptionalSize, parseSize, type SizeInput } from "../shared/size.ts"
import {
  credentialsFor,
  invalidateCredentials,
  type StorageCredentials
} from "./credentials.ts"
import { isCredentialRefusal, normalizeStorageError } from "./normalize.ts"
import { type RetryOptions, retryPolicy, withRetry } from "./retry.ts"
import { type BlobToken, parseBlobToken } from "./token.ts"

// --- types -----------------------------------------------------------------------------------------------

/** What `put` accepts. A `Request` contributes its body, Content-Length and Content-Type. */
export type PutBody =
  | string
  | Uint8Array
  | ArrayBuffer
  | Blob
  | ReadableStream<Uint8Array>
  | AsyncIterable<Uint8Array>
  | Request

export interface PutOptions {
  /** default: the Request's or Blob's type, else from the path's extension, else text/plain for strings */
  readonly contentType?: string | undefined
  /** false (default): an occupied path answers already_exists (If-None-Match: *) */
  readonly allowOverwrite?: boolean | undefined
  /** write only if the stored object still has this etag (If-Match); else conflict */
  readonly ifUnchanged?: string | undefined
  /** the body's length; required for a stream unless maxSize is given */
  readonly size?: SizeInput | undefined
  /** refuse bodies over this (too_large) */
  readonly maxSize?: SizeInput | undefined
  /** "auto" (default): multipart above multipartThreshold; false: one PUT (too_large above maxSinglePut) */
  readonly multipart?: boolean | "auto" | undefined
  /** allowed content types (type/subtype, image/*, video/*, audio/*) */
  readonly contentTypes?: ReadonlyArray<string> | undefined
  /** refuse a body whose leading bytes contradict its type (default true) */
  readonly sniff?: boolean | undefined
  /** x-amz-meta-*: printable ASCII only */
  readonly metadata?: Readonly<Record<string, string>> | undefined
  readonly cacheControl?: string | undefined
}

export interface PutResult {
  readonly path: string
  readonly url: string
  readonly etag: string
  readonly size: number
  readonly contentType: string
}

export interface ObjectInfo {
  readonly path: string
  readonly url: string
  readonly size: number
  readonly etag: string
  readonly contentType: string
  readonly lastModified: Date | undefined
  readonly cacheControl: string | undefined
  readonly metadata: Readonly<Record<string, string>>
}

export interface GetResult extends ObjectInfo {
  /** the body, readable once */
  readonly body: ReadableStream<Uint8Array>
}

export interface ListOptions {
  readonly prefix?: string | undefined
  /** the cursor of the previous page */
  readonly cursor?: string | undefined
  /** page size, 1-1000 (default 1000) */
  readonly limit?: number | undefined
  /** "folded": objects directly under prefix, plus the sub-folders */
  readonly mode?: "expanded" | "folded" | undefined
}

export interface ListedObject {
  readonly path: string
  readonly size: number
  readonly etag: string
  readonly lastModified: Date | undefined
}

export interface ListResult {
  readonly objects: ReadonlyArray<ListedObject>
  readonly folders: ReadonlyArray<string>
  readonly cursor: string | undefined
  readonly hasMore: boolean
}

/** `del` targets: one path, a list of paths, or every object under a prefix. */
export type DeleteTarget =
  | string
  | ReadonlyArray<string>
  | { readonly prefix: string; readonly everything?: boolean | undefined }

export interface DeleteResult {
  readonly deleted: number
}

export interface CopyOptions {
  /** false (default): an occupied destination answers already_exists (checked before copying) */
  readonly allowOverwrite?: boolean | undefined
  /** replace the content type instead of copying it */
  readonly contentType?: string | undefined
}

export interface UpdateJsonOptions {
  /** rounds of read-modify-write before giving up with conflict (default 6) */
  readonly maxAttempts?: number | undefined
}

export interface SignedReadOptions {
  /** seconds (default 3600; capped by the credential's own lifetime) */
  readonly expiresIn?: number | undefined
  /** Content-Disposition: attachment (with this file name when a string) */
  readonly download?: boolean | string | undefined
}

export interface SignedUploadOptions {
  readonly contentType: string
  readonly size: number
  /** seconds (default 600) */
  readonly expiresIn?: number | undefined
  readonly allowOverwrite?: boolean | undefined
}

export interface SignedUpload {
  readonly url: string
  readonly method: "PUT"
  /** send exactly these headers (they are signed) */
  readonly headers: Readonly<Record<string, string>>
  /** epoch ms */
  readonly expiresAt: number
}

export interface SignedMultipartUpload {
  readonly uploadId: string
  readonly partSize: number
  readonly parts: ReadonlyArray<PresignedPart>
  readonly headers: Readonly<Record<string, string>>
  readonly expiresAt: number
}

/** A part storage already holds (ListParts). */
export interface LandedPart {
  readonly partNumber: number
  readonly etag: string
  readonly size: number
}

export interface CorsOptions {
  /** default ["*"] (every origin) */
  readonly origins?: ReadonlyArray<string> | undefined
  readonly maxAgeSeconds?: number | undefined
}

export interface BucketOptions {
  /** the bucket token (see token.ts); `createBucket()` reads SVC_BLOB_TOKEN when absent */
  readonly token: string | Redacted.Redacted<string>
  readonly retry?: RetryOptions | undefined
  /** above this, put uses multipart (default 100 MiB, the size AWS recommends multipart from) */
  readonly multipartThreshold?: SizeInput | undefined
  /** multipart part size (default 8 MiB, at least 5 MiB) */
  readonly partSize?: SizeInput | undefined
  /** parts uploaded at once (default 4) */
  readonly partConcurrency?: number | undefined
  /** the largest single PUT (default 5 GiB) */
  readonly maxSinglePut?: SizeInput | undefined
  /** re-mint temporary credentials this long before expiry (default 5 minutes) */
  readonly refreshBeforeExpiry?: Duration.Input | undefined
  /** a credential-service backoff longer than this many seconds is mint_backoff (default 10) */
  readonly mintBackoffThreshold?: number | undefined
}

/** The verbs. Every failure is a BlobError. */
export interface BucketApi {
  readonly name: string
  readonly endpoint: string
  /** the public (unsigned) URL of a path */
  url(path: string): string
  put(path: string, body: PutBody, options?: PutOptions): Effect.Effect<PutResult, BlobError>
  get(path: string): Effect.Effect<GetResult, BlobError>
  getBytes(path: string): Effect.Effect<Uint8Array, BlobError>
  getText(path: string): Effect.Effect<string, BlobError>
  info(path: string): Effect.Effect<ObjectInfo, BlobError>
  exists(path: string): Effect.Effect<boolean, BlobError>
  copy(from: string, to: string, options?: CopyOptions): Effect.Effect<ObjectInfo, BlobError>
  move(from: string, to: string, options?: CopyOptions): Effect.Effect<ObjectInfo, BlobError>
  del(target: DeleteTarget): Effect.Effect<DeleteResult, BlobError>
  list(options?: ListOptions): Effect.Effect<ListResult, BlobError>
  updateJson<A>(
    path: string,
    update: (current: A | undefined) => A | Effect.Effect<A, BlobError> | Promise<A>,
    options?: UpdateJsonOptions
  ): Effect.Effect<A, BlobError>
  signedReadUrl(path: string, options?: SignedReadOptions): Effect.Effect<string, BlobError>
  signedUploadUrl(path: string, options: SignedUploadOptions): Effect.Effect<SignedUpload, BlobError>
  /** starts a multipart upload and signs every part's PUT (content length signed per part) */
  signedMultipartUpload(
    path: string,
    options: SignedUploadOptions & { readonly partSize?: number | undefined }
  ): Effect.Effect<SignedMultipartUpload, BlobError>
  completeMultipartUpload(
    path: string,
    uploadId: string,
    parts: ReadonlyArray<{ readonly partNumber: number; readonly etag: string }>,
    options?: { readonly allowOverwrite?: boolean | undefined }
  ): Effect.Effect<{ readonly etag: string }, BlobError>
  abortMultipartUpload(path: string, uploadId: string): Effect.Effect<void, BlobError>
  /** the parts of an unfinished multipart upload that storage holds (ListParts); `not_found` once it is gone */
  listParts(path: string, uploadId: string): Effect.Effect<ReadonlyArray<LandedPart>, BlobError>
  /** signs part PUTs of an existing multipart upload again (expired URLs, a resumed upload) */
  signedUploadParts(
    path: string,
    uploadId: string,
    parts: ReadonlyArray<{ readonly partNumber: number; readonly size: number }>,
    options?: { readonly expiresIn?: number | undefined }
  ): Effect.Effect<{ readonly parts: ReadonlyArray<PresignedPart>; readonly expiresAt: number }, BlobError>
  /** sets the bucket's CORS rules so browsers may PUT (signed headers) and read ETag */
  configureCors(options?: CorsOptions): Effect.Effect<void, BlobError>
  /** releases the S3 clients */
  readonly close: Effect.Effect<void>
}

// --- helpers ---------------------------------------------------------------------------------------------

const MiB = 1024 * 1024
/** metadata key carrying updateJson's write id (to tell its own write from a rival's after a 5xx) */
const WRITE_ID = "svc-write-id"
const encoder = new TextEncoder()

const bare = (etag: string) => etag.replaceAll("\"", "")
const quoted = (etag: string | undefined) => etag === undefined || etag === "" ? "" : `"${bare(etag)}"`

const encodePath = (path: string) => path.split("/").map(encodeURIComponent).join("/")

type Prepared =
  | { readonly kind: "bytes"; readonly bytes: Uint8Array; readonly typeHint: string | undefined }
  | {
    readonly kind: "stream"
    readonly source: AsyncIterable<Uint8Array>
    readonly length: number | undefined
    readonly typeHint: string | undefined
  }

const isAsyncIterable = (u: unknown): u is AsyncIterable<Uint8Array> =>
  typeof u === "object" && u !== null && Symbol.asyncIterator in u

const webStreamIterable = (stream: ReadableStream<Uint8Array>): AsyncIterable<Uint8Array> => ({
  async *[Symbol.asyncIterator]() {
    const reader = stream.getReader()
    try {
      while (true) {
        const { done, value } = await reader.read()
        if (done) return
        yield value
      }
    } finally {
      reader.releaseLock()
    }
  }
})

const toBytes = (chunk: unknown): Uint8Array =>
  chunk instanceof Uint8Array
    ? chunk
    : typeof chunk === "string"
    ? encoder.encode(chunk)
    : chunk instanceof ArrayBuffer
    ? new Uint8Array(chunk)
    : (() => {
      throw new BlobError("invalid_input", { message: "A body stream must yield bytes" })
    })()

const prepareBody = (body: PutBody): Prepared | BlobError => {
  if (typeof body === "string") return { kind: "bytes", bytes: encoder.encode(body), typeHint: undefined }
  if (body instanceof Uint8Array) return { kind: "bytes", bytes: body, typeHint: undefined }
  if (body instanceof ArrayBuffer) return { kind: "bytes", bytes: new Uint8Array(body), typeHint: undefined }
  if (typeof Request !== "undefined" && body instanceof Request) {
    if (body.body === null || body.bodyUsed) {
      return new BlobError("empty_body", { message: "The request has no body left to store" })
    }
    const lengthHeader = body.headers.get("content-length")
    const length = lengthHeader !== null && /^\d+$/.test(lengthHeader) ? Number(lengthHeader) : undefined
    return {
      kind: "stream",
      source: webStreamIterable(body.body),
      length,
      typeHint: body.headers.get("content-type") ?? undefined
    }
  }
  if (typeof Blob !== "undefined" && body instanceof Blob) {
    return {
      kind: "stream",
      source: webStreamIterable(body.stream()),
      length: body.size,
      typeHint: body.type === "" ? undefined : body.type
    }
  }
  if (typeof ReadableStream !== "undefined" && body instanceof ReadableStream) {
    return { kind: "stream", source: webStreamIterable(body), length: undefined, typeHint: undefined }
  }
  if (isAsyncIterable(body)) return { kind: "stream", source: body, length: undefined, typeHint: undefined }
  return new BlobError("invalid_input", {
    message: "Unsupported body: pass a string, bytes, a Blob, a stream or a Request"
  })
}

/** Reads up to `n` leading bytes without losing them: returns them and an iterable of the whole body. */
const peek = async (source: AsyncIterable<Uint8Array>, n: number) => {
  const iterator = source[Symbol.asyncIterator]()
  const head: Array<Uint8Array> = []
  let got = 0
  let done = false
  while (got < n) {
    const next = await iterator.next()
    if (next.done === true) {
      done = true
      break
    }
    const chunk = toBytes(next.value)
    head.push(chunk)
    got += chunk.length
  }
  const leading = concat(head, got)
  const rest: AsyncIterable<Uint8Array> = {
    async *[Symbol.asyncIterator]() {
      for (const chunk of head) yield chunk
      if (done) return
      while (true) {
        const next = await iterator.next()
        if (next.done === true) return
        yield toBytes(next.value)
      }
    }
  }
  return { leading, done, whole: done ? leading : undefined, rest }
}

const concat = (chunks: ReadonlyArray<Uint8Array>, total: number): Uint8Array => {
  if (chunks.length === 1 && chunks[0] !== undefined) return chunks[0]
  const out = new Uint8Array(total)
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.length
  }
  return out
}

const tooLarge = (size: number | string, limit: number, hint?: string) =>
  new BlobError("too_large", {
    message: `The body is ${typeof size === "number" ? formatBytes(size) : size}, over the limit of ${formatBytes(limit)}`,
    ...(hint === undefined ? {} : { hint })
  })

/** Counts bytes as they pass; throws too_large past `max`, invalid_input when `exact` is not met. */
const counted = (source: AsyncIterable<Uint8Array>, limits: { max?: number | undefined; exact?: number | undefined }) => {
  const state = { bytes: 0 }
  const iterable: AsyncIterable<Uint8Array> = {
    async *[Symbol.asyncIterator]() {
      for await (const chunk of source) {
        state.bytes += chunk.length
        if (limits.max !== undefined && state.bytes > limits.max) throw tooLarge(`over ${formatBytes(limits.max)}`, limits.max)
        if (limits.exact !== undefined && state.bytes > limits.exact) {
          throw new BlobError("invalid_input", { message: `The body is longer than its declared size of ${limits.exact} bytes` })
        }
        yield chunk
      }
      if (limits.exact !== undefined && state.bytes !== limits.exact) {
        throw new BlobError("invalid_input", {
          message: `The body ended after ${state.bytes} bytes; its declared size is ${limits.exact}`
        })
      }
    }
  }
  return { iterable, state }
}

/** Cuts a byte stream into parts of `partSize` (the last one shorter), numbered from 1. */
async function* partsOf(source: AsyncIterable<Uint8Array>, partSize: number) {
  let buffer: Array<Uint8Array> = []
  let buffered = 0
  let partNumber = 1
  for await (const chunk of source) {
    let offset = 0
    while (offset < chunk.length) {
      const take = Math.min(partSize - buffered, chunk.length - offset)
      buffer.push(chunk.subarray(offset, offset + take))
      buffered += take
      offset += take
      if (buffered === partSize) {
        yield { partNumber: partNumber++, bytes: concat(buffer, buffered) }
        buffer = []
        buffered = 0
      }
    }
  }
  if (buffered > 0 || partNumber === 1) yield { partNumber, bytes: concat(buffer, buffered) }
}

const readOnlyRefusal = (what: string) =>
  new BlobError("forbidden", {
    message: `${what} is not allowed with this bucket token`,
    cause: new Error("the bucket token is read-only (access=readonly)")
  })

const requirePath = (path: unknown): Effect.Effect<string, BlobError> => {
  const checked = checkPath(path)
  return typeof checked === "string" ? Effect.succeed(checked) : Effect.fail(checked)
}

// --- the implementation --------------------------------------------------------------------------------

/** Builds a bucket client. Synchronous; `close` releases it. Throws TypeError for bad options. */
export const makeBucketUnsafe = (options: BucketOptions): BucketApi => {
  const token: BlobToken = parseBlobToken(options.token)
  const policy = retryPolicy(options.retry)
  const multipartThreshold = parseSize(options.multipartThreshold ?? 100 * MiB, "multipartThreshold")
  const partSize = parseSize(options.partSize ?? 8 * MiB, "partSize")
  if (partSize < 5 * MiB) throw new TypeError("partSize must be at least 5 MiB (the S3 minimum)")
  const partConcurrency = options.partConcurrency ?? 4
  if (!Number.isInteger(partConcurrency) || partConcurrency < 1) throw new TypeError("partConcurrency must be an integer >= 1")
  const maxSinglePut = parseSize(options.maxSinglePut ?? 5 * 1024 * MiB, "maxSinglePut")
  const refreshBeforeMs = Duration.toMillis(Duration.fromInputUnsafe(options.refreshBeforeExpiry ?? "5 minutes"))
  const mintBackoffThreshold = options.mintBackoffThreshold ?? 10
  if (!Number.isFinite(mintBackoffThreshold) || mintBackoffThreshold < 0) {
    throw new TypeError("mintBackoffThreshold must be a number of seconds >= 0")
  }
  const credentialOptions = { refreshBeforeMs, mintBackoffThreshold, retry: policy }
  const Bucket = token.bucket

  // one S3 client per credential set: static credentials, so the SDK never caches an expired one
  let session: { readonly credentials: StorageCredentials; readonly client: S3Client } | undefined
  const retired = new Set<S3Client>()
  const clientFor = (credentials: StorageCredentials): S3Client => {
    if (session?.credentials === credentials) return session.client
    const previous = session
    const client = new S3Client({
      endpoint: token.endpoint,
      region: token.region,
      forcePathStyle: token.forcePathStyle,
      maxAttempts: 1, // retries are ours (Schedule), and never for non-idempotent verbs
      // radosgw (and other stores) refuse aws-chunked uploads with trailing checksums: 411
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
      credentials: {
        accessKeyId: credentials.accessKeyId,
        secretAccessKey: credentials.secretAccessKey,
        ...(credentials.sessionToken === undefined ? {} : { sessionToken: credentials.sessionToken }),
        ...(credentials.expiresAt === undefined ? {} : { expiration: new Date(credentials.expiresAt) })
      }
    })
    session = { credentials, client }
    if (previous !== undefined) {
      // requests in flight keep their client; it is destroyed a minute later
      retired.add(previous.client)
      setTimeout(() => {
        retired.delete(previous.client)
        previous.client.destroy()
      }, 60_000).unref()
    }
    return client
  }

  const currentCredentials = credentialsFor(token, credentialOptions)

  /**
   * One storage call with the current credentials; storage refusing a temporary credential as expired
   * re-mints and retries once (when the request can be sent again). The second refusal surfaces.
   */
  const send = <A>(
    path: string | undefined,
    call: (client: S3Client, signal: AbortSignal) => Promise<A>,
    replayable = true
  ): Effect.Effect<A, BlobError> => {
    const attempt = (credentials: StorageCredentials) =>
      Effect.tryPromise({
        try: (signal) => call(clientFor(credentials), signal),
        catch: (error) => normalizeStorageError(error, { path })
      })
    return Effect.flatMap(currentCredentials, (credentials) =>
      attempt(credentials).pipe(
        Effect.catchIf(
          (error) => replayable && credentials.temporary && isCredentialRefusal(error),
          () =>
            Effect.suspend(() => {
              invalidateCredentials(token, credentials)
              return Effect.flatMap(currentCredentials, attempt)
            })
        )
      ))
  }
  const retried = withRetry(policy)

  const url = (path: string) =>
    token.forcePathStyle
      ? `${token.endpoint}/${Bucket}/${encodePath(path)}`
      : `${token.endpoint.replace("://", `://${Bucket}.`)}/${encodePath(path)}`

  const head = (path: string) =>
    retried(send(path, (client, signal) => client.send(new HeadObjectCommand({ Bucket, Key: path }), { abortSignal: signal })))
      .pipe(Effect.map((out): ObjectInfo => ({
        path,
        url: url(path),
        size: out.ContentLength ?? 0,
        etag: quoted(out.ETag),
        contentType: out.ContentType ?? "application/octet-stream",
        lastModified: out.LastModified,
        cacheControl: out.CacheControl,
        metadata: out.Metadata ?? {}
      })))

  const info = (path: string) => Effect.flatMap(requirePath(path), head)

  const exists = (path: string) =>
    info(path).pipe(
      Effect.as(true),
      Effect.catchIf(BlobError.hasCode("not_found"), () => Effect.succeed(false))
    )

  /** already_exists with the occupant's etag and size (when it can still be read). */
  const alreadyExists = (path: string, cause?: unknown) =>
    head(path).pipe(
      Effect.map((existing) =>
        new BlobError("already_exists", {
          message: `${path} already exists`,
          hint: "Pass allowOverwrite: true to replace it",
          etag: existing.etag,
          size: existing.size,
          cause
        })
      ),
      Effect.catch(() =>
        Effect.succeed(new BlobError("already_exists", { message: `${path} already exists`, cause }))
      ),
      Effect.flatMap(Effect.fail)
    )

  const conditionalFailure = (path: string, conditional: "create" | "match" | undefined) => (error: BlobError) => {
    const precondition = error.code === "conflict" ||
      (error.code === "request_failed" && error.status === 409)
    if (!precondition) return Effect.fail(error)
    if (conditional === "create") return alreadyExists(path, error)
    return Effect.fail(
      new BlobError("conflict", {
        message: `${path} changed since it was read`,
        hint: "Read it again and retry",
        cause: error
      })
    )
  }

  // --- put ---

  const putOnce = (
    path: string,
    body: { readonly bytes: Uint8Array } | { readonly stream: AsyncIterable<Uint8Array>; readonly length: number },
    headers: {
      readonly contentType: string
      readonly ifNoneMatch: boolean
      readonly ifMatch: string | undefined
      readonly metadata: Readonly<Record<string, string>> | undefined
      readonly cacheControl: string | undefined
    }
  ) => {
    const replayable = "bytes" in body
    const call = (client: S3Client, signal: AbortSignal) =>
      client.send(
        new PutObjectCommand({
          Bucket,
          Key: path,
          Body: "bytes" in body ? body.bytes : Readable.from(body.stream, { objectMode: false }),
          ContentLength: "bytes" in body ? body.bytes.length : body.length,
          ContentType: headers.contentType,
          ...(headers.ifNoneMatch ? { IfNoneMatch: "*" } : {}),
          ...(headers.ifMatch === undefined ? {} : { IfMatch: bare(headers.ifMatch) }),
          ...(headers.metadata === undefined ? {} : { Metadata: { ...headers.metadata } }),
          ...(headers.cacheControl === undefined ? {} : { CacheControl: headers.cacheControl })
        }),
        { abortSignal: signal }
      )
    const conditional = headers.ifNoneMatch || headers.ifMatch !== undefined
    const once = send(path, call, replayable)
    // idempotent only when unconditional and replayable
    return (replayable && !conditional ? retried(once) : once).pipe(
      Effect.catch((error) =>
        conditional && "bytes" in body && error.code === "request_failed" && error.status === 502
          ? settleConditional(path, body.bytes, headers, error)
          : Effect.fail(error)
      ),
      Effect.catch(conditionalFailure(path, headers.ifNoneMatch ? "create" : headers.ifMatch === undefined ? undefined : "match"))
    )
  }

  /**
   * A conditional PUT answered 5xx: radosgw answers concurrent If-Match writers that lost the race with
   * 500 (ECANCELED) instead of 412. Look at what is stored now: our own write (the write id in the
   * metadata, else the body's MD5 as etag) is a success; a different object means we lost (conflict /
   * already_exists); an unchanged one leaves the error as it was.
   */
  const settleConditional = (
    path: string,
    bytes: Uint8Array,
    headers: { readonly ifNoneMatch: boolean; readonly ifMatch: string | undefined; readonly metadata: Readonly<Record<string, string>> | undefined },
    error: BlobError
  ) =>
    head(path).pipe(
      Effect.map((current) => current as ObjectInfo | undefined),
      Effect.catchIf(BlobError.hasCode("not_found"), () => Effect.succeed(undefined)),
      Effect.catch(() => Effect.fail(error)),
      Effect.flatMap((current) => {
        const writeId = headers.metadata?.[WRITE_ID]
        const ours = current !== undefined && (writeId !== undefined
          ? current.metadata[WRITE_ID] === writeId
          : bare(current.etag) === createHash("md5").update(bytes).digest("hex"))
        if (ours) return Effect.succeed({ ETag: current.etag })
        const changed = headers.ifNoneMatch
          ? current !== undefined
          : current === undefined || bare(current.etag) !== bare(headers.ifMatch ?? "")
        return Effect.fail(changed ? new BlobError("conflict", { cause: error }) : error)
      })
    )

  const abortUpload = (path: string, uploadId: string) =>
    retried(send(path, (client, signal) =>
      client.send(new AbortMultipartUploadCommand({ Bucket, Key: path, UploadId: uploadId }), { abortSignal: signal })
    )).pipe(Effect.ignore)

  const complete = (
    path: string,
    uploadId: string,
    parts: ReadonlyArray<{ readonly partNumber: number; readonly etag: string }>,
    conditions: { readonly ifNoneMatch: boolean; readonly ifMatch: string | undefined }
  ) =>
    send(path, (client, signal) =>
      client.send(
        new CompleteMultipartUploadCommand({
          Bucket,
          Key: path,
          UploadId: uploadId,
          ...(conditions.ifNoneMatch ? { IfNoneMatch: "*" } : {}),
          ...(conditions.ifMatch === undefined ? {} : { IfMatch: bare(conditions.ifMatch) }),
          MultipartUpload: {
            Parts: [...parts].sort((a, b) => a.partNumber - b.partNumber).map((p) => ({
              PartNumber: p.partNumber,
              ETag: p.etag
            }))
          }
        }),
        { abortSignal: signal }
      )).pipe(
        Effect.catch(conditionalFailure(path, conditions.ifNoneMatch ? "create" : conditions.ifMatch === undefined ? undefined : "match")),
        // radosgw answers CompleteMultipartUpload with an empty ETag: ask HeadObject
        Effect.flatMap((out) =>
          out.ETag !== undefined && out.ETag !== ""
            ? Effect.succeed({ etag: quoted(out.ETag) })
            : Effect.map(head(path), (i) => ({ etag: i.etag }))
        )
      )

  const putMultipart = (
    path: string,
    source: AsyncIterable<Uint8Array>,
    headers: {
      readonly contentType: string
      readonly ifNoneMatch: boolean
      readonly ifMatch: string | undefined
      readonly metadata: Readonly<Record<string, string>> | undefined
      readonly cacheControl: string | undefined
    }
  ) =>
    Effect.gen(function*() {
      // stores that ignore conditions on CompleteMultipartUpload (radosgw) still get them checked up front
      if (headers.ifNoneMatch && (yield* exists(path))) return yield* alreadyExists(path)
      if (headers.ifMatch !== undefined) {
        const current = yield* head(path).pipe(
          Effect.catchIf(BlobError.hasCode("not_found"), () => Effect.succeed(undefined))
        )
        if (current === undefined || bare(current.etag) !== bare(headers.ifMatch)) {
          return yield* conditionalFailure(path, "match")(new BlobError("conflict"))
        }
      }
      const created = yield* send(path, (client, signal) =>
        client.send(
          new CreateMultipartUploadCommand({
            Bucket,
            Key: path,
            ContentType: headers.contentType,
            ...(headers.metadata === undefined ? {} : { Metadata: { ...headers.metadata } }),
            ...(headers.cacheControl === undefined ? {} : { CacheControl: headers.cacheControl })
          }),
          { abortSignal: signal }
        ))
      const uploadId = created.UploadId
      if (uploadId === undefined) {
        return yield* new BlobError("request_failed", { status: 502, message: "Storage started no multipart upload" })
      }
      const iterator = partsOf(source, partSize)[Symbol.asyncIterator]()
      const done: Array<{ partNumber: number; etag: string }> = []
      let size = 0
      const nextPart = Effect.tryPromise({
        try: () => iterator.next(),
        catch: (error) => normalizeStorageError(error, { path })
      })
      const worker = Effect.gen(function*() {
        while (true) {
          const next = yield* nextPart
          if (next.done === true) return
          const { partNumber, bytes } = next.value
          size += bytes.length
          const out = yield* retried(send(path, (client, signal) =>
            client.send(
              new UploadPartCommand({
                Bucket,
                Key: path,
                UploadId: uploadId,
                PartNumber: partNumber,
                Body: bytes,
                ContentLength: bytes.length
              }),
              { abortSignal: signal }
            )))
          done.push({ partNumber, etag: out.ETag ?? "" })
        }
      })
      const result = yield* Effect.all(Array.from({ length: partConcurrency }, () => worker), { concurrency: "unbounded" }).pipe(
        Effect.flatMap(() => complete(path, uploadId, done, headers)),
        Effect.onError(() => abortUpload(path, uploadId))
      )
      return { etag: result.etag, size }
    })

  const put = Effect.fn("Bucket.put")(function*(path: string, body: PutBody, options: PutOptions = {}) {
    yield* requirePath(path)
    if (token.readOnly) return yield* readOnlyRefusal("Writing")
    if (options.metadata !== undefined) {
      const problem = metadataProblem(options.metadata)
      if (problem !== undefined) return yield* new BlobError("invalid_input", { message: `Invalid metadata: ${problem}` })
    }
    const declaredSize = parseOptionalSize(options.size, "size")
    const maxSize = parseOptionalSize(options.maxSize, "maxSize")
    const multipart = options.multipart ?? "auto"
    const prepared = prepareBody(body)
    if (BlobError.is(prepared)) return yield* prepared
    const contentType = options.contentType ?? prepared.typeHint ??
      (typeof body === "string" && contentTypeFromPath(path) === "application/octet-stream"
        ? "text/plain; charset=utf-8"
        : contentTypeFromPath(path))
    if (options.contentTypes !== undefined) {
      const patterns = checkContentTypePatterns(options.contentTypes)
      if (BlobError.is(patterns)) return yield* patterns
      const refusal = contentTypeRefusal(contentType, patterns)
      if (refusal !== undefined) return yield* refusal
    }
    const headers = {
      contentType,
      ifNoneMatch: options.ifUnchanged === undefined && options.allowOverwrite !== true,
      ifMatch: options.ifUnchanged,
      metadata: options.metadata,
      cacheControl: options.cacheControl
    }
    const sniff = options.sniff !== false

    // a body of known bytes
    let bytes = prepared.kind === "bytes" ? prepared.bytes : undefined
    let stream: AsyncIterable<Uint8Array> | undefined
    let length = prepared.kind === "bytes" ? prepared.bytes.length : prepared.length ?? declaredSize
    if (prepared.kind === "stream") {
      if (length === undefined && maxSize === undefined) {
        return yield* new BlobError("length_required", { message: "The stream's length is unknown" })
      }
      if (length !== undefined && maxSize !== undefined && length > maxSize) return yield* tooLarge(length, maxSize)
      if (declaredSize !== undefined && prepared.length !== undefined && declaredSize !== prepared.length) {
        return yield* new BlobError("invalid_input", {
          message: `The declared size ${declaredSize} differs from the body's length ${prepared.length}`
        })
      }
      const peeked = yield* Effect.tryPromise({
        try: () => peek(prepared.source, SNIFF_BYTES),
        catch: (error) => BlobError.is(error) ? error : new BlobError("invalid_input", { message: "The body stream failed", cause: error })
      })
      if (sniff) {
        const refusal = sniffRefusal(contentType, peeked.leading)
        if (refusal !== undefined) return yield* refusal
      }
      if (peeked.whole !== undefined) {
        bytes = peeked.whole // the whole body fit in the peek: treat it as bytes
      } else {
        stream = peeked.rest
      }
    }
    if (bytes !== undefined) {
      length = bytes.length
      if (declaredSize !== undefined && declaredSize !== bytes.length) {
        return yield* new BlobError("invalid_input", {
          message: `The declared size ${declaredSize} differs from the body's length ${bytes.length}`
        })
      }
      if (maxSize !== undefined && bytes.length > maxSize) return yield* tooLarge(bytes.length, maxSize)
      if (sniff && prepared.kind === "bytes") {
        const refusal = sniffRefusal(contentType, bytes.subarray(0, SNIFF_BYTES))
        if (refusal !== undefined) return yield* refusal
      }
    }
    const useMultipart = multipart === true ||
      (multipart === "auto" && (length === undefined ? (maxSize ?? 0) > multipartThreshold : length > multipartThreshold))
    if (!useMultipart && length !== undefined && length > maxSinglePut) {
      return yield* tooLarge(length, maxSinglePut, "One PUT carries at most this much: allow multipart")
    }
    let result: { etag: string; size: number }
    if (useMultipart) {
      const source = bytes !== undefined
        ? (async function*() {
          yield bytes
        })()
        : counted(stream!, { max: maxSize, exact: length }).iterable
      result = yield* putMultipart(path, source, headers)
    } else if (bytes !== undefined) {
      const out = yield* putOnce(path, { bytes }, headers)
      result = { etag: quoted(out.ETag), size: bytes.length }
    } else if (length !== undefined) {
      const out = yield* putOnce(path, { stream: counted(stream!, { max: maxSize, exact: length }).iterable, length }, headers)
      result = { etag: quoted(out.ETag), size: length }
    } else {
      // unknown length, under a maxSize small enough for one PUT: buffer it
      const all = yield* Effect.tryPromise({
        try: async () => {
          const chunks: Array<Uint8Array> = []
          let total = 0
          for await (const chunk of counted(stream!, { max: maxSize }).iterable) {
            chunks.push(chunk)
            total += chunk.length
          }
          return concat(chunks, total)
        },
        catch: (error) => BlobError.is(error) ? error : new BlobError("invalid_input", { message: "The body stream failed", cause: error })
      })
      const out = yield* putOnce(path, { bytes: all }, headers)
      result = { etag: quoted(out.ETag), size: all.length }
    }
    return { path, url: url(path), etag: result.etag, size: result.size, contentType } satisfies PutResult
  })

  // --- get ---

  const objectInfo = (path: string, out: {
    ContentLength?: number | undefined
    ETag?: string | undefined
    ContentType?: string | undefined
    LastModified?: Date | undefined
    CacheControl?: string | undefined
    Metadata?: Record<string, string> | undefined
  }): ObjectInfo => ({
    path,
    url: url(path),
    size: out.ContentLength ?? 0,
    etag: quoted(out.ETag),
    contentType: out.ContentType ?? "application/octet-stream",
    lastModified: out.LastModified,
    cacheControl: out.CacheControl,
    metadata: out.Metadata ?? {}
  })

  const get = Effect.fn("Bucket.get")(function*(path: string) {
    yield* requirePath(path)
    const out = yield* retried(send(path, (client, signal) =>
      client.send(new GetObjectCommand({ Bucket, Key: path }), { abortSignal: signal })
    ))
    const body = out.Body?.transformToWebStream() as ReadableStream<Uint8Array> | undefined
    return { ...objectInfo(path, out), body: body ?? new Blob([]).stream() } satisfies GetResult
  })

  const getBytes = (path: string) =>
    Effect.flatMap(requirePath(path), () =>
      retried(send(path, async (client, signal) => {
        const out = await client.send(new GetObjectCommand({ Bucket, Key: path }), { abortSignal: signal })
        return out.Body === undefined ? new Uint8Array(0) : await out.Body.transformToByteArray()
      })))

  const getText = (path: string) => Effect.map(getBytes(path), (bytes) => new TextDecoder().decode(bytes))

  // --- copy, move ---

  const copyObject = (from: string, to: string, options: CopyOptions) =>
    Effect.gen(function*() {
      yield* requirePath(from)
      yield* requirePath(to)
      if (token.readOnly) return yield* readOnlyRefusal("Copying")
      if (options.allowOverwrite !== true && (yield* exists(to))) return yield* alreadyExists(to)
      yield* retried(send(from, (client, signal) =>
        client.send(
          new CopyObjectCommand({
            Bucket,
            Key: to,
            CopySource: `${Bucket}/${encodePath(from)}`,
            ...(options.contentType === undefined
              ? {}
              : { ContentType: options.contentType, MetadataDirective: "REPLACE" as const })
          }),
          { abortSignal: signal }
        )))
      return yield* head(to)
    })

  const copy = Effect.fn("Bucket.copy")(function*(from: string, to: string, options: CopyOptions = {}) {
    return yield* copyObject(from, to, options)
  })

  const deleteOne = (path: string) =>
    retried(send(path, (client, signal) =>
      client.send(new DeleteObjectCommand({ Bucket, Key: path }), { abortSignal: signal })
    ))

  const move = Effect.fn("Bucket.move")(function*(from: string, to: string, options: CopyOptions = {}) {
    if (from === to) return yield* info(from)
    const copied = yield* copyObject(from, to, options)
    yield* deleteOne(from).pipe(
      Effect.mapError((cause) =>
        new BlobError("move_left_a_copy", {
          message: `${from} was copied to ${to} but could not be deleted`,
          hint: "The destination is kept; delete the source again",
          cause
        })
      )
    )
    return copied
  })

  // --- del ---

  const deleteMany = (paths: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      const failed: Array<string> = []
      let deleted = 0
      for (let i = 0; i < paths.length; i += 1000) {
        const batch = paths.slice(i, i + 1000)
        const out = yield* retried(send(undefined, (client, signal) =>
          client.send(
            new DeleteObjectsCommand({
              Bucket,
              Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true }
            }),
            { abortSignal: signal }
          ))).pipe(
            Effect.map((o) => o.Errors ?? []),
            Effect.catch(() => Effect.succeed(batch.map((Key) => ({ Key }))))
          )
        const errors = out.map((e) => e.Key).filter((k): k is string => k !== undefined)
        failed.push(...errors)
        deleted += batch.length - errors.length
      }
      return { deleted, failed }
    })

  const partialDelete = (failed: ReadonlyArray<string>, deleted: number) =>
    new BlobError("partial_delete", {
      message: `${failed.length} of ${failed.length + deleted} paths were not deleted`,
      failed
    })

  const del = Effect.fn("Bucket.del")(function*(target: DeleteTarget) {
    if (token.readOnly) return yield* readOnlyRefusal("Deleting")
    if (typeof target === "string") {
      yield* requirePath(target)
      yield* deleteOne(target)
      return { deleted: 1 } satisfies DeleteResult
    }
    if (Array.isArray(target)) {
      const paths = target as ReadonlyArray<unknown>
      for (const p of paths) yield* requirePath(p)
      const { deleted, failed } = yield* deleteMany(paths as ReadonlyArray<string>)
      if (failed.length > 0) return yield* partialDelete(failed, deleted)
      return { deleted } satisfies DeleteResult
    }
    if (typeof target === "object" && target !== null && typeof (target as { prefix?: unknown }).prefix === "string") {
      const { prefix, everything } = target as { prefix: string; everything?: boolean }
      if (prefix === "" && everything !== true) {
        return yield* new BlobError("invalid_input", {
          message: "An empty prefix means every object in the bucket",
          hint: "Pass { prefix: \"\", everything: true } to delete everything"
        })
      }
      let cursor: string | undefined
      let deleted = 0
      const failed: Array<string> = []
      do {
        const page = yield* list({ prefix, cursor, limit: 1000 })
        const result = yield* deleteMany(page.objects.map((o) => o.path))
        deleted += result.deleted
        failed.push(...result.failed)
        cursor = page.cursor
      } while (cursor !== undefined)
      if (failed.length > 0) return yield* partialDelete(failed, deleted)
      return { deleted } satisfies DeleteResult
    }
    return yield* new BlobError("invalid_input", {
      message: "del takes a path, an array of paths, or { prefix }"
    })
  })

  // --- list ---

  const list = (options: ListOptions = {}) =>
    Effect.gen(function*() {
      const limit = options.limit ?? 1000
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
        return yield* new BlobError("invalid_input", { message: "limit must be an integer from 1 to 1000" })
      }
      const out = yield* retried(send(undefined, (client, signal) =>
        client.send(
          new ListObjectsV2Command({
            Bucket,
            MaxKeys: limit,
            ...(options.prefix === undefined || options.prefix === "" ? {} : { Prefix: options.prefix }),
            ...(options.cursor === undefined ? {} : { ContinuationToken: options.cursor }),
            ...(options.mode === "folded" ? { Delimiter: "/" } : {})
          }),
          { abortSignal: signal }
        )))
      const hasMore = out.IsTruncated === true && out.NextContinuationToken !== undefined
      return {
        objects: (out.Contents ?? []).map((o) => ({
          path: o.Key ?? "",
          size: o.Size ?? 0,
          etag: quoted(o.ETag),
          lastModified: o.LastModified
        })),
        folders: (out.CommonPrefixes ?? []).map((p) => p.Prefix ?? "").filter((p) => p !== ""),
        cursor: hasMore ? out.NextContinuationToken : undefined,
        hasMore
      } satisfies ListResult
    })

  // --- updateJson ---

  const updateJson = <A>(
    path: string,
    update: (current: A | undefined) => A | Effect.Effect<A, BlobError> | Promise<A>,
    options: UpdateJsonOptions = {}
  ): Effect.Effect<A, BlobError> =>
    Effect.gen(function*() {
      yield* requirePath(path)
      if (token.readOnly) return yield* readOnlyRefusal("Writing")
      const maxAttempts = options.maxAttempts ?? 6
      if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw new TypeError("maxAttempts must be an integer >= 1")
      for (let attempt = 1; attempt <= maxAttempts; attempt++) {
        const current = yield* retried(send(path, async (client, signal) => {
          const out = await client.send(new GetObjectCommand({ Bucket, Key: path }), { abortSignal: signal })
          return { text: out.Body === undefined ? "" : await out.Body.transformToString(), etag: out.ETag ?? "" }
        })).pipe(Effect.catchIf(BlobError.hasCode("not_found"), () => Effect.succeed(undefined)))
        let value: A | undefined
        if (current !== undefined) {
          try {
            value = JSON.parse(current.text) as A
          } catch (cause) {
            return yield* new BlobError("invalid_input", { message: `${path} does not hold JSON`, cause })
          }
        }
        const produced = update(value)
        const next: A = Effect.isEffect(produced)
          ? yield* (produced as Effect.Effect<A, BlobError>)
          : produced instanceof Promise
          ? yield* Effect.tryPromise({
            try: () => produced,
            catch: (cause) => BlobError.is(cause) ? cause : new BlobError("request_failed", { message: "The update function failed", cause })
          })
          : produced as A
        const bytes = encoder.encode(JSON.stringify(next))
        const written = yield* putOnce(path, { bytes }, {
          contentType: "application/json",
          ifNoneMatch: current === undefined,
          ifMatch: current?.etag,
          metadata: { [WRITE_ID]: randomUUID() },
          cacheControl: undefined
        }).pipe(
          Effect.as(true),
          Effect.catchIf(BlobError.hasCode("conflict", "already_exists"), () => Effect.succeed(false))
        )
        if (written) return next
        if (attempt < maxAttempts) {
          // another writer won this round: back off a little (jittered) before reading again
          const jitter = yield* Random.nextBetween(0, 1)
          yield* Effect.sleep(Duration.millis(Math.round((5 + jitter * 20) * 2 ** Math.min(attempt, 5))))
        }
      }
      return yield* new BlobError("conflict", {
        message: `${path} kept changing: gave up after ${maxAttempts} attempts`,
        hint: "Retry later, or raise maxAttempts"
      })
    }).pipe(Effect.withSpan("Bucket.updateJson"))

  // --- signed URLs ---

  const lifetime = (credentials: StorageCredentials, wanted: number, now: number) => {
    const left = credentials.expiresAt === undefined ? Infinity : Math.floor((credentials.expiresAt - now) / 1000)
    return Math.max(1, Math.min(wanted, left, 7 * 24 * 3600))
  }

  const presign = (
    path: string,
    command: GetObjectCommand | PutObjectCommand | UploadPartCommand,
    expiresIn: number,
    signed: ReadonlyArray<string>
  ) =>
    Effect.gen(function*() {
      const credentials = yield* currentCredentials
      const now = yield* Clock.currentTimeMillis
      const seconds = lifetime(credentials, expiresIn, now)
      const signedUrl = yield* Effect.tryPromise({
        try: () => getSignedUrl(clientFor(credentials), command as Parameters<typeof getSignedUrl>[1], { expiresIn: seconds, signableHeaders: new Set(signed) }),
        catch: (error) => normalizeStorageError(error, { path })
      })
      return { url: signedUrl, expiresAt: now + seconds * 1000 }
    })

  const signedReadUrl = Effect.fn("Bucket.signedReadUrl")(function*(path: string, options: SignedReadOptions = {}) {
    yield* requirePath(path)
    const disposition = options.download === undefined || options.download === false
      ? undefined
      : options.download === true
      ? "attachment"
      : `attachment; filename="${options.download.replace(/["\\\r\n]/g, "_")}"`
    const { url: signed } = yield* presign(
      path,
      new GetObjectCommand({
        Bucket,
        Key: path,
        ...(disposition === undefined ? {} : { ResponseContentDisposition: disposition })
      }),
      options.expiresIn ?? 3600,
      []
    )
    return signed
  })

  const uploadHeaders = (contentType: string, allowOverwrite: boolean) => ({
    "content-type": contentType,
    ...(allowOverwrite ? {} : { "if-none-match": "*" })
  })

  const signedUploadUrl = Effect.fn("Bucket.signedUploadUrl")(function*(path: string, options: SignedUploadOptions) {
    yield* requirePath(path)
    if (token.readOnly) return yield* readOnlyRefusal("An upload URL")
    const allowOverwrite = options.allowOverwrite === true
    const { url: signed, expiresAt } = yield* presign(
      path,
      new PutObjectCommand({
        Bucket,
        Key: path,
        ContentType: options.contentType,
        ContentLength: options.size,
        ...(allowOverwrite ? {} : { IfNoneMatch: "*" })
      }),
      options.expiresIn ?? 600,
      ["content-type", "content-length", ...(allowOverwrite ? [] : ["if-none-match"])]
    )
    return {
      url: signed,
      method: "PUT",
      headers: uploadHeaders(options.contentType, allowOverwrite),
      expiresAt
    } satisfies SignedUpload
  })

  const signedMultipartUpload = Effect.fn("Bucket.signedMultipartUpload")(function*(
    path: string,
    options: SignedUploadOptions & { readonly partSize?: number | undefined }
  ) {
    yield* requirePath(path)
    if (token.readOnly) return yield* readOnlyRefusal("An upload URL")
    const size = options.size
    const chosen = Math.max(options.partSize ?? partSize, 5 * MiB, Math.ceil(size / 10_000))
    const created = yield* send(path, (client, signal) =>
      client.send(new CreateMultipartUploadCommand({ Bucket, Key: path, ContentType: options.contentType }), {
        abortSignal: signal
      }))
    const uploadId = created.UploadId
    if (uploadId === undefined) {
      return yield* new BlobError("request_failed", { status: 502, message: "Storage started no multipart upload" })
    }
    const count = Math.max(1, Math.ceil(size / chosen))
    const signed = yield* signParts(
      path,
      uploadId,
      Array.from({ length: count }, (_, i) => ({ partNumber: i + 1, size: i + 1 < count ? chosen : size - chosen * (count - 1) })),
      options.expiresIn ?? 3600
    ).pipe(Effect.onError(() => abortUpload(path, uploadId)))
    return {
      uploadId,
      partSize: chosen,
      parts: signed.parts,
      headers: {},
      expiresAt: signed.expiresAt
    } satisfies SignedMultipartUpload
  })

  /** Presigned UploadPart PUTs (content length signed per part). */
  const signParts = (
    path: string,
    uploadId: string,
    parts: ReadonlyArray<{ readonly partNumber: number; readonly size: number }>,
    expiresIn: number
  ) =>
    Effect.forEach(parts, ({ partNumber, size: partBytes }) =>
      presign(
        path,
        new UploadPartCommand({ Bucket, Key: path, UploadId: uploadId, PartNumber: partNumber, ContentLength: partBytes }),
        expiresIn,
        ["content-length"]
      ).pipe(Effect.map((p) => ({ partNumber, url: p.url, size: partBytes, expiresAt: p.expiresAt }))), { concurrency: 8 }).pipe(
        Effect.map((signed) => ({
          parts: signed.map(({ partNumber, url: u, size: s }): PresignedPart => ({ partNumber, url: u, size: s })),
          expiresAt: signed.length === 0 ? Date.now() + expiresIn * 1000 : Math.min(...signed.map((p) => p.expiresAt))
        }))
      )

  const signedUploadParts = Effect.fn("Bucket.signedUploadParts")(function*(
    path: string,
    uploadId: string,
    parts: ReadonlyArray<{ readonly partNumber: number; readonly size: number }>,
    options: { readonly expiresIn?: number | undefined } = {}
  ) {
    yield* requirePath(path)
    if (token.readOnly) return yield* readOnlyRefusal("An upload URL")
    return yield* signParts(path, uploadId, parts, options.expiresIn ?? 3600)
  })

  const listParts = Effect.fn("Bucket.listParts")(function*(path: string, uploadId: string) {
    yield* requirePath(path)
    const landed: Array<LandedPart> = []
    let marker: string | undefined
    while (true) {
      const page = yield* retried(send(path, (client, signal) =>
        client.send(
          new ListPartsCommand({ Bucket, Key: path, UploadId: uploadId, ...(marker === undefined ? {} : { PartNumberMarker: marker }) }),
          { abortSignal: signal }
        )))
      for (const part of page.Parts ?? []) {
        if (part.PartNumber === undefined || part.ETag === undefined) continue
        landed.push({ partNumber: part.PartNumber, etag: quoted(part.ETag), size: part.Size ?? 0 })
      }
      if (page.IsTruncated !== true || page.NextPartNumberMarker === undefined) break
      marker = page.NextPartNumberMarker
    }
    return landed
  })

  const completeMultipartUpload = Effect.fn("Bucket.completeMultipartUpload")(function*(
    path: string,
    uploadId: string,
    parts: ReadonlyArray<{ readonly partNumber: number; readonly etag: string }>,
    options: { readonly allowOverwrite?: boolean | undefined } = {}
  ) {
    yield* requirePath(path)
    const ifNoneMatch = options.allowOverwrite !== true
    if (ifNoneMatch && (yield* exists(path))) {
      yield* abortUpload(path, uploadId)
      return yield* alreadyExists(path)
    }
    return yield* complete(path, uploadId, parts, { ifNoneMatch, ifMatch: undefined })
  })

  const configureCors = Effect.fn("Bucket.configureCors")(function*(options: CorsOptions = {}) {
    yield* retried(send(undefined, (client, signal) =>
      client.send(
        new PutBucketCorsCommand({
          Bucket,
          CORSConfiguration: {
            CORSRules: [{
              AllowedOrigins: [...(options.origins ?? ["*"])],
              AllowedMethods: ["GET", "HEAD", "PUT"],
              AllowedHeaders: ["*"],
              ExposeHeaders: ["ETag"],
              MaxAgeSeconds: options.maxAgeSeconds ?? 3600
            }]
          }
        }),
        { abortSignal: signal }
      )))
  })

  const close = Effect.sync(() => {
    session?.client.destroy()
    session = undefined
    for (const client of retired) client.destroy()
    retired.clear()
  })

  return {
    name: Bucket,
    endpoint: token.endpoint,
    url,
    put: (path, body, options) => put(path, body, options),
    get,
    getBytes,
    getText,
    info,
    exists,
    copy: (from, to, options) => copy(from, to, options),
    move: (from, to, options) => move(from, to, options),
    del,
    list,
    updateJson,
    signedReadUrl: (path, options) => signedReadUrl(path, options),
    signedUploadUrl,
    signedMultipartUpload,
    completeMultipartUpload: (path, uploadId, parts, options) => completeMultipartUpload(path, uploadId, parts, options),
    abortMultipartUpload: (path, uploadId) => abortUpload(path, uploadId),
    listParts,
    signedUploadParts: (path, uploadId, parts, options) => signedUploadParts(path, uploadId, parts, options),
    configureCors: (options) => configureCors(options),
    close
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
          parseBlobToken(token)
        } catch (error) {
          return yield* Effect.fail(new Config.ConfigError(new ConfigProvider.SourceError({ message: (error as Error).message })))
        }
        return yield* Bucket.make({ ...options, token })
      })
    )
}

// --- the Promise API -------------------------------------------------------------------------------------

type Promised<F> = F extends (...args: infer A) => Effect.Effect<infer R, infer _E> ? (...args: A) => Promise<R> : F

/** The same verbs as {@link BucketApi}, returning Promises that reject with BlobError. */
export type PromiseBucket =
  & { readonly [K in Exclude<keyof BucketApi, "close" | "updateJson" | "name" | "endpoint" | "url">]: Promised<BucketApi[K]> }
  & {
    readonly name: string
    readonly endpoint: string
    url(path: string): string
    updateJson<A>(
      path: string,
      update: (current: A | undefined) => A | Promise<A>,
      options?: UpdateJsonOptions
    ): Promise<A>
    /** the Effect form of the same bucket */
    readonly effect: BucketApi
    close(): Promise<void>
  }

/**
 * A bucket for Promise code. `options.token` defaults to `process.env.SVC_BLOB_TOKEN`; a missing or
 * malformed token throws TypeError here.
 */
export const createBucket = (options: Partial<BucketOptions> = {}): PromiseBucket => {
  const token = options.token ?? process.env["SVC_BLOB_TOKEN"]
  const api = makeBucketUnsafe({ ...options, token: token ?? "" })
  const run = <A>(effect: Effect.Effect<A, BlobError>) => Effect.runPromise(effect)
  return {
    name: api.name,
    endpoint: api.endpoint,
    url: api.url,
    effect: api,
    put: (...args) => run(api.put(...args)),
    get: (...args) => run(api.get(...args)),
    getBytes: (...args) => run(api.getBytes(...args)),
    getText: (...args) => run(api.getText(...args)),
    info: (...args) => run(api.info(...args)),
    exists: (...args) => run(api.exists(...args)),
    copy: (...args) => run(api.copy(...args)),
    move: (...args) => run(api.move(...args)),
    del: (...args) => run(api.del(...args)),
    list: (...args) => run(api.list(...args)),
    updateJson: (path, update, opts) => run(api.updateJson(path, update, opts)),
    signedReadUrl: (...args) => run(api.signedReadUrl(...args)),
    signedUploadUrl: (...args) => run(api.signedUploadUrl(...args)),
    signedMultipartUpload: (...args) => run(api.signedMultipartUpload(...args)),
    completeMultipartUpload: (...args) => run(api.completeMultipartUpload(...args)),
    abortMultipartUpload: (...args) => run(api.abortMultipartUpload(...args)),
    listParts: (...args) => run(api.listParts(...args)),
    signedUploadParts: (...args) => run(api.signedUploadParts(...args)),
    configureCors: (...args) => run(api.configureCors(...args)),
    close: () => run(api.close)
  }
}
