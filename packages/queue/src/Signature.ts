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
 * updates its keys at leisure. This module has no server dependencies: a receiving app imports
 * `Receiver` alone.
 */
import { Effect, Schema } from "effect"
import * as Crypto from "node:crypto"

export const ISSUER = "Svc"
const TOKEN_LIFETIME_SECONDS = 300

const base64url = (data: Uint8Array | string): string => Buffer.from(data).toString("base64url")

/** base64url(SHA-256(body)), the `body` claim. */
export const bodyHash = (body: Uint8Array): string => Crypto.createHash("sha256").update(body).digest("base64url")

const HEADER = base64url(JSON.stringify({ alg: "HS256", typ: "JWT" }))

/** A fresh signing key: `sig_` and 32 random bytes, base64url. */
export const newSigningKey = (): string => `sig_${Crypto.randomBytes(32).toString("base64url")}`

/** The `Svc-Signature` value for one request. */
export const sign = (key: string, request: { readonly url: string; readonly body: Uint8Array; readonly now?: number }): string => {
  const iat = Math.floor((request.now ?? Date.now()) / 1000)
  const claims = {
    iss: ISSUER,
    sub: request.url,
    iat,
    nbf: iat,
    exp: iat + TOKEN_LIFETIME_SECONDS,
    jti: `jwt_${Crypto.randomUUID().replaceAll("-", "")}`,
    body: bodyHash(request.body)
  }
  const unsigned = `${HEADER}.${base64url(JSON.stringify(claims))}`
  return `${unsigned}.${Crypto.createHmac("sha256", key).update(unsigned).digest("base64url")}`
}

export const SignatureClaims = Schema.Struct({
  iss: Schema.String,
  sub: Schema.String,
  iat: Schema.Number,
  nbf: Schema.Number,
  exp: Schema.Number,
  jti: Schema.String,
  body: Schema.String
})
export type SignatureClaims = typeof SignatureClaims.Type

/** The signature does not prove the request came from the queue; `reason` says which check failed. */
export class InvalidSignature extends Schema.TaggedError<InvalidSignature>()("InvalidSignature", {
  reason: Schema.Literals(["malformed", "bad_signature", "wrong_issuer", "expired", "not_yet_valid", "wrong_url", "wrong_body"]),
  message: Schema.String
}) {}

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

const decodeClaims = Schema.decodeUnknownOption(SignatureClaims)

const equalMac = (a: string, b: string): boolean => {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && Crypto.timingSafeEqual(left, right)
}

/**
 * Verifies `Svc-Signature` in a receiving app:
 *
 * ```ts
 * const receiver = new Receiver({ currentSigningKey: process.env.SVC_CURRENT_SIGNING_KEY!, nextSigningKey: process.env.SVC_NEXT_SIGNING_KEY! })
 * const ok = await receiver.isValid({ signature: req.headers["svc-signature"], body: rawBody })          // plain Node
 * yield* receiver.verify({ signature, body, url: "https://example.com/hook" })                            // Effect
 * ```
 */
export class Receiver {
  readonly #keys: ReadonlyArray<string>
  constructor(options: { readonly currentSigningKey: string; readonly nextSigningKey: string }) {
    this.#keys = [options.currentSigningKey, options.nextSigningKey]
  }

  /** The claims when the signature is genuine; fails with {@link InvalidSignature} otherwise. */
  verify(request: VerifyRequest): Effect.Effect<SignatureClaims, InvalidSignature> {
    return Effect.suspend(() => {
      const result = this.check(request)
      return "reason" in result ? Effect.fail(new InvalidSignature(result)) : Effect.succeed(result.claims)
    })
  }

  /** `verify` for code that does not use Effect. */
  isValid(request: VerifyRequest): boolean {
    return !("reason" in this.check(request))
  }

  private check(request: VerifyRequest):
    | { readonly claims: SignatureClaims }
    | { readonly reason: InvalidSignature["reason"]; readonly message: string }
  {
    const parts = request.signature.split(".")
    if (parts.length !== 3) return { reason: "malformed", message: "The signature is not a JWT" }
    const [header, payload, mac] = parts as [string, string, string]
    let parsedHeader: unknown
    let parsedPayload: unknown
    try {
      parsedHeader = JSON.parse(Buffer.from(header, "base64url").toString())
      parsedPayload = JSON.parse(Buffer.from(payload, "base64url").toString())
    } catch {
      return { reason: "malformed", message: "The signature is not a JWT" }
    }
    if ((parsedHeader as { alg?: unknown } | null)?.alg !== "HS256") {
      return { reason: "malformed", message: "The signature is not an HS256 JWT" }
    }
    const unsigned = `${header}.${payload}`
    const genuine = this.#keys.some((key) => equalMac(Crypto.createHmac("sha256", key).update(unsigned).digest("base64url"), mac))
    if (!genuine) return { reason: "bad_signature", message: "The signature was not made with the current or next key" }
    const claims = decodeClaims(parsedPayload)
    if (claims._tag === "None") return { reason: "malformed", message: "The signature's claims are incomplete" }
    const now = Date.now() / 1000
    const tolerance = request.clockTolerance ?? 5
    if (claims.value.iss !== ISSUER) return { reason: "wrong_issuer", message: "The signature was not issued by the queue" }
    if (now > claims.value.exp + tolerance) return { reason: "expired", message: "The signature has expired" }
    if (now < claims.value.nbf - tolerance) return { reason: "not_yet_valid", message: "The signature is not valid yet" }
    if (request.url !== undefined && request.url !== claims.value.sub) {
      return { reason: "wrong_url", message: "The signature was made for another URL" }
    }
    const body = typeof request.body === "string" ? new TextEncoder().encode(request.body) : request.body
    if (!equalMac(bodyHash(body), claims.value.body)) {
      return { reason: "wrong_body", message: "The body does not match the signature" }
    }
    return { claims: claims.value }
  }
}
