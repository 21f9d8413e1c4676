/**
 * Storage error normalization: what S3 (or the network) answered, turned into a BlobError by the spec's
 * first-match table.
 *
 * | Storage answered | Becomes |
 * | --- | --- |
 * | 404, NoSuchKey, NoSuchUpload | not_found |
 * | 412, PreconditionFailed | conflict |
 * | 401 | unauthorized |
 * | 403 with ExpiredToken, InvalidAccessKeyId or TokenRefreshRequired | unauthorized, "Storage refused the temporary credential" + hint |
 * | any other 403 | signature_mismatch |
 * | 429, SlowDown, TooManyRequests | rate_limited ("Storage rate limited the request"), retryAfter from Retry-After |
 * | 503 | not_ready |
 * | 413, EntityTooLarge | too_large |
 * | anything else | request_failed; message holds status and code, storage's message on cause; 5xx -> 502 |
 *
 * One refinement inside the 404 row: `NoSuchBucket` (the token names a bucket the store does not have)
 * is `not_found` naming the bucket, not the object the call was about (which sent users looking for a
 * file). A HEAD cannot tell: storage answers it with a bare 404, no code.
 *
 * One refinement inside the 403 rows: a 403 whose code says the account or bucket is suspended
 * (`UserSuspended`, `AccountProblem`, `AllAccessDisabled`) is `unauthorized` with the notice on `cause`
 * (the spec's Authentication section: a suspended bucket yields unauthorized).
 *
 * And one for who signed the request: a call the server signs with the bucket token's own long-lived
 * key (`NormalizeContext.signedWithToken`) carries no upload terms a body could break, so any 403 to it
 * (`AccessDenied`, `SignatureDoesNotMatch`, `InvalidAccessKeyId`: a wrong secret or an unknown key id) is
 * storage refusing the token: `unauthorized`, "Storage rejected the bucket token", never retried — the
 * Authentication section's rule. radosgw answers a wrong secret with `AccessDenied`, which the table
 * alone made a signature_mismatch whose hint spoke of an upload's size or type on a `get`.
 *
 * Normalized errors that may go away on their own are remembered (with their Retry-After) so the retry
 * policy can tell them apart; see {@link isTransient}.
 *
 * @module
 */
import { Predicate } from "effect"
import { BlobError } from "../shared/BlobError.ts"

const transient = new WeakMap<BlobError, number | undefined>()
const credentialRefusals = new WeakSet<BlobError>()

/** Whether a normalized storage error may succeed when retried (5xx, rate limits, network failures). */
export const isTransient = (error: BlobError): boolean => transient.has(error)
/** The Retry-After (seconds) storage sent with a transient error, if any. */
export const retryAfterOf = (error: BlobError): number | undefined => transient.get(error)
/** Whether storage refused the temporary credential (re-mint and retry once). */
export const isCredentialRefusal = (error: BlobError): boolean => credentialRefusals.has(error)

/** Marks an error as transient (used by the credential service's normalization too). */
export const markTransient = (error: BlobError, retryAfter?: number): BlobError => {
  transient.set(error, retryAfter)
  return error
}
/** Marks an error as a refusal of the temporary credential. */
export const markCredentialRefusal = (error: BlobError): BlobError => {
  credentialRefusals.add(error)
  return error
}

/** The facts of an SDK error (or anything thrown while talking to storage). */
export interface StorageFailure {
  readonly status: number | undefined
  readonly code: string | undefined
  readonly message: string | undefined
  readonly retryAfter: number | undefined
}

/** Parses a Retry-After header: seconds, or an HTTP date. */
export const parseRetryAfter = (value: unknown, now = Date.now()): number | undefined => {
  if (typeof value !== "string" || value.trim() === "") return undefined
  const seconds = Number(value.trim())
  if (Number.isFinite(seconds) && seconds >= 0) return seconds
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000))
}

export const describeFailure = (error: unknown): StorageFailure => {
  if (!Predicate.isObject(error)) {
    return { status: undefined, code: undefined, message: String(error), retryAfter: undefined }
  }
  const e = error as {
    name?: unknown
    Code?: unknown
    code?: unknown
    message?: unknown
    $metadata?: { httpStatusCode?: unknown }
    $response?: { statusCode?: unknown; headers?: Record<string, unknown> }
  }
  const status = typeof e.$metadata?.httpStatusCode === "number"
    ? e.$metadata.httpStatusCode
    : typeof e.$response?.statusCode === "number"
    ? e.$response.statusCode
    : undefined
  const code = typeof e.Code === "string"
    ? e.Code
    : typeof e.name === "string" && e.name !== "Error" && e.name !== "Unknown"
    ? e.name
    : typeof e.code === "string"
    ? e.code
    : undefined
  const headers = e.$response?.headers ?? {}
  const retryHeader = Object.entries(headers).find(([k]) => k.toLowerCase() === "retry-after")?.[1]
  return {
    status,
    code,
    message: typeof e.message === "string" ? e.message : undefined,
    retryAfter: parseRetryAfter(retryHeader)
  }
}

const TEMPORARY_CREDENTIAL_CODES = new Set(["ExpiredToken", "InvalidAccessKeyId", "TokenRefreshRequired"])
const SUSPENDED_CODES = new Set(["UserSuspended", "AccountProblem", "AllAccessDisabled"])
const NETWORK_CODES = new Set([
  "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH",
  "TimeoutError", "RequestTimeout", "RequestTimeoutException", "UND_ERR_SOCKET", "UND_ERR_CONNECT_TIMEOUT"
])

export interface NormalizeContext {
  /** the object path the request was about (named in not_found messages) */
  readonly path?: string | undefined
  /** the bucket the request went to (named when storage says it does not exist) */
  readonly bucket?: string | undefined
  /** the request was signed with the bucket token's long-lived key (not a minted credential, not a presigned URL) */
  readonly signedWithToken?: boolean | undefined
}

/** The storage's own words, as the cause of a normalized error (scrubbed: they may quote a header). */
const storageCause = (failure: StorageFailure, original: unknown): Error => {
  const cause = new Error(
    `storage answered ${failure.status ?? "no status"} ${failure.code ?? ""}: ${failure.message ?? ""}`.trim(),
    { cause: original }
  )
  cause.name = "StorageError"
  return cause
}

/** Applies the first-match table to whatever a storage call failed with. A BlobError passes through. */
export const normalizeStorageError = (error: unknown, context: NormalizeContext = {}): BlobError => {
  if (BlobError.is(error)) return error
  const failure = describeFailure(error)
  const { status, code } = failure
  const cause = storageCause(failure, error)
  if (code === "NoSuchBucket") {
    return new BlobError("not_found", { message: context.bucket === undefined ? "Bucket not found" : `Bucket not found: ${context.bucket}`, cause })
  }
  if (status === 404 || code === "NoSuchKey" || code === "NoSuchUpload" || code === "NotFound") {
    return new BlobError("not_found", {
      message: context.path === undefined ? undefined : `Not found: ${context.path}`,
      cause
    })
  }
  if (status === 412 || code === "PreconditionFailed") return new BlobError("conflict", { cause })
  if (status === 401) return new BlobError("unauthorized", { cause })
  if (status === 403 && code !== undefined && SUSPENDED_CODES.has(code)) {
    return new BlobError("unauthorized", { cause: new Error(`the bucket or its account is suspended (${code})`, { cause }) })
  }
  if (status === 403 && context.signedWithToken === true) {
    return new BlobError("unauthorized", { message: "Storage rejected the bucket token", cause })
  }
  if (status === 403 && code !== undefined && TEMPORARY_CREDENTIAL_CODES.has(code)) {
    return markCredentialRefusal(
      new BlobError("unauthorized", {
        message: "Storage refused the temporary credential",
        hint: "It expired mid-request; the client re-mints it and retries once",
        cause
      })
    )
  }
  if (status === 403) return new BlobError("signature_mismatch", { cause })
  if (status === 429 || code === "SlowDown" || code === "TooManyRequests") {
    return markTransient(
      new BlobError("rate_limited", {
        message: "Storage rate limited the request",
        ...(failure.retryAfter === undefined ? {} : { retryAfter: failure.retryAfter }),
        cause
      }),
      failure.retryAfter
    )
  }
  if (status === 503) return markTransient(new BlobError("not_ready", { cause }), failure.retryAfter)
  if (status === 413 || code === "EntityTooLarge") return new BlobError("too_large", { cause })
  if (status === undefined) {
    // no answer at all: the network, a timeout, a refused connection
    const networkCode = code !== undefined && NETWORK_CODES.has(code) ? code : undefined
    return markTransient(
      new BlobError("request_failed", {
        status: 502,
        message: `Storage could not be reached${networkCode === undefined ? "" : ` (${networkCode})`}`,
        cause
      })
    )
  }
  const out = new BlobError("request_failed", {
    status: status >= 500 ? 502 : status >= 400 && status <= 599 ? status : 502,
    message: `Storage answered ${status}${code === undefined ? "" : ` ${code}`}`,
    cause
  })
  return status >= 500 || code === "RequestTimeout" || code === "InternalError"
    ? markTransient(out, failure.retryAfter)
    : out
}
