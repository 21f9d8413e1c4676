/**
 * `complete`: the token (never an expired one), CompleteMultipartUpload for a multipart upload, then the
 * stored object checked (missing -> `not_found`; other size or type -> `signature_mismatch`; leading bytes
 * contradicting the type -> `content_type_not_allowed`; deleted in those cases), then `onUploadComplete`
 * (a throw deletes the object first, then the error is answered).
 *
 * @module
 */
import { BlobError } from "../../shared/BlobError.ts"
import { essence, SNIFF_BYTES, sniffRefusal } from "../../shared/contentTypes.ts"
import type { CompleteUploadRequest, CompleteUploadResponse } from "../../shared/protocol.ts"
import type { BucketApi } from "../Bucket.ts"
import { verifyCompletionToken } from "./completionToken.ts"
import { type PreparedRoute, run } from "./prepare.ts"

export const complete = async (secret: Uint8Array, route: PreparedRoute, request: Request, body: CompleteUploadRequest): Promise<Response> => {
  const claims = verifyCompletionToken(secret, body.completionToken, route.name, Date.now())
  if (BlobError.is(claims)) throw claims
  const bucket = route.bucket
  if (claims.u !== undefined) {
    if (body.parts === undefined || body.parts.length === 0) {
      throw new BlobError("invalid_input", { message: "A multipart upload completes with its parts' etags" })
    }
    await run(bucket.completeMultipartUpload(claims.p, claims.u, body.parts, { allowOverwrite: claims.o }))
  }
  const stored = await run(bucket.info(claims.p)).catch((error: unknown) => {
    if (BlobError.is(error, "not_found")) {
      throw new BlobError("not_found", { message: `The upload to ${claims.p} never arrived`, cause: error })
    }
    throw error
  })
  const discard = () => run(bucket.del(claims.p)).catch(() => undefined)
  if (stored.size !== claims.s || essence(stored.contentType) !== essence(claims.ct)) {
    await discard()
    throw new BlobError("signature_mismatch", {
      message: stored.size !== claims.s
        ? `Stored ${stored.size} bytes, but the upload declared ${claims.s}`
        : `Stored as ${essence(stored.contentType)}, but the upload declared ${essence(claims.ct)}`
    })
  }
  const leading = await readLeading(bucket, claims.p)
  const refusal = leading === undefined ? undefined : sniffRefusal(claims.ct, leading)
  if (refusal !== undefined) {
    await discard()
    throw refusal
  }
  if (route.options.onUploadComplete !== undefined) {
    try {
      await route.options.onUploadComplete({
        request,
        route: route.name,
        path: claims.p,
        size: stored.size,
        contentType: stored.contentType,
        etag: stored.etag,
        tokenPayload: claims.tp
      })
    } catch (error) {
      await discard()
      throw error
    }
  }
  return Response.json({
    type: "complete",
    path: claims.p,
    size: stored.size,
    contentType: stored.contentType,
    etag: stored.etag
  } satisfies CompleteUploadResponse)
}

/** Reads the first bytes of a stored object (for sniffing); undefined when it cannot. */
const readLeading = async (bucket: BucketApi, path: string): Promise<Uint8Array | undefined> => {
  try {
    const got = await run(bucket.get(path))
    const reader = got.body.getReader()
    const chunks: Array<Uint8Array> = []
    let total = 0
    while (total < SNIFF_BYTES) {
      const { done, value } = await reader.read()
      if (done) break
      chunks.push(value)
      total += value.length
    }
    await reader.cancel().catch(() => undefined)
    const out = new Uint8Array(total)
    let offset = 0
    for (const c of chunks) {
      out.set(c, offset)
      offset += c.length
    }
    return out.subarray(0, SNIFF_BYTES)
  } catch {
    return undefined
  }
}
