/**
 * What a presigned upload looks like, the same for every layer: the headers the browser must send, the
 * Content-Disposition of a download, and the parts of a multipart upload (at least 5 MiB each, at most
 * 10,000 parts, the last one shorter).
 *
 * @module
 */
import { Effect } from "effect"
import { checkExpiresIn } from "./arguments.ts"
import type { BlobError } from "../../shared/BlobError.ts"
import type { PresignedPart } from "../../shared/protocol.ts"
import { MiB, readOnlyRefusal, requirePath } from "./keys.ts"

/** Parts to sign: their numbers and the byte length each is signed for. */
export type PartSizes = ReadonlyArray<{ readonly partNumber: number; readonly size: number }>

/** A layer's signing of part PUTs. */
export type SignParts = (
  path: string,
  uploadId: string,
  parts: PartSizes,
  expiresIn: number
) => Effect.Effect<{ readonly parts: ReadonlyArray<PresignedPart>; readonly expiresAt: number }, BlobError>

/** The headers a presigned PUT is signed with: send exactly these. */
export const uploadHeaders = (contentType: string, allowOverwrite: boolean) => ({
  "content-type": contentType,
  ...(allowOverwrite ? {} : { "if-none-match": "*" })
})

/** `download` of a signed read URL as a Content-Disposition (undefined: none). */
export const contentDisposition = (download: boolean | string | undefined): string | undefined =>
  download === undefined || download === false
    ? undefined
    : download === true
    ? "attachment"
    : `attachment; filename="${download.replace(/["\\\r\n]/g, "_")}"`

/** The part size of a multipart upload of `size` bytes and its parts, numbered from 1. */
export const planParts = (size: number, partSize: number) => {
  const chosen = Math.max(partSize, 5 * MiB, Math.ceil(size / 10_000))
  const count = Math.max(1, Math.ceil(size / chosen))
  return {
    partSize: chosen,
    parts: Array.from({ length: count }, (_, i) => ({ partNumber: i + 1, size: i + 1 < count ? chosen : size - chosen * (count - 1) }))
  }
}

/** `signedUploadParts`, the same for every layer: part PUTs of an existing upload signed again. */
export const makeSignedUploadParts = (readOnly: boolean, signParts: SignParts) =>
  Effect.fn("Bucket.signedUploadParts")(function*(
    path: string,
    uploadId: string,
    parts: PartSizes,
    options: { readonly expiresIn?: number | undefined } = {}
  ) {
    yield* requirePath(path)
    yield* checkExpiresIn(options.expiresIn)
    if (readOnly) return yield* readOnlyRefusal("An upload URL")
    return yield* signParts(path, uploadId, parts, options.expiresIn ?? 3600)
  })
