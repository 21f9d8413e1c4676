/**
 * The rows the Postgres stores read, as schemas: every read decodes its rows (`SqlSchema`) and maps
 * them to the records of `Model.ts`. A row that does not decode is a defect (the schema and the
 * code disagree), never a value typed by assertion.
 */
import { CallbackSettings, DefaultHeaders } from "@svc/schema"
import { Schema } from "effect"
import type { ClaimedMessage, StoredDlqEntry, StoredMessage } from "./Model.ts"

const NullOr = Schema.NullOr

/** Every column of `queue.messages`. */
export const MessageRow = Schema.Struct({
  id: Schema.String,
  kind: Schema.Literals(["message", "callback", "failure_callback"]),
  state: Schema.Literals(["queued", "delivered", "failed", "cancelled"]),
  url: Schema.String,
  method: Schema.String,
  headers: Schema.Record(Schema.String, Schema.String),
  body: Schema.Uint8Array,
  timeout_ms: Schema.Number,
  max_retries: Schema.Number,
  retried: Schema.Number,
  not_before: Schema.Date,
  scheduled_at: Schema.Date,
  created_at: Schema.Date,
  claim_id: NullOr(Schema.String),
  delivered_at: NullOr(Schema.Date),
  last_status: NullOr(Schema.Number),
  last_error: NullOr(Schema.String),
  callback: NullOr(CallbackSettings),
  failure_callback: NullOr(CallbackSettings),
  topic_name: NullOr(Schema.String),
  endpoint_name: NullOr(Schema.String),
  caller_ip: NullOr(Schema.String),
  dedup_id: NullOr(Schema.String),
  source_message_id: NullOr(Schema.String),
  schedule_id: NullOr(Schema.String),
  flow_key: NullOr(Schema.String),
  queue_name: NullOr(Schema.String),
  seq: Schema.BigInt,
  retry_delay: NullOr(Schema.String)
})

const f = MessageRow.fields

/**
 * The columns a claim reads: what a delivery, its retry and its callbacks need (two thirds of the
 * row; in `bench:queue`'s batch run decoding them costs the worker less than half of the whole row).
 */
export const ClaimRow = Schema.Struct({
  id: f.id,
  kind: f.kind,
  url: f.url,
  method: f.method,
  headers: f.headers,
  body: f.body,
  timeout_ms: f.timeout_ms,
  max_retries: f.max_retries,
  retried: f.retried,
  scheduled_at: f.scheduled_at,
  created_at: f.created_at,
  callback: f.callback,
  failure_callback: f.failure_callback,
  topic_name: f.topic_name,
  endpoint_name: f.endpoint_name,
  caller_ip: f.caller_ip,
  schedule_id: f.schedule_id,
  flow_key: f.flow_key,
  queue_name: f.queue_name,
  retry_delay: f.retry_delay
})

/** The columns of {@link ClaimRow} as the record's fields (the part both conversions below share). */
const claimedFields = (row: typeof ClaimRow.Type): Omit<ClaimedMessage, "claimId"> => ({
  id: row.id,
  kind: row.kind,
  url: row.url,
  method: row.method,
  headers: row.headers,
  body: row.body,
  timeoutMs: row.timeout_ms,
  maxRetries: row.max_retries,
  retried: row.retried,
  callback: row.callback,
  failureCallback: row.failure_callback,
  topicName: row.topic_name,
  endpointName: row.endpoint_name,
  callerIp: row.caller_ip,
  scheduledAt: row.scheduled_at,
  createdAt: row.created_at,
  scheduleId: row.schedule_id,
  flowKey: row.flow_key,
  queueName: row.queue_name,
  retryDelay: row.retry_delay
})

export const toClaimedMessage = (row: typeof ClaimRow.Type, claimId: string): ClaimedMessage => ({ ...claimedFields(row), claimId })

export const toStoredMessage = (row: typeof MessageRow.Type): StoredMessage => ({
  ...claimedFields(row),
  state: row.state,
  notBefore: row.not_before,
  claimId: row.claim_id,
  deliveredAt: row.delivered_at,
  lastStatus: row.last_status,
  lastError: row.last_error,
  dedupId: row.dedup_id,
  sourceMessageId: row.source_message_id,
  seq: row.seq
})

/** A message with whether its claim is unexpired and its DLQ entry's id (`GET /v2/messages/<id>`). */
export const MessageViewRow = Schema.Struct({
  ...MessageRow.fields,
  in_flight: Schema.Boolean,
  dlq_id: NullOr(Schema.String)
})

/** A DLQ entry joined with its message (`m.*` and the `dlq` columns renamed). */
export const DlqRow = Schema.Struct({
  ...MessageRow.fields,
  dlq_id: Schema.String,
  seq: Schema.BigInt,
  failed_at: Schema.Date,
  response_status: NullOr(Schema.Number),
  response_headers: NullOr(Schema.Record(Schema.String, Schema.Array(Schema.String))),
  response_body: NullOr(Schema.Uint8Array),
  dlq_error: NullOr(Schema.String)
})

export const toStoredDlqEntry = (row: typeof DlqRow.Type): StoredDlqEntry => ({
  id: row.dlq_id,
  seq: row.seq,
  messageId: row.id,
  failedAt: row.failed_at,
  responseStatus: row.response_status,
  responseHeaders: row.response_headers,
  responseBody: row.response_body,
  lastError: row.dlq_error
})

export const TopicRow = Schema.Struct({
  name: Schema.String,
  headers: DefaultHeaders,
  created_at: Schema.Date,
  updated_at: Schema.Date,
  endpoints: Schema.Array(Schema.Struct({ name: NullOr(Schema.String), url: Schema.String }))
})

export const KeysRow = Schema.Struct({ current_key: Schema.String, next_key: Schema.String })
