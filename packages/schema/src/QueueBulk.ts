/**
 * Bulk operations of the queue (issue 18): cancel messages, retry and delete DLQ entries, by ids or
 * by a filter. Each call handles at most {@link MAX_BULK} and says whether more match (`more`), so a
 * caller repeats until `more` is false; a repeat changes nothing that is already done.
 * The endpoints are in the `messages` and `dlq` groups of `QueueApi` (Queue.ts); the RPCs in
 * `QueueRpcs`. Definitions only.
 */
import { Schema } from "effect"
import { Rpc } from "effect/rpc"
import { InvalidRequest } from "./Errors.ts"
import { BoundedArray, BoundedInt, NameParam, UrlParam } from "./Limits.ts"
import { UnixMs } from "./QueueEvents.ts"
import { QueueId, RequestObject } from "./QueueLimits.ts"

/** Most messages or DLQ entries one bulk call changes (and most ids it takes). */
export const MAX_BULK = 1000

/** Queued messages matching every field given. `fromDate`/`toDate`: created at, Unix ms, inclusive. */
export const MessageFilter = RequestObject({
  url: Schema.optionalKey(UrlParam),
  topicName: Schema.optionalKey(NameParam),
  queue: Schema.optionalKey(NameParam),
  fromDate: Schema.optionalKey(UnixMs),
  toDate: Schema.optionalKey(UnixMs),
  scheduleId: Schema.optionalKey(NameParam),
  flowControlKey: Schema.optionalKey(NameParam)
}, "a JSON object of filter fields").annotate({ identifier: "MessageFilter" })
export type MessageFilter = typeof MessageFilter.Type

/** Ids, a filter, or both (then the ids that match the filter). One of them is required. */
export const CancelMessagesRequest = RequestObject({
  messageIds: Schema.optionalKey(BoundedArray(QueueId, MAX_BULK)),
  filter: Schema.optionalKey(MessageFilter)
}, "a JSON object with messageIds, filter or both").annotate({ identifier: "CancelMessagesRequest" })
export type CancelMessagesRequest = typeof CancelMessagesRequest.Type

export const CancelledMessages = Schema.Struct({
  /** Messages this call cancelled. */
  cancelled: Schema.Int,
  /** More queued messages match: call again. */
  more: Schema.Boolean
}).annotate({ identifier: "CancelledMessages" })
export type CancelledMessages = typeof CancelledMessages.Type

/** DLQ entries matching every field given. `fromDate`/`toDate`: failed at, Unix ms, inclusive. */
export const DlqFilter = RequestObject({
  url: Schema.optionalKey(UrlParam),
  topicName: Schema.optionalKey(NameParam),
  responseStatus: Schema.optionalKey(BoundedInt({ minimum: 100, maximum: 599 })),
  fromDate: Schema.optionalKey(UnixMs),
  toDate: Schema.optionalKey(UnixMs)
}, "a JSON object of filter fields").annotate({ identifier: "DlqFilter" })
export type DlqFilter = typeof DlqFilter.Type

export const DlqSelection = RequestObject({
  dlqIds: Schema.optionalKey(BoundedArray(QueueId, MAX_BULK)),
  filter: Schema.optionalKey(DlqFilter)
}, "a JSON object with dlqIds, filter or both").annotate({ identifier: "DlqSelection" })
export type DlqSelection = typeof DlqSelection.Type

export const RetriedDlq = Schema.Struct({
  /** Entries this call re-enqueued (their messages are queued again, retries starting over). */
  retried: Schema.Int,
  more: Schema.Boolean
}).annotate({ identifier: "RetriedDlq" })
export type RetriedDlq = typeof RetriedDlq.Type

export const DeletedDlq = Schema.Struct({
  deleted: Schema.Int,
  more: Schema.Boolean
}).annotate({ identifier: "DeletedDlq" })
export type DeletedDlq = typeof DeletedDlq.Type

// The RPCs refuse unknown keys as the HTTP API does (QueueRpcs: STRICT_REQUEST): a misspelt filter field must not select everything.
export const CancelMessagesRpc = Rpc.make("CancelMessages", {
  payload: CancelMessagesRequest,
  success: CancelledMessages,
  error: InvalidRequest
})

export const RetryDlqEntriesRpc = Rpc.make("RetryDlqEntries", {
  payload: DlqSelection,
  success: RetriedDlq,
  error: InvalidRequest
})

export const DeleteDlqEntriesRpc = Rpc.make("DeleteDlqEntries", {
  payload: DlqSelection,
  success: DeletedDlq,
  error: InvalidRequest
})
