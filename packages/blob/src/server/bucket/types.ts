/**
 * The Bucket's public shapes: what the verbs take (`PutBody`, options) and answer (results), the
 * `BucketApi` interface every layer implements (S3 in `Bucket.layer`, memory in `Bucket.layerMemory`), and
 * `BucketOptions`.
 *
 * @module
 */
import type { Duration, Effect, Redacted } from "effect"
import type { BlobError } from "../../shared/BlobError.ts"
import type { PresignedPart } from "../../shared/protocol.ts"
import type { SizeInput } from "../../shared/size.ts"
import type { RetryOptions } from "../retry.ts"

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
  /** allowed content types (type/subtype, image/*, video/*, audio/*; a wildcard does not admit active content such as image/svg+xml, only its exact name does) */
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
  /**
   * a storage call that sends and receives nothing for this long fails as `request_failed` (default
   * 60 seconds; connecting has at most 10 of them): a stalled store otherwise held every call, and the
   * request behind it, for ever
   */
  readonly storageTimeout?: Duration.Input | undefined
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
