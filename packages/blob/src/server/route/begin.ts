/**
 * `begin`: `onBeforeUpload`, then the path, type and size checks, then a presigned PUT (one URL, or one
 * per part above the route's multipart threshold) and a completion token.
 *
 * @module
 */
import { BlobError } from "../../shared/BlobError.ts"
import { checkContentTypePatterns, contentTypeRefusal, declaredTypeRefusal } from "../../shared/contentTypes.ts"
import { pathProblem } from "../../shared/paths.ts"
import type { BeginUploadRequest, BeginUploadResponse } from "../../shared/protocol.ts"
import { formatOverLimit, parseOptionalSize } from "../../shared/size.ts"
import { newUploadNonce, RESERVED_PREFIX } from "./completion.ts"
import { signCompletionToken } from "./completionToken.ts"
import { type PreparedRoute, run } from "./prepare.ts"
import type { BeforeUploadResult } from "./types.ts"

export const begin = async (secret: Uint8Array, route: PreparedRoute, request: Request, body: BeginUploadRequest): Promise<Response> => {
  const problem = pathProblem(body.pathname)
  if (problem !== undefined) throw new BlobError("invalid_input", { message: `Invalid path: ${problem}` })
  if (body.size === 0) throw new BlobError("empty_body", { message: "The file is empty" })
  const decided = await route.options.onBeforeUpload({
    request,
    pathname: body.pathname,
    contentType: body.contentType,
    size: body.size,
    clientPayload: body.clientPayload ?? null,
    route: route.name
  })
  // Only `true` or an object allows; anything else refuses (unauthorized). Every result but `false`
  // used to allow, so `return user ? { path } : null`, or a bare `return` on the refusing branch, let
  // the upload through at the path the client chose.
  if (decided !== true && (typeof decided !== "object" || decided === null || Array.isArray(decided))) {
    throw new BlobError("unauthorized", { message: "The upload was refused" })
  }
  const result: BeforeUploadResult = decided === true ? {} : decided
  const path = result.path ?? body.pathname
  const pathCheck = pathProblem(path)
  if (pathCheck !== undefined) throw new BlobError("invalid_input", { message: `Invalid path: ${pathCheck}` })
  if (path.startsWith(RESERVED_PREFIX)) {
    throw new BlobError("invalid_input", { message: `Invalid path: ${RESERVED_PREFIX} holds the upload route's own records` })
  }
  let contentTypes = route.contentTypes
  if (result.contentTypes !== undefined) {
    const checked = checkContentTypePatterns(result.contentTypes)
    if (BlobError.is(checked)) throw checked
    contentTypes = checked
  }
  const refusal = declaredTypeRefusal(body.contentType) ?? contentTypeRefusal(body.contentType, contentTypes)
  if (refusal !== undefined) throw refusal
  const maxSize = parseOptionalSize(result.maxSize, "maxSize") ?? route.maxSize
  if (maxSize !== undefined && body.size > maxSize) {
    const [size, limit] = formatOverLimit(body.size, maxSize)
    throw new BlobError("too_large", { message: `The file is ${size}, over the limit of ${limit}` })
  }
  const allowOverwrite = result.allowOverwrite ?? route.options.allowOverwrite ?? false
  const now = Date.now()
  // names the upload's completion record; resume keeps it, so every token of the upload completes it once
  const nonce = newUploadNonce()
  if (body.size > route.multipartThreshold) {
    const multipart = await run(route.bucket.signedMultipartUpload(path, {
      contentType: body.contentType,
      size: body.size,
      expiresIn: route.expiresIn,
      allowOverwrite,
      ...(route.partSize === undefined ? {} : { partSize: route.partSize })
    }))
    const completionToken = signCompletionToken(secret, {
      r: route.name,
      p: path,
      s: body.size,
      ct: body.contentType,
      e: Math.min(multipart.expiresAt, now + route.expiresIn * 1000),
      o: allowOverwrite,
      u: multipart.uploadId,
      ps: multipart.partSize,
      n: nonce,
      ...(result.tokenPayload === undefined ? {} : { tp: result.tokenPayload })
    })
    return Response.json({
      type: "begin",
      path,
      method: "PUT",
      headers: multipart.headers,
      expiresAt: multipart.expiresAt,
      completionToken,
      multipart: { uploadId: multipart.uploadId, partSize: multipart.partSize, parts: multipart.parts }
    } satisfies BeginUploadResponse)
  }
  const signed = await run(route.bucket.signedUploadUrl(path, {
    contentType: body.contentType,
    size: body.size,
    expiresIn: route.expiresIn,
    allowOverwrite
  }))
  const completionToken = signCompletionToken(secret, {
    r: route.name,
    p: path,
    s: body.size,
    ct: body.contentType,
    e: signed.expiresAt,
    o: allowOverwrite,
    n: nonce,
    ...(result.tokenPayload === undefined ? {} : { tp: result.tokenPayload })
  })
  return Response.json({
    type: "begin",
    path,
    method: "PUT",
    url: signed.url,
    headers: signed.headers,
    expiresAt: signed.expiresAt,
    completionToken
  } satisfies BeginUploadResponse)
}
