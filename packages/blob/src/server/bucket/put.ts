/**
 * `put` on S3: the plan (`putPlan.ts`), then one PutObject (bytes, or a stream of known length) or a
 * multipart upload (`multipart.ts`). Conditional writes (If-None-Match: *, If-Match) are never retried;
 * a 5xx to one looks at what is stored to tell radosgw's lost race from its own success.
 *
 * @module
 */
import { PutObjectCommand, type S3Client } from "@aws-sdk/client-s3"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import { Readable } from "node:stream"
import { BlobError } from "../../shared/BlobError.ts"
import { counted, readAll } from "./body.ts"
import type { S3Context } from "./client.ts"
import type { Conditional } from "./conditional.ts"
import { bare, quoted } from "./keys.ts"
import type { Multipart } from "./multipart.ts"
import { planPut, type WriteHeaders } from "./putPlan.ts"
import type { Reads } from "./reads.ts"
import type { ObjectInfo, PutBody, PutOptions, PutResult } from "./types.ts"

/** metadata key carrying updateJson's write id (to tell its own write from a rival's after a 5xx) */
export const WRITE_ID = "svc-write-id"

export const makePut = (
  s3: S3Context,
  { head }: Pick<Reads, "head">,
  { conditionalFailure }: Pick<Conditional, "conditionalFailure">,
  { putMultipart }: Pick<Multipart, "putMultipart">
) => {
  const { Bucket, send, retried, url } = s3

  const putOnce = (
    path: string,
    body: { readonly bytes: Uint8Array } | { readonly stream: AsyncIterable<Uint8Array>; readonly length: number },
    headers: WriteHeaders
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

  const put = Effect.fn("Bucket.put")(function*(path: string, body: PutBody, options: PutOptions = {}) {
    const { contentType, headers, maxSize, length, bytes, stream, useMultipart } = yield* planPut(path, body, options, {
      readOnly: s3.token.readOnly,
      multipartThreshold: s3.multipartThreshold,
      maxSinglePut: s3.maxSinglePut
    })
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
      const all = yield* readAll(stream!, { max: maxSize })
      const out = yield* putOnce(path, { bytes: all }, headers)
      result = { etag: quoted(out.ETag), size: all.length }
    }
    return { path, url: url(path), etag: result.etag, size: result.size, contentType } satisfies PutResult
  })

  return { putOnce, put }
}
