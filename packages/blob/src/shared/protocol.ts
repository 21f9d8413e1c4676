/**
 * The upload route's wire format, shared with the browser client. One endpoint, POST, JSON body:
 *
 * - begin: `{ "type": "begin", "route"?, "pathname", "contentType", "size", "clientPayload"? }` ->
 *   200 `{ "type": "begin", "path", "method": "PUT", "url", "headers", "expiresAt", "completionToken" }`
 *   for one PUT, or with `"multipart": { "uploadId", "partSize", "parts": [{ "partNumber", "url", "size" }] }`
 *   (no `url`) for a multipart upload: the client PUTs each part to its URL and keeps each answer's ETag.
 * - complete: `{ "type": "complete", "route"?, "completionToken", "parts"?: [{ "partNumber", "etag" }] }` ->
 *   200 `{ "type": "complete", "path", "size", "contentType", "etag" }`.
 * - resume (re-sign): `{ "type": "resume", "route"?, "completionToken", "parts"?: [partNumber, ...] }` ->
 *   200 `{ "type": "resume", "path", "method": "PUT", "url"?, "headers", "expiresAt", "completionToken",
 *   "multipart"?: { "uploadId", "partSize", "parts": [...], "landed"?: [{ "partNumber", "etag", "size" }] } }`.
 *   Fresh URLs for an upload already begun, bound to the same route, path, size, type and upload id as the
 *   token: the single PUT's URL again, or the listed parts' URLs (expired ones), or — without `parts` — the
 *   parts storage does not hold yet plus the `landed` ones (storage's ListParts), to resume after a reload.
 *   The answer carries a new completion token (same claims, new expiry): use it from then on. A token
 *   expired less than the route's `resumeWindow` ago is still accepted here (never for complete).
 *
 * Every refusal is the BlobError's JSON (`BlobErrorJson`) at the error's status, with `Retry-After` when
 * `retryAfter` is set.
 *
 * @module
 */
import { Schema } from "effect"

export const BeginUploadRequest = Schema.Struct({
  type: Schema.Literal("begin"),
  route: Schema.optionalKey(Schema.String),
  pathname: Schema.String,
  contentType: Schema.String,
  size: Schema.Number.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(0)),
  clientPayload: Schema.optionalKey(Schema.NullOr(Schema.String))
})
export type BeginUploadRequest = typeof BeginUploadRequest.Type

export const CompletedPart = Schema.Struct({
  partNumber: Schema.Number.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(1)),
  etag: Schema.String
})
export type CompletedPart = typeof CompletedPart.Type

export const CompleteUploadRequest = Schema.Struct({
  type: Schema.Literal("complete"),
  route: Schema.optionalKey(Schema.String),
  completionToken: Schema.String,
  parts: Schema.optionalKey(Schema.Array(CompletedPart))
})
export type CompleteUploadRequest = typeof CompleteUploadRequest.Type

export const ResumeUploadRequest = Schema.Struct({
  type: Schema.Literal("resume"),
  route: Schema.optionalKey(Schema.String),
  completionToken: Schema.String,
  /** sign these parts again (expired URLs); absent: every part storage does not hold yet */
  parts: Schema.optionalKey(Schema.Array(Schema.Number.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(1))))
})
export type ResumeUploadRequest = typeof ResumeUploadRequest.Type

export const UploadRequest = Schema.Union([BeginUploadRequest, CompleteUploadRequest, ResumeUploadRequest])
export type UploadRequest = typeof UploadRequest.Type

export interface PresignedPart {
  readonly partNumber: number
  readonly url: string
  readonly size: number
}

export interface BeginUploadResponse {
  readonly type: "begin"
  readonly path: string
  readonly method: "PUT"
  /** single PUT: where to send the body (absent for multipart) */
  readonly url?: string
  /** headers the PUT (or each part PUT) must carry exactly as given: they are signed */
  readonly headers: Readonly<Record<string, string>>
  /** epoch ms after which the URLs stop working */
  readonly expiresAt: number
  readonly completionToken: string
  readonly multipart?: {
    readonly uploadId: string
    readonly partSize: number
    readonly parts: ReadonlyArray<PresignedPart>
  }
}

export interface CompleteUploadResponse {
  readonly type: "complete"
  readonly path: string
  readonly size: number
  readonly contentType: string
  readonly etag: string
}

/** A part storage already holds (from ListParts). */
export interface LandedPartInfo {
  readonly partNumber: number
  readonly etag: string
  readonly size: number
}

export interface ResumeUploadResponse {
  readonly type: "resume"
  readonly path: string
  readonly method: "PUT"
  /** single PUT: a fresh URL */
  readonly url?: string
  readonly headers: Readonly<Record<string, string>>
  readonly expiresAt: number
  /** replaces the previous token (same claims, new expiry) */
  readonly completionToken: string
  readonly multipart?: {
    readonly uploadId: string
    readonly partSize: number
    /** fresh URLs: the parts asked for, or every part not landed */
    readonly parts: ReadonlyArray<PresignedPart>
    /** only when no parts were named: what storage holds already (size checked against the plan) */
    readonly landed?: ReadonlyArray<LandedPartInfo>
  }
}
