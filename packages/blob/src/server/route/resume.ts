/**
 * `resume`: fresh URLs for an upload already begun, authorized by its completion token alone (expired
 * less than the route's resumeWindow ago); answers a new token with the same claims. An upload that was
 * completed (or is being completed) is not resumed: new URLs could put other bytes under an answered
 * completion.
 *
 * @module
 */
import { BlobError } from "../../shared/BlobError.ts"
import type { LandedPartInfo, ResumeUploadRequest, ResumeUploadResponse } from "../../shared/protocol.ts"
import { completionPath, completionRecords } from "./completion.ts"
import { forbidden, signCompletionToken, verifyCompletionToken } from "./completionToken.ts"
import { type PreparedRoute, run } from "./prepare.ts"

/**
 * Fresh URLs for an upload already begun: the token (signed, for this route, expired less than
 * resumeWindow ago) fixes path, size, type, overwrite flag and upload id, so nothing else is authorized.
 */
export const resume = async (secret: Uint8Array, route: PreparedRoute, body: ResumeUploadRequest): Promise<Response> => {
  const now = Date.now()
  const claims = verifyCompletionToken(secret, body.completionToken, route.name, now, route.resumeWindow * 1000)
  if (BlobError.is(claims)) throw claims
  const bucket = route.bucket
  const record = await completionRecords(bucket, completionPath(claims, body.completionToken), claims.p).read()
  if (record?.state === "pending") {
    throw new BlobError("conflict", { message: `The upload to ${claims.p} is being completed`, hint: "Complete it again for its answer" })
  }
  if (record !== undefined) throw new BlobError("not_found", { message: `The upload to ${claims.p} was already completed` })
  if (claims.u === undefined) {
    const signed = await run(bucket.signedUploadUrl(claims.p, {
      contentType: claims.ct,
      size: claims.s,
      expiresIn: route.expiresIn,
      allowOverwrite: claims.o
    }))
    return Response.json({
      type: "resume",
      path: claims.p,
      method: "PUT",
      url: signed.url,
      headers: signed.headers,
      expiresAt: signed.expiresAt,
      completionToken: signCompletionToken(secret, { ...claims, e: signed.expiresAt })
    } satisfies ResumeUploadResponse)
  }
  const partSize = claims.ps
  if (partSize === undefined) throw forbidden("The completion token cannot resume this upload")
  const count = Math.max(1, Math.ceil(claims.s / partSize))
  const plannedSize = (partNumber: number) => partNumber < count ? partSize : claims.s - partSize * (count - 1)
  let wanted: ReadonlyArray<number>
  let landed: ReadonlyArray<LandedPartInfo> | undefined
  if (body.parts !== undefined) {
    const outside = body.parts.find((n) => n > count)
    if (outside !== undefined) throw new BlobError("invalid_input", { message: `This upload has ${count} parts, not part ${outside}` })
    wanted = [...new Set(body.parts)]
  } else {
    // what storage holds is the truth (a part the page remembers may never have landed): ListParts,
    // keeping only parts of the planned size (a part cut short is sent again)
    const held = await run(bucket.listParts(claims.p, claims.u))
    landed = held.filter((part) => part.partNumber <= count && part.size === plannedSize(part.partNumber))
    const done = new Set(landed.map((part) => part.partNumber))
    wanted = Array.from({ length: count }, (_, i) => i + 1).filter((n) => !done.has(n))
  }
  const signed = await run(bucket.signedUploadParts(claims.p, claims.u, wanted.map((partNumber) => ({ partNumber, size: plannedSize(partNumber) })), {
    expiresIn: route.expiresIn
  }))
  const expiresAt = Math.min(signed.expiresAt, now + route.expiresIn * 1000)
  return Response.json({
    type: "resume",
    path: claims.p,
    method: "PUT",
    headers: {},
    expiresAt,
    completionToken: signCompletionToken(secret, { ...claims, e: expiresAt }),
    multipart: {
      uploadId: claims.u,
      partSize,
      parts: signed.parts,
      ...(landed === undefined ? {} : { landed })
    }
  } satisfies ResumeUploadResponse)
}
