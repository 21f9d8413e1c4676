/**
 * The queue's flow control and FIFO queues (issue 17): the `flowControl` and `queues` groups of
 * `QueueApi` (assembled in `Queue.ts`, which adds the queue's auth middleware), with their records.
 * Definitions only.
 *
 * `POST /v2/enqueue/<queue>/<destination>` is not part of the `HttpApi`: like publish, its
 * configuration travels in open-ended header families and its body is any bytes, so the service
 * serves it as a raw route answering what a publish answers.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { ApiError, InvalidRequest } from "./Errors.ts"
import { BoundedInt } from "./Limits.ts"
import { PageQuery, RequestObject } from "./QueueLimits.ts"

/**
 * A flow-control key: 1-100 letters, digits, `.`, `_`, `-` or `:`; not `.` or `..`, which a URL path
 * cannot carry as a segment (clients normalise them away).
 */
export const FLOW_CONTROL_KEY_PATTERN = /^(?!\.\.?$)[A-Za-z0-9._:-]{1,100}$/
export const FlowControlKey = Schema.String.check(
  Schema.isPattern(FLOW_CONTROL_KEY_PATTERN, {
    message: "Expected a flow-control key of 1-100 letters, digits, '.', '_', '-' or ':' (not '.' or '..')"
  })
)

/** A queue name: 1-100 letters, digits, `.`, `_` or `-`; not `.` or `..` (as above). */
export const QUEUE_NAME_PATTERN = /^(?!\.\.?$)[A-Za-z0-9._-]{1,100}$/
export const QueueName = Schema.String.check(
  Schema.isPattern(QUEUE_NAME_PATTERN, { message: "Expected a queue name of 1-100 letters, digits, '.', '_' or '-' (not '.' or '..')" })
)

/** Most deliveries of one queue in flight at a time. */
export const MAX_QUEUE_PARALLELISM = 100

export const FlowControl = Schema.Struct({
  flowControlKey: Schema.String,
  /** At most this many deliveries in flight; absent: no limit. */
  parallelism: Schema.optionalKey(Schema.Int),
  /** At most this many deliveries started per `periodMs`; absent: no limit. */
  rate: Schema.optionalKey(Schema.Int),
  periodMs: Schema.Int,
  /** Queued messages of the key not being delivered (due or not). */
  waiting: Schema.Int,
  /** Deliveries in flight (claimed, lease unexpired). */
  inFlight: Schema.Int,
  /** Deliveries started within the last `periodMs` (counted only when the key has a rate). */
  startedInPeriod: Schema.Int,
  paused: Schema.Boolean
}).annotate({ identifier: "FlowControl" })
export type FlowControl = typeof FlowControl.Type

export const FlowControlList = Schema.Struct({
  flowControls: Schema.Array(FlowControl),
  /** Pass as `cursor` for the next page; absent on the last page. */
  cursor: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "FlowControlList" })
export type FlowControlList = typeof FlowControlList.Type

export const FifoQueue = Schema.Struct({
  name: Schema.String,
  parallelism: Schema.Int,
  paused: Schema.Boolean,
  /** Queued messages not being delivered (waiting their turn or a retry). */
  waiting: Schema.Int,
  inFlight: Schema.Int,
  createdAt: Schema.Number,
  updatedAt: Schema.Number
}).annotate({ identifier: "FifoQueue" })
export type FifoQueue = typeof FifoQueue.Type

export const FifoQueueList = Schema.Struct({
  queues: Schema.Array(FifoQueue),
  /** Pass as `cursor` for the next page; absent on the last page. */
  cursor: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "FifoQueueList" })

export const UpsertQueuePayload = RequestObject({
  queueName: QueueName,
  /** 1 (default: strict order, one at a time) to 100. */
  parallelism: Schema.optionalKey(BoundedInt({ minimum: 1, maximum: MAX_QUEUE_PARALLELISM }))
}, "a JSON object with queueName and optionally parallelism").annotate({ identifier: "UpsertQueuePayload" })

export class FlowControlNotFound extends ApiError<FlowControlNotFound>()("FlowControlNotFound", {
  status: 404,
  fields: { flowControlKey: Schema.String },
  message: ({ flowControlKey }) => `No flow-control key ${flowControlKey} (a key exists once a message was published with it)`
}) {}

export class FifoQueueNotFound extends ApiError<FifoQueueNotFound>()("FifoQueueNotFound", {
  status: 404,
  fields: { name: Schema.String },
  message: ({ name }) => `No queue named ${name}`
}) {}

export class FlowControlGroup extends HttpApiGroup.make("flowControl").add(
  HttpApiEndpoint.get("list", "/v2/flow-control", { query: PageQuery, success: FlowControlList, error: InvalidRequest }),
  HttpApiEndpoint.get("get", "/v2/flow-control/:key", {
    params: { key: FlowControlKey },
    success: FlowControl,
    error: FlowControlNotFound
  }),
  HttpApiEndpoint.post("pause", "/v2/flow-control/:key/pause", {
    params: { key: FlowControlKey },
    success: FlowControl,
    error: FlowControlNotFound
  }),
  HttpApiEndpoint.post("resume", "/v2/flow-control/:key/resume", {
    params: { key: FlowControlKey },
    success: FlowControl,
    error: FlowControlNotFound
  })
) {}

export class QueuesGroup extends HttpApiGroup.make("queues").add(
  HttpApiEndpoint.post("upsert", "/v2/queues", { payload: UpsertQueuePayload, success: FifoQueue, error: InvalidRequest }),
  HttpApiEndpoint.get("list", "/v2/queues", { query: PageQuery, success: FifoQueueList, error: InvalidRequest }),
  HttpApiEndpoint.get("get", "/v2/queues/:name", { params: { name: QueueName }, success: FifoQueue, error: FifoQueueNotFound }),
  HttpApiEndpoint.delete("delete", "/v2/queues/:name", {
    params: { name: QueueName },
    success: HttpApiSchema.NoContent,
    error: FifoQueueNotFound
  }),
  HttpApiEndpoint.post("pause", "/v2/queues/:name/pause", { params: { name: QueueName }, success: FifoQueue, error: FifoQueueNotFound }),
  HttpApiEndpoint.post("resume", "/v2/queues/:name/resume", { params: { name: QueueName }, success: FifoQueue, error: FifoQueueNotFound })
) {}
