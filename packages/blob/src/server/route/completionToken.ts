/**
 * The completion token: `v1.<base64url(JSON claims)>.<base64url(HMAC-SHA256)>`, binding route, path,
 * size, content type, overwrite flag, upload id, part size, token payload, the upload's nonce and expiry.
 * Invalid, for another route or expired -> `forbidden`.
 *
 * @module
 */
import { createHmac, timingSafeEqual } from "node:crypto"
import { BlobError } from "../../shared/BlobError.ts"

export interface TokenClaims {
  readonly r: string
  readonly p: string
  readonly s: number
  readonly ct: string
  readonly e: number
  readonly o: boolean
  readonly u?: string
  /** multipart: the part size the parts were planned with */
  readonly ps?: number
  readonly tp?: string
  /**
   * the upload's nonce, drawn at begin and kept by resume: names the upload's completion record, so the
   * upload completes once whichever of its tokens is used (absent from tokens signed before it existed)
   */
  readonly n?: string
}

const b64url = (bytes: Uint8Array | string) => Buffer.from(bytes).toString("base64url")

export const signCompletionToken = (secret: Uint8Array, claims: TokenClaims): string => {
  const payload = b64url(JSON.stringify(claims))
  const signature = createHmac("sha256", secret).update(`v1.${payload}`).digest("base64url")
  return `v1.${payload}.${signature}`
}

export const forbidden = (message: string) =>
  new BlobError("forbidden", { message, hint: "Begin the upload again" })

/** `grace`: milliseconds past its expiry a token is still accepted (resume only). */
export const verifyCompletionToken = (
  secret: Uint8Array,
  token: string,
  route: string,
  now: number,
  grace = 0
): TokenClaims | BlobError => {
  const [version, payload, signature] = token.split(".")
  if (version !== "v1" || payload === undefined || signature === undefined || token.split(".").length !== 3) {
    return forbidden("The completion token is not valid")
  }
  // compared as written, not decoded: node's base64url decoder skips characters outside its alphabet,
  // so the token with "!", "=" or a NUL appended decoded to the same bytes and was accepted
  const expected = Buffer.from(createHmac("sha256", secret).update(`v1.${payload}`).digest("base64url"))
  const given = Buffer.from(signature)
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return forbidden("The completion token is not valid")
  let claims: TokenClaims
  try {
    claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as TokenClaims
  } catch {
    return forbidden("The completion token is not valid")
  }
  if (claims.r !== route) return forbidden("The completion token is for another upload route")
  if (claims.e + grace <= now) return forbidden("The completion token has expired")
  return claims
}
