/**
 * Branded identifiers: an `OfferId` and a `MessageId` are both strings on the wire, but the type
 * checker keeps them apart, and decoding checks their shape once at the edge.
 *
 * ```ts
 * export const OfferId = brandedId("OfferId", { pattern: /^[a-z0-9-]+:.+$/, example: "mock:123" })
 * export type OfferId = typeof OfferId.Type
 * ```
 */
import { Schema } from "effect"

export const brandedId = <const B extends string>(
  brand: B,
  options?: { readonly pattern?: RegExp | undefined; readonly example?: string | undefined }
) =>
  Schema.String.check(
    Schema.isNonEmpty({ message: `${brand} must not be empty` }),
    ...(options?.pattern === undefined ? [] : [
      Schema.isPattern(options.pattern, {
        message: `Expected a ${brand}${options.example === undefined ? "" : ` like "${options.example}"`}`
      })
    ])
    // The single-brand check of `Schema.brand` cannot see through a generic `B`; callers pass literals.
  ).pipe(Schema.brand<B>(brand as any))

/** The id of one HTTP request, in the `X-Request-Id` header and in every log line of the request. */
export const RequestId = brandedId("RequestId", { pattern: /^[\w.:-]{1,128}$/ })
export type RequestId = typeof RequestId.Type
