/**
 * Building blocks of the queue's request schemas, beside the suite's `Limits.ts`. Definitions only.
 */
import { Schema } from "effect"
import { BoundedInt, Int4, RequestString } from "./Limits.ts"

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

/**
 * Entries per page of a list whose size a client decides (`GET /v2/schedules`: each schedule holds a
 * body of up to `QUEUE_MAX_MESSAGE_BYTES`; `GET /v2/flow-control`: a key for every one in use;
 * `GET /v2/topics` and `GET /v2/queues`: as many as clients create, a group with its endpoints).
 */
export const MAX_LIST_PAGE = 100

/**
 * The query of a list paged by key: `cursor`, the last key of an earlier page (its shape checked by the
 * handler, as the RPC's), and `limit` 1-{@link MAX_LIST_PAGE} (the default).
 */
export const PageQuery = {
  cursor: Schema.optional(RequestString({ maxLength: 100 })),
  limit: Schema.optional(BoundedInt({ minimum: 1, maximum: MAX_LIST_PAGE }))
}

/** The same as an RPC payload: `limit` any 32-bit integer here, its range checked by the handler as over HTTP. */
export const PagePayload = {
  cursor: Schema.optionalKey(RequestString({ maxLength: 100 })),
  limit: Schema.optionalKey(Int4)
}
