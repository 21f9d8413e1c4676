/**
 * `complete`: the token (never an expired one), then the upload's completion record claimed
 * (`completion.ts`: single-use, across requests and processes), then CompleteMultipartUpload for a
 * multipart upload, the stored object checked (missing -> `not_found`; other size or type ->
 * `signature_mismatch`; leading bytes contradicting the type -> `content_type_not_allowed`; deleted in
 * those cases), then `onUploadComplete` (a throw deletes the object first, then the error is answered).
 *
 * A repeat of a completed upload (the same token, or another token of the same upload) answers what the
 * first completion answered, without running `onUploadComplete` again; one arriving while the first is
 * still at work waits for it (up to `completionWait`, else `conflict`).
 *
 * @module
 */
import { BlobError } from "../../shared/BlobError.ts"
import { essence, SNIFF_BYTES, sniffRefusal } from "../../shared/contentTypes.ts"
import type { CompleteUploadRequest, CompleteUploadResponse } from "../../shared/protocol.ts"
import type { BucketApi } from "../Bucket.ts"
import { completionPath, completionRecords, replay, stillPending } from "./completion.ts"
import { type TokenClaims, verifyCompletionToken } from "./completionToken.ts"
import { type PreparedRoute, run } from "./prepare.ts"

export const complete = async (secret: Uint8Array, route: PreparedRoute, request: Request, body: CompleteUploadRequest): Promise<Response> => {
  const claims = verifyCompletionToken(secret, body.completionToken, route.name, Date.now())
  if (BlobError.is(claims)) throw claims
  const records = completionRecords(route.bucket, completionPath(claims, body.completionToken), claims.p)
  const deadline = Date.now() + route.completionWait * 1000
  // claim the completion, or answer as the completion that holds it did (a released claim: try again)
  while (!(await records.claim())) {
    const record = await records.settled(deadline)
    if (record !== undefined) return replay(record, claims.p)
    if (Date.now() >= deadline) throw stillPending(claims.p)
  }
  let hookRan = false
  try {
    const answer = await completeClaimed(route, request, body, claims, () => {
      hookRan = true
    })
    await records.done(answer)
    return Response.json(answer)
  } catch (error) {
    // before onUploadComplete nothing happened that a retry could repeat: a retry is checked afresh;
    // after it threw (the object deleted), a repeat answers the same refusal and never runs it again
    await (hookRan ? records.failed(error) : records.release())
    throw error
  }
}

/** The completion proper, by the request that holds the claim. */
const completeClaimed = async (
  route: PreparedRoute,
  request: Request,
  body: CompleteUploadRequest,
  claims: TokenClaims,
  enteringHook: () => void
): Promise<CompleteUploadResponse> => {
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
    enteringHook()
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
  return {
    type: "complete",
    path: claims.p,
    size: stored.size,
    contentType: stored.contentType,
    etag: stored.etag
  } satisfies CompleteUploadResponse
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
