/**
 * Building blocks of the queue's request schemas, beside the suite's `Limits.ts`. Definitions only.
 */
import { Schema } from "effect"

/** The request's strictness: the parse options `QueueApi` decodes every JSON body with (`Queue.ts`). */
export const STRICT_REQUEST = { errors: "all", reportInput: true, onExcessProperty: "error" } as const

/**
 * A JSON object of a request body whose keys are all known. `what` says what is expected in the
 * words of the API ("a JSON object with messageIds, filter or both"), for anything that is not an
 * object; a key it does not have is refused (bodies decode with {@link STRICT_REQUEST}) naming the
 * keys it does have. Ignoring an unknown key is what made a misspelt filter field (`Url` for `url`)
 * widen a bulk cancel to every message.
 */
export const RequestObject = <Fields extends Schema.Struct.Fields>(fields: Fields, what: string) =>
  Schema.Struct(fields).annotate({
    message: `expected ${what}`,
    messageUnexpectedKey: `is not a known field (expected ${Object.keys(fields).join(", ")})`
  })
