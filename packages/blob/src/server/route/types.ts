/**
 * Upload routes' options and the arguments of their hooks.
 *
 * @module
 */
import type { Redacted } from "effect"
import type { BlobError } from "../../shared/BlobError.ts"
import type { SizeInput } from "../../shared/size.ts"
import type { BucketApi, PromiseBucket } from "../Bucket.ts"

export interface BeforeUploadArgs {
  readonly request: Request
  /** the path the client asked for */
  readonly pathname: string
  readonly contentType: string
  readonly size: number
  readonly clientPayload: string | null
  readonly route: string
}

/** What onBeforeUpload may decide (every field optional; `true` is `{}`); `false` refuses the upload (unauthorized). */
export interface BeforeUploadResult {
  /** store under this path instead of the requested one */
  readonly path?: string | undefined
  /** narrows the route's contentTypes */
  readonly contentTypes?: ReadonlyArray<string> | undefined
  readonly maxSize?: SizeInput | undefined
  readonly allowOverwrite?: boolean | undefined
  /** carried (signed) in the completion token and handed to onUploadComplete */
  readonly tokenPayload?: string | undefined
}

/**
 * What `onUploadComplete` is handed. It runs once per upload: concurrent and repeated completions of one
 * upload, on any instance sharing the bucket, answer the first one's answer without running it again.
 */
export interface UploadCompleteArgs {
  readonly request: Request
  readonly route: string
  readonly path: string
  readonly size: number
  readonly contentType: string
  readonly etag: string
  readonly tokenPayload: string | undefined
}

export type MaybePromise<A> = A | Promise<A>

export interface UploadRouteOptions {
  readonly bucket: BucketApi | PromiseBucket
  /** required: the application's own check */
  /** `true` or an object allows the upload; `false`, and anything else (`null`, a bare `return`), refuses it (401). */
  readonly onBeforeUpload: (args: BeforeUploadArgs) => MaybePromise<BeforeUploadResult | boolean>
  readonly contentTypes?: ReadonlyArray<string> | undefined
  readonly maxSize?: SizeInput | undefined
  readonly allowOverwrite?: boolean | undefined
  readonly onUploadComplete?: ((args: UploadCompleteArgs) => MaybePromise<void>) | undefined
  readonly onError?:
    | ((error: unknown, args: { readonly request: Request; readonly route: string }) => MaybePromise<Response | BlobError | undefined | void>)
    | undefined
  /** presigned URLs and completion tokens live this long (seconds, default 3600) */
  readonly expiresIn?: number | undefined
  /** above this, the upload is multipart (default 64 MiB) */
  readonly multipartThreshold?: SizeInput | undefined
  /** part size of multipart uploads (default 8 MiB) */
  readonly partSize?: SizeInput | undefined
  /**
   * how long after its completion token expired an upload may still be resumed (re-signed), in seconds
   * (default 86400): a long or interrupted upload outlives its first URLs; the token still binds the
   * route, path, size, type and upload id, and complete only takes an unexpired token
   */
  readonly resumeWindow?: number | undefined
  /**
   * completion is single-use (one `complete` of an upload runs `onUploadComplete`; a repeat answers what
   * it answered): how long a repeat that arrives while the first is still completing waits for its answer
   * before it is refused with `conflict`, in seconds (default 10)
   */
  readonly completionWait?: number | undefined
  /**
   * the largest upload request body (the begin/complete/resume JSON message) this route reads; more is
   * refused with `too_large` (413) without reading further: a declared Content-Length over it is refused
   * unread, a chunked body is read up to it. Default: 64 KiB, raised for a route whose multipart
   * uploads can have so many parts that their `complete` message needs more (128 bytes a part)
   */
  readonly maxBodySize?: SizeInput | undefined
}

export interface UploadHandlerOptions {
  readonly routes: Readonly<Record<string, UploadRouteOptions>>
  /** the default `maxBodySize` of every route (a route's own wins) */
  readonly maxBodySize?: SizeInput | undefined
  /**
   * the key completion tokens are signed with; default: random per process (tokens then only verify on
   * the instance that issued them: set one for several instances)
   */
  readonly secret?: string | Redacted.Redacted<string> | undefined
}

export type UploadHandler = (request: Request) => Promise<Response>
