/**
 * Building blocks of the queue's request schemas, beside the suite's `Limits.ts`. Definitions only.
 */
import { Schema } from "effect"
import { BoundedInt, Int4, IntParam, RequestString } from "./Limits.ts"

/**
 * A JSON object of a request body whose keys are all known. `what` says what is expected in the
 * words of the API ("a JSON object with messageIds, filter or both"), for anything that is not an
 * object; a key it does not have is refused (bodies decode with `STRICT_REQUEST`, Limits.ts) naming the
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
 * A route's query parameters: a name it does not have is refused naming the ones it has (the API
 * decodes queries with `STRICT_REQUEST`, Limits.ts), so a misspelt filter (`?messageid=`) is not a list
 * answered unfiltered.
 */
export const QueryParams = <Fields extends Schema.Struct.Fields>(fields: Fields) =>
  Schema.Struct(fields).annotate({
    messageUnexpectedKey: `is not a parameter of this route (it takes ${Object.keys(fields).join(", ")})`
  })

/**
 * The query of a list paged by key: `cursor`, the last key of an earlier page (its shape checked by the
 * handler, as the RPC's), and `limit` 1-{@link MAX_LIST_PAGE} (the default).
 */
export const PageQuery = QueryParams({
  cursor: Schema.optional(RequestString({ maxLength: 100 })),
  limit: Schema.optional(IntParam({ minimum: 1, maximum: MAX_LIST_PAGE }))
})

/** The same as an RPC payload: `limit` any 32-bit integer here, its range checked by the handler as over HTTP. */
export const PagePayload = {
  cursor: Schema.optionalKey(RequestString({ maxLength: 100 })),
  limit: Schema.optionalKey(Int4)
}

const ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/
const ID_RULE = "an id is 1 to 64 ASCII letters, digits, '_' or '-'"

/**
 * Why `text` is not a message or DLQ id, in words: "expected an id" alone left a caller who sent
 * `%00`, or an invisible `%E2%80%8F` (U+200F) copied along with an id, to guess.
 */
const idProblem = (text: string): string | undefined => {
  if (ID_PATTERN.test(text)) return undefined
  if (text.length === 0) return `must not be empty: ${ID_RULE}`
  if (text.length > 64) return `must be at most 64 characters long: ${ID_RULE}`
  const bad = /[^A-Za-z0-9_-]/u.exec(text)!
  const at = `U+${bad[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")} at position ${bad.index + 1}`
  if (/\p{Cc}/u.test(bad[0])) return `must not contain control characters (${at}): ${ID_RULE}`
  if (/[\p{Cf}\p{Z}\p{Cs}]/u.test(bad[0])) return `must not contain invisible characters or spaces (${at}): ${ID_RULE}`
  return `must not contain ${JSON.stringify(bad[0])} (${at}): ${ID_RULE}`
}

/** A message or DLQ id (path or bulk list): a 400 that names what is wrong with it otherwise. */
export const QueueId = Schema.String.check(
  Schema.makeFilter<string>((text) => idProblem(text) ?? true, { expected: ID_RULE.replace(/^an id is /, "an id of ") })
)
