/**
 * An in-memory upload route and object store speaking the wire format of `src/shared/protocol.ts`, for
 * the browser client's fast tier (no browser, no socket, no radosgw). It is the scripted fetch and XHR of
 * `../../browser/scripted.ts` with state behind them, so the client meets a route that remembers:
 *
 * - every message is decoded with the route's own schema (`UploadRequest`): a client drifting from the
 *   wire format fails here;
 * - begin signs one PUT up to `multipartThreshold` bytes, parts of `partSize` above it; `onBegin` may
 *   refuse (the route's onBeforeUpload);
 * - a PUT lands in memory only at a URL this route signed, with the signed size (and `If-None-Match: *`
 *   honoured); a part's ETag is the one storage answered; `fault(put)` answers a PUT instead (503, a
 *   dropped connection, ...), leaving nothing stored;
 * - complete assembles the parts named by ETag, checked against what landed and against the token's size;
 * - resume answers with what landed (without `parts`) or re-signs the named parts, and a new token.
 *
 * Refusals are the BlobError's JSON at its status, as the real route answers them.
 */
import { Schema } from "effect"
import { BlobError } from "../../../src/shared/BlobError.ts"
import {
  type BeginUploadRequest,
  type BeginUploadResponse,
  type CompleteUploadRequest,
  type CompleteUploadResponse,
  type PresignedPart,
  type ResumeUploadRequest,
  type ResumeUploadResponse,
  UploadRequest
} from "../../../src/shared/protocol.ts"
import { type PutRequest, type PutScript, scriptedRoute, scriptedStorage } from "../../browser/scripted.ts"

export interface MemoryRouteOptions {
  /** the largest upload sent as one PUT (default 1024 bytes) */
  readonly multipartThreshold?: number
  /** default 256 bytes (no 5 MiB minimum here: small files keep the tier fast) */
  readonly partSize?: number
  /** the route's onBeforeUpload: a BlobError refuses the upload */
  readonly onBegin?: (request: BeginUploadRequest) => BlobError | undefined
  /** storage's answer to this PUT instead of storing it */
  readonly fault?: (put: PutRequest) => PutScript | undefined
}

/** What a completion token stands for (the real route signs these claims). */
interface Claims {
  readonly path: string
  readonly size: number
  readonly contentType: string
  readonly uploadId?: string
}

interface MultipartUpload {
  readonly claims: Claims & { readonly uploadId: string }
  readonly count: number
  readonly landed: Map<number, { readonly etag: string; readonly body: Blob }>
}

export interface StoredObject {
  readonly body: Blob
  readonly contentType: string
  readonly etag: string
}

const STORAGE = "https://storage.test"
const decodeRequest = Schema.decodeUnknownSync(UploadRequest)
/** The part number of a part URL (`/<uploadId>/<partNumber>`; the scripted XHR counts attempts by path). */
export const partNumberOf = (url: string): number | undefined => {
  const [, uploadId, partNumber] = new URL(url).pathname.split("/")
  return uploadId?.startsWith("upload-") === true && partNumber !== undefined ? Number(partNumber) : undefined
}
const range = (count: number) => Array.from({ length: count }, (_, i) => i + 1)

export const memoryRoute = (options: MemoryRouteOptions = {}) => {
  const threshold = options.multipartThreshold ?? 1024
  const partSize = options.partSize ?? 256
  const objects = new Map<string, StoredObject>()
  const uploads = new Map<string, MultipartUpload>()
  const tokens = new Map<string, Claims>()
  /** the single-PUT URLs signed, and what they allow */
  const signed = new Map<string, Claims>()
  let counter = 0
  const next = () => ++counter
  const expiresAt = () => Date.now() + 3_600_000

  const issue = (claims: Claims) => {
    const token = `token-${next()}`
    tokens.set(token, claims)
    return token
  }
  const claimsOf = (token: string) => {
    const claims = tokens.get(token)
    if (claims === undefined) throw new BlobError("forbidden", { message: "The completion token is not valid" })
    return claims
  }
  const uploadOf = (claims: Claims) => {
    const upload = claims.uploadId === undefined ? undefined : uploads.get(claims.uploadId)
    if (upload === undefined) throw new BlobError("not_found", { message: "The multipart upload is gone" })
    return upload
  }
  const signSingle = (claims: Claims) => {
    const url = `${STORAGE}/${encodeURIComponent(claims.path)}?X-Amz-Signature=${next()}`
    signed.set(url, claims)
    return url
  }
  const singleHeaders = (claims: Claims) => ({ "content-type": claims.contentType, "if-none-match": "*" })
  const partSizeOf = (upload: MultipartUpload, partNumber: number) =>
    partNumber < upload.count ? partSize : upload.claims.size - partSize * (upload.count - 1)
  const signParts = (upload: MultipartUpload, numbers: ReadonlyArray<number>): Array<PresignedPart> =>
    numbers.map((partNumber) => ({
      partNumber,
      url: `${STORAGE}/${upload.claims.uploadId}/${partNumber}?X-Amz-Signature=${next()}`,
      size: partSizeOf(upload, partNumber)
    }))

  // --- storage: the PUTs ---

  const refused: PutScript = { status: 403, body: "<Error><Code>SignatureDoesNotMatch</Code></Error>" }
  const put = (request: PutRequest): PutScript => {
    const etag = `"etag-${next()}"`
    const partNumber = partNumberOf(request.url)
    if (partNumber !== undefined) {
      const upload = uploads.get(new URL(request.url).pathname.split("/")[1]!)
      if (upload === undefined) return { status: 404, body: "<Error><Code>NoSuchUpload</Code></Error>" }
      if (request.size !== partSizeOf(upload, partNumber)) return refused
      upload.landed.set(partNumber, { etag, body: request.body })
      return { status: 200, etag }
    }
    const claims = signed.get(request.url)
    if (claims === undefined || request.size !== claims.size || request.headers["content-type"] !== claims.contentType) return refused
    if (request.headers["if-none-match"] === "*" && objects.has(claims.path)) return { status: 412, body: "<Error><Code>PreconditionFailed</Code></Error>" }
    objects.set(claims.path, { body: request.body, contentType: claims.contentType, etag })
    return { status: 200, etag }
  }
  const storage = scriptedStorage((request) => options.fault?.(request) ?? put(request))

  // --- the route: begin, complete, resume ---

  const begin = (request: BeginUploadRequest): BeginUploadResponse => {
    const refusal = options.onBegin?.(request)
    if (refusal !== undefined) throw refusal
    const claims: Claims = { path: request.pathname, size: request.size, contentType: request.contentType }
    const answer = { type: "begin", path: claims.path, method: "PUT", expiresAt: expiresAt() } as const
    if (request.size <= threshold) {
      return { ...answer, url: signSingle(claims), headers: singleHeaders(claims), completionToken: issue(claims) }
    }
    const upload: MultipartUpload = {
      claims: { ...claims, uploadId: `upload-${next()}` },
      count: Math.ceil(request.size / partSize),
      landed: new Map()
    }
    uploads.set(upload.claims.uploadId, upload)
    return {
      ...answer,
      headers: {},
      completionToken: issue(upload.claims),
      multipart: { uploadId: upload.claims.uploadId, partSize, parts: signParts(upload, range(upload.count)) }
    }
  }

  const complete = (request: CompleteUploadRequest): CompleteUploadResponse => {
    const claims = claimsOf(request.completionToken)
    let stored = objects.get(claims.path)
    if (claims.uploadId !== undefined) {
      const upload = uploadOf(claims)
      const named = request.parts ?? []
      const matches = named.length === upload.count &&
        named.every((p, i) => p.partNumber === i + 1 && upload.landed.get(p.partNumber)?.etag === p.etag)
      if (!matches) throw new BlobError("invalid_input", { message: "The parts named do not match the parts storage holds" })
      stored = {
        body: new Blob(named.map((p) => upload.landed.get(p.partNumber)!.body)),
        contentType: claims.contentType,
        etag: `"final-${next()}"`
      }
      uploads.delete(upload.claims.uploadId)
      objects.set(claims.path, stored)
    }
    if (stored === undefined) throw new BlobError("not_found", { message: "Nothing was uploaded" })
    if (stored.body.size !== claims.size) throw new BlobError("signature_mismatch", { message: "The stored object is not the size announced" })
    return { type: "complete", path: claims.path, size: stored.body.size, contentType: stored.contentType, etag: stored.etag }
  }

  const resume = (request: ResumeUploadRequest): ResumeUploadResponse => {
    const claims = claimsOf(request.completionToken)
    const answer = { type: "resume", path: claims.path, method: "PUT", expiresAt: expiresAt(), completionToken: issue(claims) } as const
    if (claims.uploadId === undefined) return { ...answer, url: signSingle(claims), headers: singleHeaders(claims) }
    const upload = uploadOf(claims)
    const multipart = { uploadId: upload.claims.uploadId, partSize }
    if (request.parts !== undefined) return { ...answer, headers: {}, multipart: { ...multipart, parts: signParts(upload, request.parts) } }
    const landed = range(upload.count).flatMap((partNumber) => {
      const part = upload.landed.get(partNumber)
      const size = partSizeOf(upload, partNumber)
      return part !== undefined && part.body.size === size ? [{ partNumber, etag: part.etag, size }] : []
    })
    const missing = range(upload.count).filter((n) => !landed.some((p) => p.partNumber === n))
    return { ...answer, headers: {}, multipart: { ...multipart, parts: signParts(upload, missing), landed } }
  }

  const route = scriptedRoute((body) => {
    try {
      const request = decodeRequest(body)
      switch (request.type) {
        case "begin":
          return begin(request)
        case "complete":
          return complete(request)
        case "resume":
          return resume(request)
      }
    } catch (error) {
      const refusal = BlobError.is(error) ? error : new BlobError("invalid_input", { message: "Not an upload message", cause: error })
      return Response.json(refusal.toJSON(), { status: refusal.status })
    }
  })

  return {
    /** the client's `fetch` and `XMLHttpRequest` */
    fetch: route.fetch,
    Xhr: storage.Xhr,
    /** every route message, in order */
    calls: route.calls,
    /** every PUT, in order, and how many were in flight at most */
    storage,
    objects,
    uploads,
    /** the stored object's bytes */
    bytesOf: async (path: string) => new Uint8Array(await objects.get(path)!.body.arrayBuffer())
  }
}

/** A file whose bytes differ from one offset to the next, so a part sent at the wrong offset shows. */
export const patternedFile = (size: number, name = "file.bin", type = "application/octet-stream") =>
  new File([Uint8Array.from({ length: size }, (_, i) => (i * 7 + (i >> 8)) & 0xff)], name, { type, lastModified: 1_700_000_000_000 })
