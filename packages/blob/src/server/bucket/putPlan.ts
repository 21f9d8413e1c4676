/**
 * What `put` decides before it writes, the same for every layer: the path, token and option checks
 * (metadata, sizes, content type and its patterns, the leading bytes), the body as bytes or a stream
 * (a stream that fits in the sniffing peek becomes bytes), its length when known, and single PUT or
 * multipart.
 *
 * @module
 */
import { Effect } from "effect"
import { BlobError } from "../../shared/BlobError.ts"
import { checkContentTypePatterns, contentTypeFromPath, contentTypeRefusal, declaredTypeRefusal, SNIFF_BYTES, sniffRefusal } from "../../shared/contentTypes.ts"
import { metadataProblem } from "../../shared/paths.ts"
import { parseOptionalSize } from "../../shared/size.ts"
import { peek, prepareBody, tooLarge } from "./body.ts"
import { readOnlyRefusal, requirePath } from "./keys.ts"
import type { PutBody, PutOptions } from "./types.ts"

/** The headers of a write: its type, its condition (If-None-Match: * or If-Match) and its metadata. */
export interface WriteHeaders {
  readonly contentType: string
  readonly ifNoneMatch: boolean
  readonly ifMatch: string | undefined
  readonly metadata: Readonly<Record<string, string>> | undefined
  readonly cacheControl: string | undefined
}

export interface PutLimits {
  readonly readOnly: boolean
  readonly multipartThreshold: number
  readonly maxSinglePut: number
}

export interface PutPlan {
  readonly contentType: string
  readonly headers: WriteHeaders
  readonly maxSize: number | undefined
  /** the body's length, when known (bytes, a declared size or a Content-Length) */
  readonly length: number | undefined
  /** the whole body, when it is in memory */
  readonly bytes: Uint8Array | undefined
  /** the rest of the body (its peeked bytes first) when it is not */
  readonly stream: AsyncIterable<Uint8Array> | undefined
  readonly useMultipart: boolean
}

export const planPut = (
  path: string,
  body: PutBody,
  options: PutOptions,
  limits: PutLimits
): Effect.Effect<PutPlan, BlobError> =>
  Effect.gen(function*() {
    const { multipartThreshold, maxSinglePut } = limits
    yield* requirePath(path)
    if (limits.readOnly) return yield* readOnlyRefusal("Writing")
    if (options.metadata !== undefined) {
      const problem = metadataProblem(options.metadata)
      if (problem !== undefined) return yield* new BlobError("invalid_input", { message: `Invalid metadata: ${problem}` })
    }
    // a header value: a line break or a character outside Latin-1 was sent, refused and retried as an outage
    if (options.cacheControl !== undefined && !/^[\t\x20-\x7e\x80-\xff]*$/.test(options.cacheControl)) {
      return yield* new BlobError("invalid_input", {
        message: "Invalid cacheControl: it holds a line break or another character a header cannot carry"
      })
    }
    const declaredSize = parseOptionalSize(options.size, "size")
    const maxSize = parseOptionalSize(options.maxSize, "maxSize")
    const multipart = options.multipart ?? "auto"
    const prepared = prepareBody(body)
    if (BlobError.is(prepared)) return yield* prepared
    const contentType = options.contentType ?? prepared.typeHint ??
      (typeof body === "string" && contentTypeFromPath(path) === "application/octet-stream"
        ? "text/plain; charset=utf-8"
        : contentTypeFromPath(path))
    const notAType = declaredTypeRefusal(contentType)
    if (notAType !== undefined) return yield* notAType
    if (options.contentTypes !== undefined) {
      const patterns = checkContentTypePatterns(options.contentTypes)
      if (BlobError.is(patterns)) return yield* patterns
      const refusal = contentTypeRefusal(contentType, patterns)
      if (refusal !== undefined) return yield* refusal
    }
    const headers = {
      contentType,
      ifNoneMatch: options.ifUnchanged === undefined && options.allowOverwrite !== true,
      ifMatch: options.ifUnchanged,
      metadata: options.metadata,
      cacheControl: options.cacheControl
    }
    const sniff = options.sniff !== false

    // a body of known bytes
    let bytes = prepared.kind === "bytes" ? prepared.bytes : undefined
    let stream: AsyncIterable<Uint8Array> | undefined
    let length = prepared.kind === "bytes" ? prepared.bytes.length : prepared.length ?? declaredSize
    if (prepared.kind === "stream") {
      if (length === undefined && maxSize === undefined) {
        return yield* new BlobError("length_required", { message: "The stream's length is unknown" })
      }
      if (length !== undefined && maxSize !== undefined && length > maxSize) return yield* tooLarge(length, maxSize)
      if (declaredSize !== undefined && prepared.length !== undefined && declaredSize !== prepared.length) {
        return yield* new BlobError("invalid_input", {
          message: `The declared size ${declaredSize} differs from the body's length ${prepared.length}`
        })
      }
      const peeked = yield* Effect.tryPromise({
        try: () => peek(prepared.source, SNIFF_BYTES),
        catch: (error) => BlobError.is(error) ? error : new BlobError("invalid_input", { message: "The body stream failed", cause: error })
      })
      if (sniff) {
        const refusal = sniffRefusal(contentType, peeked.leading)
        if (refusal !== undefined) return yield* refusal
      }
      if (peeked.whole !== undefined) {
        bytes = peeked.whole // the whole body fit in the peek: treat it as bytes
      } else {
        stream = peeked.rest
      }
    }
    if (bytes !== undefined) {
      length = bytes.length
      if (declaredSize !== undefined && declaredSize !== bytes.length) {
        return yield* new BlobError("invalid_input", {
          message: `The declared size ${declaredSize} differs from the body's length ${bytes.length}`
        })
      }
      if (maxSize !== undefined && bytes.length > maxSize) return yield* tooLarge(bytes.length, maxSize)
      if (sniff && prepared.kind === "bytes") {
        const refusal = sniffRefusal(contentType, bytes.subarray(0, SNIFF_BYTES))
        if (refusal !== undefined) return yield* refusal
      }
    }
    const useMultipart = multipart === true ||
      (multipart === "auto" && (length === undefined ? (maxSize ?? 0) > multipartThreshold : length > multipartThreshold))
    if (!useMultipart && length !== undefined && length > maxSinglePut) {
      return yield* tooLarge(length, maxSinglePut, "One PUT carries at most this much: allow multipart")
    }
    return { contentType, headers, maxSize, length, bytes, stream, useMultipart } satisfies PutPlan
  })
