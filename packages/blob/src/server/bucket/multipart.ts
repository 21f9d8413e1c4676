/**
 * Multipart uploads on S3: `put`'s own (a stream cut into parts, `partConcurrency` in flight, each part
 * retried; aborted on any failure), and the verbs of browser uploads whose parts are PUT through
 * presigned URLs (`presign.ts`): complete, abort, ListParts. Conditions are checked with a HEAD before
 * completing: radosgw ignores them on CompleteMultipartUpload.
 *
 * @module
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  ListPartsCommand,
  UploadPartCommand
} from "@aws-sdk/client-s3"
import { Effect } from "effect"
import { BlobError } from "../../shared/BlobError.ts"
import { normalizeStorageError } from "../normalize.ts"
import { partsOf } from "./body.ts"
import type { S3Context } from "./client.ts"
import type { Conditional } from "./conditional.ts"
import { bare, quoted, requirePath } from "./keys.ts"
import type { WriteHeaders } from "./putPlan.ts"
import type { Reads } from "./reads.ts"
import type { LandedPart } from "./types.ts"

type PartList = ReadonlyArray<{ readonly partNumber: number; readonly etag: string }>

/**
 * `completeMultipartUpload`, the same for every layer: with `allowOverwrite` false an occupied path aborts
 * the upload and answers already_exists, checked first (radosgw ignores If-None-Match on completion).
 */
export const makeCompleteMultipartUpload = (store: {
  readonly exists: (path: string) => Effect.Effect<boolean, BlobError>
  readonly alreadyExists: (path: string) => Effect.Effect<never, BlobError>
  readonly abort: (path: string, uploadId: string) => Effect.Effect<void, BlobError>
  readonly complete: (
    path: string,
    uploadId: string,
    parts: PartList,
    ifNoneMatch: boolean
  ) => Effect.Effect<{ readonly etag: string }, BlobError>
}) =>
  Effect.fn("Bucket.completeMultipartUpload")(function*(
    path: string,
    uploadId: string,
    parts: PartList,
    options: { readonly allowOverwrite?: boolean | undefined } = {}
  ) {
    yield* requirePath(path)
    const ifNoneMatch = options.allowOverwrite !== true
    if (ifNoneMatch && (yield* store.exists(path))) {
      yield* store.abort(path, uploadId)
      return yield* store.alreadyExists(path)
    }
    return yield* store.complete(path, uploadId, parts, ifNoneMatch)
  })

export const makeMultipart = (
  s3: S3Context,
  { exists, head }: Pick<Reads, "exists" | "head">,
  { alreadyExists, conditionalFailure }: Conditional
) => {
  const { Bucket, send, retried, partSize, partConcurrency } = s3

  const abortUpload = (path: string, uploadId: string) =>
    retried(send(path, (client, signal) =>
      client.send(new AbortMultipartUploadCommand({ Bucket, Key: path, UploadId: uploadId }), { abortSignal: signal })
    )).pipe(Effect.ignore)

  const complete = (
    path: string,
    uploadId: string,
    parts: ReadonlyArray<{ readonly partNumber: number; readonly etag: string }>,
    conditions: Pick<WriteHeaders, "ifNoneMatch" | "ifMatch">
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
    headers: WriteHeaders
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

  /**
   * A completion storage answered with a server error, when the upload is gone: radosgw answers the
   * completion of an upload id it does not know with 500 InternalError, where S3 says 404 NoSuchUpload
   * (an uploads server killed mid-upload and restarted; the spec's `not_found`). ListParts tells the two
   * apart; any other answer keeps the completion's own error.
   */
  const goneOr = (path: string, uploadId: string) => (error: BlobError) =>
    error.code !== "request_failed" || error.status !== 502
      ? Effect.fail(error)
      : listParts(path, uploadId).pipe(
        Effect.matchEffect({
          onFailure: (listed) => Effect.fail(BlobError.hasCode("not_found")(listed) ? listed : error),
          onSuccess: () => Effect.fail(error)
        })
      )

  const completeMultipartUpload = makeCompleteMultipartUpload({
    exists,
    alreadyExists,
    abort: abortUpload,
    complete: (path, uploadId, parts, ifNoneMatch) =>
      complete(path, uploadId, parts, { ifNoneMatch, ifMatch: undefined }).pipe(Effect.catch(goneOr(path, uploadId)))
  })

  return { abortUpload, putMultipart, listParts, completeMultipartUpload }
}

export type Multipart = ReturnType<typeof makeMultipart>
