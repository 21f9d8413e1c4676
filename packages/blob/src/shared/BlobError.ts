/**
 * BlobError: the one error class of `@svc/blob`, shared by the server, the browser and the React hooks.
 *
 * One `Schema.TaggedError` class (tag `"BlobError"`) keyed by `code`: every failure of the package is a
 * `BlobError` whose `code` is one of {@link BLOB_ERROR_CODES}. `status` follows from the code (only
 * `request_failed` lets the thrower choose it). The message follows the spec's rules:
 *
 * 1. a hint is appended once, in parentheses, and also stays available as `hint`;
 * 2. `signature_mismatch` and `length_required` carry a built-in hint;
 * 3. the message never carries a credential, a token or an internal path (scrubbed here, see
 *    {@link sanitizeText}); notices such as "bucket suspended" go on `cause`;
 * 4. without text, a code gets its sentence-cased default message; given text is sentence-cased unless it
 *    starts with an identifier (a MIME type, a file name, ...), which keeps its case.
 *
 * `BlobError.is(x)` checks a marker stored under `Symbol.for(...)`, so it also recognises errors built by a
 * second copy of this module (an ESM and a CJS copy, two bundles): use it instead of `instanceof`.
 *
 * This module imports nothing from node or the AWS SDK: the browser bundle includes it.
 *
 * @module
 */
import { Predicate, Schema } from "effect"

/** Every code, in the order of the spec's table. */
export const BLOB_ERROR_CODES = [
  "not_found",
  "already_exists",
  "conflict",
  "content_type_not_allowed",
  "invalid_input",
  "too_large",
  "empty_body",
  "length_required",
  "signature_mismatch",
  "unauthorized",
  "forbidden",
  "rate_limited",
  "mint_backoff",
  "not_ready",
  "partial_delete",
  "move_left_a_copy",
  "invalid_content_type_pattern",
  "request_failed"
] as const

export type BlobErrorCode = typeof BLOB_ERROR_CODES[number]

/** The status of each code. `request_failed` is the default only: its thrower may set another one. */
export const BLOB_ERROR_STATUS: { readonly [C in BlobErrorCode]: number } = {
  not_found: 404,
  already_exists: 409,
  conflict: 409,
  content_type_not_allowed: 400,
  invalid_input: 400,
  too_large: 413,
  empty_body: 400,
  length_required: 411,
  signature_mismatch: 403,
  unauthorized: 401,
  forbidden: 403,
  rate_limited: 429,
  mint_backoff: 429,
  not_ready: 503,
  partial_delete: 500,
  move_left_a_copy: 500,
  invalid_content_type_pattern: 500,
  request_failed: 500
}

/** The sentence-cased default message of each code. */
export const BLOB_ERROR_DEFAULT_MESSAGE: { readonly [C in BlobErrorCode]: string } = {
  not_found: "Not found",
  already_exists: "Already exists",
  conflict: "The object changed since it was read",
  content_type_not_allowed: "Content type not allowed",
  invalid_input: "Invalid input",
  too_large: "Too large",
  empty_body: "Empty body",
  length_required: "Length required",
  signature_mismatch: "Signature mismatch",
  unauthorized: "Unauthorized",
  forbidden: "Forbidden",
  rate_limited: "Rate limited",
  mint_backoff: "The credential service asked for a backoff longer than a request can wait",
  not_ready: "Bucket is not ready",
  partial_delete: "Some paths were not deleted",
  move_left_a_copy: "Move left a copy at the source",
  invalid_content_type_pattern: "Invalid content type pattern",
  request_failed: "Request failed"
}

/** Hints a code carries when the thrower gives none. */
export const BLOB_ERROR_BUILT_IN_HINT: { readonly [C in BlobErrorCode]?: string } = {
  signature_mismatch: "The upload did not match what was authorized, usually a different size or content type",
  length_required: "Pass size or maxSize so the length is known before the first byte"
}

/** The global marker `BlobError.is` looks for; shared by every copy of this module. */
export const BlobErrorMarker: unique symbol = Symbol.for("@svc/blob/BlobError") as never

/** What a thrower may pass besides the code. Everything is optional. */
export interface BlobErrorOptions {
  /** the message; the code's default when absent or blank */
  readonly message?: string | undefined
  readonly hint?: string | undefined
  /** partial_delete: the paths that survived */
  readonly failed?: ReadonlyArray<string> | undefined
  /** already_exists: the existing object's etag */
  readonly etag?: string | undefined
  /** already_exists: the existing object's size in bytes */
  readonly size?: number | undefined
  /** mint_backoff, rate_limited: seconds the service asked to wait */
  readonly retryAfter?: number | undefined
  /** request_failed only (400-599); any other code has a fixed status */
  readonly status?: number | undefined
  /** the underlying error; never serialized */
  readonly cause?: unknown
}

/** The wire form (`toJSON`): what an upload route answers and what `fromJSON` reads. `cause` never crosses. */
export interface BlobErrorJson {
  readonly code: BlobErrorCode
  readonly status: number
  readonly message: string
  readonly hint?: string
  readonly failed?: ReadonlyArray<string>
  readonly etag?: string
  readonly size?: number
  readonly retryAfter?: number
}

// --- message rules -------------------------------------------------------------------------------------

const REDACTED = "<redacted>"

/**
 * Removes what must never reach a message: credentials, tokens, signatures, userinfo and query strings of
 * URLs, and filesystem paths. `secrets` are exact strings to remove as well (a secret key, a session token).
 */
export const sanitizeText = (text: string, secrets: ReadonlyArray<string> = []): string => {
  let out = text
  for (const secret of secrets) {
    if (secret.length >= 4) out = out.split(secret).join(REDACTED)
  }
  out = out
    // URLs: keep scheme, host and path; drop userinfo (KEY:SECRET@) and the query (signatures, tokens)
    .replace(/\b([a-z][a-z0-9+.-]*):\/\/(?:[^\s@]*@)?([^\s?#)'"]*)(?:[?#][^\s)'"]*)?/gi, (_m, scheme: string, rest: string) =>
      scheme.toLowerCase() === "file" ? "<path>" : `${scheme}://${rest}`)
    // bearer and basic authorization values
    .replace(/\b(Bearer|Basic)\s+[^\s,;)]+/gi, `$1 ${REDACTED}`)
    // key=value / key: value pairs whose key names a secret
    .replace(
      /\b([\w-]*(?:secret|token|password|passwd|signature|credential|session)[\w-]*)(\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s,;&)]+)/gi,
      `$1$2${REDACTED}`
    )
    // AWS-style access key ids
    .replace(/\b(?:AKIA|ASIA|AROA|AIDA)[A-Z0-9]{12,}\b/g, REDACTED)
    // long opaque strings (keys, session tokens, JWTs); hashes, etags and path-like text stay
    .replace(/[A-Za-z0-9+/=_.-]{20,}/g, (m) => looksOpaque(m) ? REDACTED : m)
    // absolute filesystem paths (POSIX and Windows), internal node paths
    .replace(
      /(^|[\s("'=[,])(?:\/(?:home|root|tmp|var|usr|etc|opt|srv|work|mnt|proc|run|Users|private|app|data|node_modules)(?:\/[^\s)"',:]*)?|[A-Za-z]:\\[^\s)"',]*|node:internal\/[^\s)"',]*)/g,
      "$1<path>"
    )
  return out
}

/** A run that reads like a key or a token: a long segment mixing upper, lower and digits, or base64 padding. */
const looksOpaque = (run: string): boolean =>
  run.split(/[/.]/).some((segment) =>
    segment.length >= 20 && !/^[0-9a-f]+$/i.test(segment) &&
    (/[+=]/.test(segment) || (/[A-Z]/.test(segment) && /[a-z]/.test(segment) && /[0-9]/.test(segment)) ||
      (/^[A-Z0-9]+$/.test(segment) && /[A-Z]/.test(segment) && /[0-9]/.test(segment)))
  )

const IDENTIFIER_START = /^["'`<[({]|^[^\s]*[/._@:\\0-9-]|^[^\s]+[A-Z]/

/** Upper-cases the first letter unless the message starts with an identifier (MIME type, file name, ...). */
export const sentenceCase = (text: string): string => {
  const trimmed = text.trim()
  if (trimmed === "") return trimmed
  const firstWord = trimmed.split(/\s/, 1)[0] ?? ""
  if (IDENTIFIER_START.test(firstWord)) return trimmed
  return trimmed.charAt(0).toUpperCase() + trimmed.slice(1)
}

/** The hint as it reads inside parentheses: a plain leading word is lower-cased ("The upload" -> "the upload"). */
const hintInParentheses = (hint: string): string => {
  const firstWord = hint.split(/\s/, 1)[0] ?? ""
  if (/^[A-Z][a-z]*$/.test(firstWord)) return hint.charAt(0).toLowerCase() + hint.slice(1)
  return hint
}

/** Applies the message rules: default text, sentence case, scrubbing, the hint appended once. */
export const composeMessage = (code: BlobErrorCode, message: string | undefined, hint: string | undefined): string => {
  const base = message === undefined || message.trim() === ""
    ? BLOB_ERROR_DEFAULT_MESSAGE[code]
    : sentenceCase(sanitizeText(message))
  if (hint === undefined || hint.trim() === "") return base
  const lower = base.toLowerCase()
  const cleanHint = sanitizeText(hint.trim())
  if (lower.includes(cleanHint.toLowerCase())) return base
  return `${base} (${hintInParentheses(cleanHint)})`
}

// --- the class -----------------------------------------------------------------------------------------

const CodeSchema = Schema.Literals(BLOB_ERROR_CODES)

const fields = {
  code: CodeSchema,
  status: Schema.Int,
  message: Schema.String,
  hint: Schema.optionalKey(Schema.String),
  failed: Schema.optionalKey(Schema.Array(Schema.String)),
  etag: Schema.optionalKey(Schema.String),
  size: Schema.optionalKey(Schema.Number),
  retryAfter: Schema.optionalKey(Schema.Number)
}

/** The JSON body of an error, as a schema (decode an upload route's refusal with it). */
export const BlobErrorJsonSchema = Schema.Struct(fields)

const isCode = (u: unknown): u is BlobErrorCode => Predicate.isString(u) && (BLOB_ERROR_CODES as ReadonlyArray<string>).includes(u)

const nonNegative = (name: string, value: unknown): number | undefined => {
  if (value === undefined) return undefined
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    throw new TypeError(`BlobError: ${name} must be a finite number >= 0`)
  }
  return value
}

type Props = {
  code: BlobErrorCode
  status: number
  message: string
  hint?: string
  failed?: ReadonlyArray<string>
  etag?: string
  size?: number
  retryAfter?: number
}

const buildProps = (code: unknown, options: BlobErrorOptions | undefined): Props => {
  if (!isCode(code)) throw new TypeError(`BlobError: unknown code ${JSON.stringify(code)}`)
  if (options !== undefined && !Predicate.isObject(options)) throw new TypeError("BlobError: options must be an object")
  const o: BlobErrorOptions = options ?? {}
  let status = BLOB_ERROR_STATUS[code]
  if (o.status !== undefined) {
    if (!Number.isInteger(o.status) || o.status < 400 || o.status > 599) {
      throw new TypeError("BlobError: status must be an integer from 400 to 599")
    }
    if (code === "request_failed") status = o.status
    else if (o.status !== status) {
      throw new TypeError(`BlobError: ${code} always has status ${status} (only request_failed takes a status)`)
    }
  }
  if (o.message !== undefined && typeof o.message !== "string") throw new TypeError("BlobError: message must be a string")
  if (o.hint !== undefined && typeof o.hint !== "string") throw new TypeError("BlobError: hint must be a string")
  if (o.etag !== undefined && typeof o.etag !== "string") throw new TypeError("BlobError: etag must be a string")
  if (o.failed !== undefined && (!Array.isArray(o.failed) || !o.failed.every(Predicate.isString))) {
    throw new TypeError("BlobError: failed must be an array of strings")
  }
  const size = nonNegative("size", o.size)
  const retryAfter = nonNegative("retryAfter", o.retryAfter)
  const hintText = o.hint !== undefined && o.hint.trim() !== "" ? o.hint.trim() : BLOB_ERROR_BUILT_IN_HINT[code]
  const props: Props = { code, status, message: composeMessage(code, o.message, hintText) }
  if (hintText !== undefined) props.hint = sanitizeText(hintText)
  if (o.failed !== undefined) props.failed = [...o.failed]
  if (o.etag !== undefined) props.etag = o.etag
  if (size !== undefined) props.size = size
  if (retryAfter !== undefined) props.retryAfter = retryAfter
  return props
}

/**
 * The one error of `@svc/blob`. Construct with a code and options:
 *
 * ```ts
 * new BlobError("not_found")                                   // "Not found", 404
 * new BlobError("already_exists", { etag, size })              // 409
 * new BlobError("request_failed", { status: 502, message, cause })
 * ```
 *
 * In Effect code it is a tagged error (`_tag: "BlobError"`): `Effect.catchTag("BlobError", ...)`, or by code
 * with `Effect.catchIf(BlobError.hasCode("not_found"), ...)`. In Promise code it is what rejects.
 */
export class BlobError extends Schema.TaggedError<BlobError>()("BlobError", fields) {
  /** The marker `BlobError.is` checks (on the prototype; shared through `Symbol.for`). */
  declare readonly [BlobErrorMarker]: true

  constructor(code: BlobErrorCode, options?: BlobErrorOptions)
  /** @internal the schema's own path (decoding); use the (code, options) form */
  constructor(props: Props, makeOptions?: Schema.MakeOptions)
  constructor(codeOrProps: BlobErrorCode | Props, options?: BlobErrorOptions | Schema.MakeOptions) {
    if (typeof codeOrProps === "string") {
      const errorOptions = options as BlobErrorOptions | undefined
      super(buildProps(codeOrProps, errorOptions), { disableChecks: true })
      if (errorOptions !== undefined && "cause" in errorOptions && errorOptions.cause !== undefined) {
        Object.defineProperty(this, "cause", {
          value: errorOptions.cause,
          enumerable: false,
          writable: true,
          configurable: true
        })
      }
    } else {
      super(codeOrProps, options as Schema.MakeOptions)
    }
  }

  /**
   * Whether `u` is a BlobError from any copy of this module (checks the global-symbol marker), optionally
   * with one of `codes`. Narrows, so `code`, `status` and `message` are typed afterwards.
   */
  static is(u: unknown): u is BlobError
  static is<const C extends BlobErrorCode>(u: unknown, ...codes: ReadonlyArray<C>): u is BlobError & { readonly code: C }
  static is(u: unknown, ...codes: ReadonlyArray<BlobErrorCode>): boolean {
    if (!Predicate.isObject(u) || (u as { [BlobErrorMarker]?: unknown })[BlobErrorMarker] !== true) return false
    return codes.length === 0 || codes.includes((u as { code: BlobErrorCode }).code)
  }

  /** A predicate for `Effect.catchIf` / `Effect.retry({ while })`: a BlobError with one of `codes`. */
  static hasCode<const C extends BlobErrorCode>(...codes: ReadonlyArray<C>) {
    return (u: unknown): u is BlobError & { readonly code: C } => BlobError.is(u, ...codes)
  }

  /** Rebuilds an error from its JSON (an upload route's refusal). Throws TypeError when it is not one. */
  static fromJSON(json: unknown): BlobError {
    const value = typeof json === "string" ? safeParse(json) : json
    if (!Predicate.isObject(value) || !isCode((value as { code?: unknown }).code)) {
      throw new TypeError("BlobError.fromJSON: not a BlobError body (no known code)")
    }
    const v = value as Record<string, unknown>
    const pick = <T>(key: string, guard: (u: unknown) => u is T): T | undefined => guard(v[key]) ? v[key] as T : undefined
    const code = v["code"] as BlobErrorCode
    const status = pick("status", Predicate.isNumber)
    return new BlobError(code, {
      message: pick("message", Predicate.isString),
      hint: pick("hint", Predicate.isString),
      failed: Array.isArray(v["failed"]) ? (v["failed"] as Array<unknown>).filter(Predicate.isString) : undefined,
      etag: pick("etag", Predicate.isString),
      size: pick("size", Predicate.isNumber),
      retryAfter: pick("retryAfter", Predicate.isNumber),
      status: code === "request_failed" && status !== undefined && Number.isInteger(status) && status >= 400 && status <= 599
        ? status
        : undefined
    })
  }

  /** The wire form: code, status, message and the optional fields that are set. Never `cause`. */
  override toJSON(): BlobErrorJson {
    return toJson(this)
  }
}

Object.defineProperty(BlobError.prototype, BlobErrorMarker, { value: true, enumerable: false })

const safeParse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** The JSON form of any BlobError (also one from another module copy). */
export const toJson = (error: BlobError): BlobErrorJson => {
  const out: { -readonly [K in keyof BlobErrorJson]: BlobErrorJson[K] } = {
    code: error.code,
    status: error.status,
    message: error.message
  }
  if (error.hint !== undefined) out.hint = error.hint
  if (error.failed !== undefined) out.failed = [...error.failed]
  if (error.etag !== undefined) out.etag = error.etag
  if (error.size !== undefined) out.size = error.size
  if (error.retryAfter !== undefined) out.retryAfter = error.retryAfter
  return out
}

/** Shorthand for `new BlobError(code, options)`. */
export const blobError = (code: BlobErrorCode, options?: BlobErrorOptions): BlobError => new BlobError(code, options)
