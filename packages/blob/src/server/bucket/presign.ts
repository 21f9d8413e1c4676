/**
 * Presigned URLs: GET (`signedReadUrl`), a single PUT with its content type, length and (unless
 * overwriting) `if-none-match: *` signed, and multipart part PUTs (content length signed per part) for
 * browser uploads. A URL lives at most as long as the credential that signed it.
 *
 * @module
 */
import { CreateMultipartUploadCommand, GetObjectCommand, PutObjectCommand, UploadPartCommand } from "@aws-sdk/client-s3"
import { getSignedUrl } from "@aws-sdk/s3-request-presigner"
import { Clock, Effect } from "effect"
import { BlobError } from "../../shared/BlobError.ts"
import type { PresignedPart } from "../../shared/protocol.ts"
import type { StorageCredentials } from "../credentials.ts"
import { normalizeStorageError } from "../normalize.ts"
import { checkExpiresIn, checkSignedUpload } from "./arguments.ts"
import type { S3Context } from "./client.ts"
import { readOnlyRefusal, requirePath } from "./keys.ts"
import type { Multipart } from "./multipart.ts"
import { contentDisposition, makeSignedUploadParts, planParts, type SignParts, uploadHeaders } from "./signing.ts"
import type { SignedMultipartUpload, SignedReadOptions, SignedUpload, SignedUploadOptions } from "./types.ts"

export const makePresign = (s3: S3Context, { abortUpload }: Pick<Multipart, "abortUpload">) => {
  const { Bucket, token, send, partSize, currentCredentials, clientFor } = s3

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
    yield* checkExpiresIn(options.expiresIn)
    const disposition = contentDisposition(options.download)
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

  const signedUploadUrl = Effect.fn("Bucket.signedUploadUrl")(function*(path: string, options: SignedUploadOptions) {
    yield* requirePath(path)
    yield* checkSignedUpload(options)
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
    yield* checkSignedUpload(options)
    if (token.readOnly) return yield* readOnlyRefusal("An upload URL")
    const planned = planParts(options.size, options.partSize ?? partSize)
    const created = yield* send(path, (client, signal) =>
      client.send(new CreateMultipartUploadCommand({ Bucket, Key: path, ContentType: options.contentType }), {
        abortSignal: signal
      }))
    const uploadId = created.UploadId
    if (uploadId === undefined) {
      return yield* new BlobError("request_failed", { status: 502, message: "Storage started no multipart upload" })
    }
    const signed = yield* signParts(path, uploadId, planned.parts, options.expiresIn ?? 3600).pipe(
      Effect.onError(() => abortUpload(path, uploadId))
    )
    return {
      uploadId,
      partSize: planned.partSize,
      parts: signed.parts,
      headers: {},
      expiresAt: signed.expiresAt
    } satisfies SignedMultipartUpload
  })

  /** Presigned UploadPart PUTs (content length signed per part). */
  const signParts: SignParts = (path, uploadId, parts, expiresIn) =>
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

  const signedUploadParts = makeSignedUploadParts(token.readOnly, signParts)

  return { signedReadUrl, signedUploadUrl, signedMultipartUpload, signedUploadParts }
}
