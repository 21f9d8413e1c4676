/**
 * What a presigned upload looks like, the same for every layer: the headers the browser must send, the
 * Content-Disposition of a download, and the parts of a multipart upload (at least 5 MiB each, at most
 * 10,000 parts, the last one shorter).
 *
 * @module
 */
import { MiB } from "./keys.ts"

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
