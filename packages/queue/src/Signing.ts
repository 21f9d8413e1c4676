/**
 * `Svc-Signature`: every delivery and callback carries an HS256 JWT (RFC 7519) signed with the
 * queue's current signing key:
 *
 * - header `{"alg":"HS256","typ":"JWT"}`
 * - claims `iss` = `"Svc"`, `sub` = the destination URL, `iat`/`nbf` = now, `exp` = now + 5 minutes
 *   (seconds), `jti` = a unique id, `body` = base64url of the SHA-256 of the request body.
 * - the HMAC key is the signing key string itself (UTF-8), as shown by `GET /v2/keys`.
 *
 * Receivers hold both the current and the next key: after a rotation (`POST /v2/keys/rotate`,
 * next becomes current, a fresh next is made), requests signed with either verify, so a receiver
 * updates its keys at leisure.
 *
 * **Verified with `jose`** ({@link verifySignature}: the algorithm pinned to HS256, the claims and
 * the clock checked, the MAC compared in constant time), by the effect `Receiver` and the Promise
 * entrypoint's receiver helpers alike. **Signed with `node:crypto`** ({@link sign}: one HMAC over
 * the fixed header and the claims, synchronous): jose signs only through WebCrypto, asynchronously
 * on libuv's pool, which cost 6-8x the CPU per delivery and cut a worker's drain from 7,310-7,752 to
 * 4,162 msg/s in alternating runs of bench:queue (README, "Signatures"). Signing makes no choices a
 * verifier could be tricked by; every token is checked by jose in the tests and by every receiver.
 */
import { described } from "@svc/platform/Arguments"
import { errors, jwtVerify } from "jose"
import * as Crypto from "node:crypto"

export const ISSUER = "Svc"
const TOKEN_LIFETIME_SECONDS = 300
const DEFAULT_CLOCK_TOLERANCE_SECONDS = 5

/** The claims of a genuine `Svc-Signature`. */
export interface SignatureClaims {
  readonly iss: string
  /** The URL the queue sent the request to. */
  readonly sub: string
  readonly iat: number
  readonly nbf: number
  readonly exp: number
  readonly jti: string
  /** base64url(SHA-256(body)). */
  readonly body: string
}

/** Which check a signature failed. */
export type SignatureFailure =
  | "malformed"
  | "bad_signature"
  | "wrong_issuer"
  | "expired"
  | "not_yet_valid"
  | "wrong_url"
  | "wrong_body"

export interface VerifyRequest {
  /** The `Svc-Signature` header. */
  readonly signature: string
  /** The raw request body, exactly as received. */
  readonly body: Uint8Array | string
  /** The URL the request was sent to; when given it must equal the `sub` claim. */
  readonly url?: string | undefined
  /** Allowed clock difference, seconds (default 5). */
  readonly clockTolerance?: number | undefined
}

export type Verification =
  | { readonly valid: true; readonly claims: SignatureClaims }
  | { readonly valid: false; readonly reason: SignatureFailure; readonly message: string }

/**
 * A receiver's keys, current first. A missing key (an unset environment variable) is a programming
 * error told at once, not a receiver that refuses every request as if the signatures were bad.
 */
export const receiverKeys = (keys: { readonly currentSigningKey: string; readonly nextSigningKey: string }): ReadonlyArray<string> => {
  if (typeof keys !== "object" || keys === null) {
    throw new TypeError(`Receiver: expected { currentSigningKey, nextSigningKey } (the keys of GET /v2/keys), got ${described(keys)}`)
  }
  for (const name of ["currentSigningKey", "nextSigningKey"] as const) {
    const key: unknown = keys[name]
    if (key === undefined || key === "") {
      throw new TypeError(`Receiver: ${name} is missing; give both keys of GET /v2/keys (current and next)`)
    }
    if (typeof key !== "string") throw new TypeError(`Receiver: ${name} must be a string (a key of GET /v2/keys), got ${described(key)}`)
  }
  return [keys.currentSigningKey, keys.nextSigningKey]
}

/** base64url(SHA-256(body)), the `body` claim (node's one-shot digest: a third of `createHash`'s cost on a small body). */
export const bodyHash = (body: Uint8Array): string => Crypto.hash("sha256", body, "base64url")

/** A fresh signing key: `sig_` and 32 random bytes, base64url. */
export const newSigningKey = (): string => `sig_${Crypto.randomBytes(32).toString("base64url")}`

/**
 * The imported HMAC key of a signing key string. Importing costs about as much as signing, and a
 * process only ever uses the current and next keys (and briefly the ones a rotation replaced), so
 * the imports are kept; the cache is emptied should it ever hold more than a handful.
 */
const importedKeys = new Map<string, Promise<CryptoKey>>()
const hmacKey = (key: string): Promise<CryptoKey> => {
  let imported = importedKeys.get(key)
  if (imported === undefined) {
    if (importedKeys.size >= 8) importedKeys.clear()
    imported = crypto.subtle.importKey("raw", new TextEncoder().encode(key), { name: "HMAC", hash: "SHA-256" }, false, [
      "sign",
      "verify"
    ])
    importedKeys.set(key, imported)
    imported.catch(() => importedKeys.delete(key)) // a failed import is not kept
  }
  return imported
}

/** The `Svc-Signature` value for one request. */
/** The protected header of every signature, encoded once. */
const HEADER = Buffer.from(JSON.stringify({ alg: "HS256", typ: "JWT" })).toString("base64url")

/** The `Svc-Signature` of a request to `url` with `body`, signed with `key`. */
export const sign = (key: string, request: { readonly url: string; readonly body: Uint8Array; readonly now?: number }): string => {
  const iat = Math.floor((request.now ?? Date.now()) / 1000)
  const claims: SignatureClaims = {
    iss: ISSUER,
    sub: request.url,
    iat,
    nbf: iat,
    exp: iat + TOKEN_LIFETIME_SECONDS,
    jti: `jwt_${Crypto.randomUUID().replaceAll("-", "")}`,
    body: bodyHash(request.body)
  }
  const signingInput = `${HEADER}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}`
  return `${signingInput}.${Crypto.createHmac("sha256", key).update(signingInput).digest("base64url")}`
}

const failure = (reason: SignatureFailure, message: string): Verification => ({ valid: false, reason, message })

/** jose's refusal, as the check that failed. */
const failureOf = (error: unknown): Verification => {
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return failure("bad_signature", "The signature was not made with the current or next key")
  }
  if (error instanceof errors.JWTExpired) return failure("expired", "The signature has expired")
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === "iss" && error.reason === "check_failed") {
      return failure("wrong_issuer", "The signature was not issued by the queue")
    }
    if (error.claim === "nbf" && error.reason === "check_failed") return failure("not_yet_valid", "The signature is not valid yet")
    return failure("malformed", "The signature's claims are incomplete")
  }
  return failure("malformed", "The signature is not an HS256 JWT")
}

const isClaims = (payload: Record<string, unknown>): payload is Record<string, unknown> & SignatureClaims =>
  typeof payload.iss === "string" && typeof payload.sub === "string" && typeof payload.jti === "string" &&
  typeof payload.body === "string" && typeof payload.iat === "number" && typeof payload.nbf === "number" &&
  typeof payload.exp === "number"

const sameText = (a: string, b: string): boolean => {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && Crypto.timingSafeEqual(left, right)
}

/**
 * Why `clockTolerance` is not a number of seconds (a string from an environment variable, NaN, a
 * negative one), or undefined. Such a setting made every genuine signature read as "not an HS256 JWT".
 */
export const clockToleranceProblem = (clockTolerance: unknown): string | undefined =>
  clockTolerance === undefined || (typeof clockTolerance === "number" && Number.isFinite(clockTolerance) && clockTolerance >= 0)
    ? undefined
    : `clockTolerance must be a number of seconds, 0 or more, got ${JSON.stringify(clockTolerance) ?? typeof clockTolerance}`

/**
 * Checks a signature against the keys (the current one first): the MAC, then `iss`, `exp`/`nbf`
 * (with the tolerance), `sub` (when `url` is given) and `body`. Rejects only for the caller's own
 * mistake, with a `TypeError` saying it: a body that is not a string or bytes (`req.body` where no
 * body parser ran is `undefined`), or a bad `clockTolerance`. Whatever the request carries resolves.
 */
export const verifySignature = async (keys: ReadonlyArray<string>, request: VerifyRequest): Promise<Verification> => {
  if (typeof request !== "object" || request === null) {
    throw new TypeError(`Receiver: expected { signature, body, url? } (the request to check), got ${described(request)}`)
  }
  const problem = clockToleranceProblem(request.clockTolerance) ??
    (typeof request.body === "string" || request.body instanceof Uint8Array
      ? undefined
      : `body must be the raw body as received, a string or bytes (Buffer, Uint8Array), got ${request.body === null ? "null" : typeof request.body}`)
  if (problem !== undefined) throw new TypeError(`Receiver: ${problem}`)
  const options = {
    algorithms: ["HS256"],
    issuer: ISSUER,
    clockTolerance: request.clockTolerance ?? DEFAULT_CLOCK_TOLERANCE_SECONDS,
    requiredClaims: ["sub", "iat", "nbf", "exp", "jti", "body"]
  }
  let verdict: Verification = failure("bad_signature", "The signature was not made with the current or next key")
  for (const key of keys) {
    try {
      const { payload } = await jwtVerify(request.signature, await hmacKey(key), options)
      verdict = isClaims(payload)
        ? { valid: true, claims: payload }
        : failure("malformed", "The signature's claims are incomplete")
      break
    } catch (error) {
      verdict = failureOf(error)
      // Only a MAC made with another key is worth trying the next key for.
      if (verdict.valid || verdict.reason !== "bad_signature") break
    }
  }
  if (!verdict.valid) return verdict
  if (request.url !== undefined && request.url !== verdict.claims.sub) {
    return failure("wrong_url", "The signature was made for another URL")
  }
  const body = typeof request.body === "string" ? new TextEncoder().encode(request.body) : request.body
  if (!sameText(bodyHash(body), verdict.claims.body)) return failure("wrong_body", "The body does not match the signature")
  return verdict
}
