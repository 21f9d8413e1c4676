/**
 * Reading an upload request: its media type (JSON), the body capped at the route's `maxBodySize` (refused
 * unread when its Content-Length says it is over, cut off as soon as a chunked body goes over), the JSON
 * message decoded with the protocol's schema, and the route named by the last path segment.
 *
 * @module
 */
// the one module of @svc/platform it needs: no Node-only code, so the route still runs in any Fetch runtime
import * as JsonBody from "@svc/platform/JsonBody"
import { Effect, Result, Schema } from "effect"
import { BlobError } from "../../shared/BlobError.ts"
import { UploadRequest } from "../../shared/protocol.ts"
import { formatBytes } from "../../shared/size.ts"

export const bodyTooLarge = (limit: number) =>
  new BlobError("too_large", {
    message: `The upload request is larger than ${formatBytes(limit)}`,
    hint: "Upload requests are small JSON messages; the file itself goes straight to storage"
  })

/** The media type every upload message is sent as. */
export const UPLOAD_MEDIA_TYPE = "application/json"

/**
 * The refusal of a request whose `Content-Type` is not JSON: 415 (`request_failed`, the only code whose
 * status is the thrower's), naming the type it got and the one expected. A request without a
 * `Content-Type` is read as JSON, as effect's HttpApi (the queue's and the other services' JSON routes)
 * reads it. Case does not matter, nor parameters but `charset`: one other than UTF-8 (`charset=utf-16`)
 * is refused the same way, naming it (the suite's rule, `JsonBody.charsetProblem`), where the body was
 * read as UTF-8 and refused as "not valid UTF-8".
 */
export const unsupportedMediaType = (request: Request): BlobError | undefined => {
  const header = request.headers.get("content-type")
  if (header === null) return undefined
  const mediaType = header.toLowerCase().split(";")[0]!.trim()
  if (mediaType === UPLOAD_MEDIA_TYPE) {
    const charset = JsonBody.charsetProblem(header)
    return charset === undefined ? undefined : new BlobError("request_failed", { status: 415, message: charset })
  }
  const shown = mediaType === "" ? "(empty)" : mediaType.length > 100 ? `${mediaType.slice(0, 100)}…` : mediaType
  return new BlobError("request_failed", {
    status: 415,
    message: `Unsupported content-type: ${shown}`,
    hint: `Send upload requests as ${UPLOAD_MEDIA_TYPE}`
  })
}

/**
 * The request's body as text, refusing (`too_large`) a body over `limit` bytes without reading past it:
 * a declared Content-Length over the limit is refused unread, a chunked body is cut off (its stream
 * cancelled) as soon as it goes over.
 */
export const readCappedBody = async (request: Request, limit: number): Promise<string> => {
  const declared = request.headers.get("content-length")
  if (declared !== null && /^\s*\d+\s*$/.test(declared) && Number(declared) > limit) {
    await request.body?.cancel().catch(() => undefined)
    throw bodyTooLarge(limit)
  }
  if (request.body === null) return ""
  // a framework's body parser read it before the handler: its stream is used up (or held by that reader)
  if (request.bodyUsed || request.body.locked) {
    throw new BlobError("invalid_input", {
      message: "The upload request's body was already read before the upload handler",
      hint: "hand the handler the request as received, with no body parser (express.json(), request.json()) before it"
    })
  }
  const reader = request.body.getReader()
  const chunks: Array<Uint8Array> = []
  let total = 0
  while (true) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.length
    if (total > limit) {
      await reader.cancel().catch(() => undefined)
      throw bodyTooLarge(limit)
    }
    chunks.push(value)
  }
  const text = JsonBody.decodeText(Buffer.concat(chunks, total))
  if (Result.isFailure(text)) throw invalidBody(text.failure)
  return text.success
}

/** A body refused by the suite's JSON rules, naming the field when there is one. */
const invalidBody = ({ parameter, problem }: { readonly parameter: string; readonly problem: string }) =>
  new BlobError("invalid_input", { message: `The upload request body${parameter === "" ? "" : `'s ${parameter}`} ${problem}` })

// a field the protocol does not have is refused, not dropped (the suite's rule for JSON bodies)
const decodeRequest = Schema.decodeUnknownEffect(UploadRequest, { onExcessProperty: "error" })

/**
 * The body's JSON decoded as an upload message, by the suite's rules for JSON bodies (`JsonBody`:
 * well-formed Unicode, no key twice, bounded nesting) and then the protocol's schema; `invalid_input`
 * naming the problem otherwise.
 */
export const decodeUploadRequest = async (text: string) => {
  const parsed = JsonBody.parseText(text, "an upload message")
  if (Result.isFailure(parsed)) throw invalidBody(parsed.failure)
  const json = parsed.success
  const decoded = await Effect.runPromise(Effect.result(decodeRequest(json)))
  if (decoded._tag === "Failure") {
    throw new BlobError("invalid_input", {
      // the schema's words name the field: `Expected no excess property at ["zz"]`
      message: `Malformed upload request: ${decoded.failure.message.replace(/\s+/g, " ").slice(0, 200)}`,
      hint: "Send { type: \"begin\", pathname, contentType, size }, { type: \"complete\", completionToken } or { type: \"resume\", completionToken }",
      cause: decoded.failure
    })
  }
  return decoded.success
}

/** The last segment of the request path, decoded ("" when there is none or it cannot be decoded). */
export const pathSegmentName = (request: Request): string => {
  const last = new URL(request.url).pathname.split("/").filter((s) => s !== "").pop() ?? ""
  try {
    return decodeURIComponent(last)
  } catch {
    return last
  }
}
