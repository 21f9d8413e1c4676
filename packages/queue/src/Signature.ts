/**
 * `Svc-Signature` for effect code: the {@link Receiver} whose `verify` is an `Effect` failing with
 * {@link InvalidSignature}. The signature itself (claims, key rotation, jose) is `Signing.ts`; apps
 * without effect use the Promise entrypoint's `Receiver` and handler helpers (`@svc/queue/client`).
 */
import { Effect, Schema } from "effect"
import { type SignatureClaims as Claims, receiverKeys, verifySignature, type VerifyRequest } from "./Signing.ts"

export { bodyHash, ISSUER, newSigningKey, sign, verifySignature, type VerifyRequest } from "./Signing.ts"

export const SignatureClaims = Schema.Struct({
  iss: Schema.String,
  sub: Schema.String,
  iat: Schema.Number,
  nbf: Schema.Number,
  exp: Schema.Number,
  jti: Schema.String,
  body: Schema.String
})
export type SignatureClaims = Claims

/** The signature does not prove the request came from the queue; `reason` says which check failed. */
export class InvalidSignature extends Schema.TaggedError<InvalidSignature>()("InvalidSignature", {
  reason: Schema.Literals(["malformed", "bad_signature", "wrong_issuer", "expired", "not_yet_valid", "wrong_url", "wrong_body"]),
  message: Schema.String
}) {}

/**
 * Verifies `Svc-Signature` in a receiving app:
 *
 * ```ts
 * const receiver = new Receiver({ currentSigningKey: process.env.SVC_CURRENT_SIGNING_KEY!, nextSigningKey: process.env.SVC_NEXT_SIGNING_KEY! })
 * yield* receiver.verify({ signature, body, url: "https://example.com/hook" })                            // Effect
 * const ok = await receiver.isValid({ signature: req.headers["svc-signature"], body: rawBody })          // plain Node
 * ```
 */
export class Receiver {
  readonly #keys: ReadonlyArray<string>
  constructor(options: { readonly currentSigningKey: string; readonly nextSigningKey: string }) {
    this.#keys = receiverKeys(options)
  }

  /** The claims when the signature is genuine; fails with {@link InvalidSignature} otherwise. */
  verify(request: VerifyRequest): Effect.Effect<SignatureClaims, InvalidSignature> {
    return Effect.flatMap(
      Effect.promise(() => verifySignature(this.#keys, request)),
      (verdict) =>
        verdict.valid
          ? Effect.succeed(verdict.claims)
          : Effect.fail(new InvalidSignature({ reason: verdict.reason, message: verdict.message }))
    )
  }

  /** `verify` for code that does not use Effect. */
  async isValid(request: VerifyRequest): Promise<boolean> {
    return (await verifySignature(this.#keys, request)).valid
  }
}
