/**
 * `Svc-Signature` verification without effect: `verify` resolves to the claims or throws a
 * {@link SignatureError} saying which check failed; `isValid` resolves to a boolean. The checks
 * are `Signing.ts`'s, the same the effect `Receiver` makes.
 */
import { type SignatureClaims, type SignatureFailure, receiverKeys, verifySignature, type VerifyRequest } from "../Signing.ts"

export type { SignatureClaims, SignatureFailure, VerifyRequest } from "../Signing.ts"

/** The request does not prove it came from the queue. */
export class SignatureError extends Error {
  override readonly name = "SignatureError"
  /** Which check failed: `malformed`, `bad_signature`, `wrong_issuer`, `expired`, `not_yet_valid`, `wrong_url` or `wrong_body`. */
  readonly reason: SignatureFailure

  constructor(reason: SignatureFailure, message: string) {
    super(message)
    this.reason = reason
  }
}

export interface SigningKeyPair {
  /** `current` of `GET /v2/keys`. */
  readonly currentSigningKey: string
  /** `next` of `GET /v2/keys`: requests signed after a rotation still verify. */
  readonly nextSigningKey: string
}

export class Receiver {
  readonly #keys: ReadonlyArray<string>

  constructor(keys: SigningKeyPair) {
    this.#keys = receiverKeys(keys)
  }

  /** The claims of a genuine signature; throws {@link SignatureError} otherwise. */
  async verify(request: VerifyRequest): Promise<SignatureClaims> {
    const verdict = await verifySignature(this.#keys, request)
    if (!verdict.valid) throw new SignatureError(verdict.reason, verdict.message)
    return verdict.claims
  }

  async isValid(request: VerifyRequest): Promise<boolean> {
    return (await verifySignature(this.#keys, request)).valid
  }
}
