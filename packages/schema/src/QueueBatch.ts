/**
 * `POST /v2/batch` (issue 18): several publishes in one request and one transaction. Definitions
 * only; the route is raw like publish (its body is capped before it is read) and the answer of
 * element *i* is what `POST /v2/publish` answers for it (`BatchResult` and the `PublishBatch` RPC
 * are in `Queue.ts`, beside `PublishResult`; this file does not import it, which would be a cycle).
 *
 * All or nothing: a batch with any bad element is refused with 400 naming every bad element by its
 * index (`[3].destination`, `[7].headers.Svc-Retries`) and stores nothing.
 */
import { Schema } from "effect"
import { ApiError } from "./Errors.ts"
import { RequestString, UrlParam } from "./Limits.ts"
import { QueueName } from "./QueueFlow.ts"
import { RequestObject } from "./QueueLimits.ts"

/**
 * One publish of a batch: `destination` a URL or URL group name; `body` text (`bodyEncoding`
 * `utf8`, the default) or bytes as base64 (`bodyEncoding: "base64"`); `headers` every header a
 * publish takes (`Svc-*`, `Content-Type`, ...); `queue` a FIFO queue, as
 * `POST /v2/enqueue/<queue>/<destination>`.
 */
export const BatchElement = RequestObject({
  destination: UrlParam,
  body: Schema.optionalKey(Schema.String),
  bodyEncoding: Schema.optionalKey(Schema.Literals(["utf8", "base64"])),
  headers: Schema.optionalKey(Schema.Record(RequestString({ maxLength: 200 }), Schema.String)),
  queue: Schema.optionalKey(QueueName)
}, "a message, a JSON object with destination and optionally body, bodyEncoding, headers, queue").annotate({ identifier: "BatchElement" })
export type BatchElement = typeof BatchElement.Type

/** A batch as `POST /v2/batch` takes it. */
export const BatchRequest = Schema.Array(BatchElement).annotate({ identifier: "BatchRequest" })

export class BatchTooLarge extends ApiError<BatchTooLarge>()("BatchTooLarge", {
  status: 413,
  fields: { maxBytes: Schema.Number },
  message: ({ maxBytes }) => `The batch is larger than QUEUE_MAX_BATCH_BYTES (${maxBytes} bytes)`
}) {}
