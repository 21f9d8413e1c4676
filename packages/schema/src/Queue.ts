/**
 * The message delivery queue's HTTP API (spec/3 part A, DESIGN.md §5 "Queue") and its internal RPC
 * (`QueueRpcs`, served at `POST /rpc`): definitions only.
 *
 * `POST /v2/publish/<destination>` is not part of this `HttpApi`: its configuration travels in
 * open-ended header families (`Svc-Forward-<Name>`, ...) and its body is any bytes, so the service
 * serves it as a raw route and the client (`@svc/queue` `QueueClient`) sends it by hand. Its answer
 * shapes are declared here ({@link PublishResult}) so both sides agree on them, and it is in the
 * queue's OpenAPI document through `QueueOpenApi.ts`.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, HttpApiSecurity, OpenApi } from "effect/http-api"
import { Rpc, RpcGroup, RpcMiddleware } from "effect/rpc"
import { ApiConventions, ApiError, InvalidRequest, ServiceUnavailable, Unauthorized, UnsupportedMediaType } from "./Errors.ts"
import { HealthGroup } from "./Health.ts"
import { RpcDefects } from "./RpcDefects.ts"
import { BoundedInt, IdParam, Int4, IntParam, NameParam, RequestString, STRICT_REQUEST, UrlParam } from "./Limits.ts"
import * as QueueSchedules from "./QueueSchedules.ts"
import * as QueueFlow from "./QueueFlow.ts"
import { BatchElement, BatchTooLarge } from "./QueueBatch.ts"
import * as QueueBulk from "./QueueBulk.ts"
import * as QueueEvents from "./QueueEvents.ts"
import { PagePayload, PageQuery, QueryParams, QueueId, RequestObject } from "./QueueLimits.ts"

// -----------------------------------------------------------------------------
// Publish answers
// -----------------------------------------------------------------------------

/** One enqueued message. `deduplicated` is set when a `Svc-Deduplication-Id` was seen before. */
export const PublishedMessage = Schema.Struct({
  messageId: Schema.String,
  url: Schema.optionalKey(Schema.String),
  endpointName: Schema.optionalKey(Schema.String),
  deduplicated: Schema.optionalKey(Schema.Boolean)
}).annotate({ identifier: "PublishedMessage" })
export type PublishedMessage = typeof PublishedMessage.Type

/** A publish to a URL answers one object; a publish to a URL group one entry per endpoint. */
export const PublishResult = Schema.Union([PublishedMessage, Schema.Array(PublishedMessage)])
export type PublishResult = typeof PublishResult.Type

// -----------------------------------------------------------------------------
// Records
// -----------------------------------------------------------------------------

export const MessageState = Schema.Literals(["queued", "delivering", "delivered", "failed", "cancelled"])
export type MessageState = typeof MessageState.Type

/** How a callback (or failure callback) of a message is delivered. */
export const CallbackSettings = Schema.Struct({
  url: Schema.String,
  method: Schema.String,
  retries: Schema.Int,
  timeoutMs: Schema.Int,
  delayMs: Schema.Int,
  headers: Schema.Record(Schema.String, Schema.String)
}).annotate({ identifier: "CallbackSettings" })
export type CallbackSettings = typeof CallbackSettings.Type

export const Message = Schema.Struct({
  messageId: Schema.String,
  state: MessageState,
  /** `message`, or `callback` / `failure_callback` for the messages the queue sends itself. */
  kind: Schema.Literals(["message", "callback", "failure_callback"]),
  url: Schema.String,
  method: Schema.String,
  header: Schema.Record(Schema.String, Schema.String),
  /** The body, base64-encoded. */
  body: Schema.String,
  topicName: Schema.optionalKey(Schema.String),
  endpointName: Schema.optionalKey(Schema.String),
  retried: Schema.Int,
  maxRetries: Schema.Int,
  timeoutMs: Schema.Int,
  /** Unix ms of the next (or last) delivery attempt. */
  notBefore: Schema.Number,
  createdAt: Schema.Number,
  deliveredAt: Schema.optionalKey(Schema.Number),
  lastStatus: Schema.optionalKey(Schema.Int),
  lastError: Schema.optionalKey(Schema.String),
  deduplicationId: Schema.optionalKey(Schema.String),
  callback: Schema.optionalKey(CallbackSettings),
  failureCallback: Schema.optionalKey(CallbackSettings),
  dlqId: Schema.optionalKey(Schema.String),
  callerIP: Schema.optionalKey(Schema.String),
  /** `Svc-Retry-Delay`: the delay before each retry, an expression of `retried` (ms). */
  retryDelay: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "Message" })
export type Message = typeof Message.Type

export const DlqMessage = Schema.Struct({
  dlqId: Schema.String,
  messageId: Schema.String,
  url: Schema.String,
  method: Schema.String,
  header: Schema.Record(Schema.String, Schema.String),
  body: Schema.String,
  topicName: Schema.optionalKey(Schema.String),
  endpointName: Schema.optionalKey(Schema.String),
  retried: Schema.Int,
  maxRetries: Schema.Int,
  createdAt: Schema.Number,
  failedAt: Schema.Number,
  responseStatus: Schema.optionalKey(Schema.Int),
  responseHeader: Schema.optionalKey(Schema.Record(Schema.String, Schema.Array(Schema.String))),
  /** The destination's last answer, base64-encoded and truncated over QUEUE_MAX_MESSAGE_BYTES. */
  responseBody: Schema.optionalKey(Schema.String),
  lastError: Schema.optionalKey(Schema.String),
  callerIP: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "DlqMessage" })
export type DlqMessage = typeof DlqMessage.Type

export const DlqPage = Schema.Struct({
  messages: Schema.Array(DlqMessage),
  /** Pass as `cursor` for the next page; absent on the last page. */
  cursor: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "DlqPage" })
export type DlqPage = typeof DlqPage.Type

export const HeaderValue = Schema.Union([Schema.String, Schema.Array(Schema.String)])
export const DefaultHeaders = Schema.Record(Schema.String, HeaderValue)
export type DefaultHeaders = typeof DefaultHeaders.Type

export const Endpoint = Schema.Struct({
  name: Schema.optionalKey(Schema.String),
  url: Schema.String
}).annotate({ identifier: "Endpoint" })
export type Endpoint = typeof Endpoint.Type

/** An endpoint as a request gives it: the same fields, bounded (no NUL, a name of 200, a URL of 2,048 characters). */
export const EndpointInput = RequestObject({
  name: Schema.optionalKey(NameParam),
  url: UrlParam
}, "an endpoint, a JSON object with url and optionally name").annotate({ identifier: "EndpointInput" })

export const Topic = Schema.Struct({
  name: Schema.String,
  endpoints: Schema.Array(Endpoint),
  headers: DefaultHeaders,
  createdAt: Schema.Number,
  updatedAt: Schema.Number
}).annotate({ identifier: "Topic" })
export type Topic = typeof Topic.Type

export const TopicList = Schema.Struct({
  topics: Schema.Array(Topic),
  /** Pass as `cursor` for the next page; absent on the last page. */
  cursor: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "TopicList" })
export type TopicList = typeof TopicList.Type

/** 1-100 letters, digits, `.`, `_` or `-`; not `.` or `..`, which a URL path cannot carry as a segment. */
export const TOPIC_NAME_PATTERN = /^(?!\.\.?$)[A-Za-z0-9._-]{1,100}$/
export const TopicName = Schema.String.check(
  Schema.isPattern(TOPIC_NAME_PATTERN, {
    message: "Expected a group name of letters, digits, '.', '_' or '-' (not '.' or '..')"
  })
)

export const SigningKeys = Schema.Struct({ current: Schema.String, next: Schema.String }).annotate({
  identifier: "SigningKeys"
})
export type SigningKeys = typeof SigningKeys.Type

// -----------------------------------------------------------------------------
// Errors
// -----------------------------------------------------------------------------

export class MessageNotFound extends ApiError<MessageNotFound>()("MessageNotFound", {
  status: 404,
  fields: { messageId: Schema.String },
  message: ({ messageId }) => `No message with id ${messageId}`
}) {}

export class MessageNotCancellable extends ApiError<MessageNotCancellable>()("MessageNotCancellable", {
  status: 409,
  fields: { messageId: Schema.String, state: Schema.String },
  message: ({ messageId, state }) => `Message ${messageId} is ${state} and can no longer be cancelled`
}) {}

export class DlqMessageNotFound extends ApiError<DlqMessageNotFound>()("DlqMessageNotFound", {
  status: 404,
  fields: { dlqId: Schema.String },
  message: ({ dlqId }) => `No dead-letter message with id ${dlqId}`
}) {}

export class MessageTooLarge extends ApiError<MessageTooLarge>()("MessageTooLarge", {
  status: 413,
  fields: { maxBytes: Schema.Number },
  message: ({ maxBytes }) => `The message body is larger than QUEUE_MAX_MESSAGE_BYTES (${maxBytes} bytes)`
}) {}

export class TopicNotFound extends ApiError<TopicNotFound>()("TopicNotFound", {
  status: 404,
  fields: { name: Schema.String },
  message: ({ name }) => `No URL group named ${name}`
}) {}

// -----------------------------------------------------------------------------
// API
// -----------------------------------------------------------------------------

/** `Authorization: Bearer <QUEUE_TOKEN>`; 503 when the server has no QUEUE_TOKEN. */
export class QueueAuth extends HttpApiMiddleware.Service<QueueAuth, { provides: never; requires: never }>()(
  "@svc/schema/Queue/QueueAuth",
  { security: { bearer: HttpApiSecurity.bearer }, error: [Unauthorized, ServiceUnavailable], requiredForClient: true }
) {}

/**
 * The largest JSON body of a `QueueApi` route (bulk selections, URL group endpoints, queues, flow
 * control): 1,000 ids are ~70 kB. Without a cap a 30 MB body was read whole into memory.
 * (`POST /v2/batch` and publishes have their own caps: QUEUE_MAX_BATCH_BYTES, QUEUE_MAX_MESSAGE_BYTES.)
 */
export const MAX_JSON_BODY_BYTES = 1024 * 1024

export class RequestTooLarge extends ApiError<RequestTooLarge>()("RequestTooLarge", {
  status: 413,
  fields: { maxBytes: Schema.Number },
  message: ({ maxBytes }) => `The request body is larger than ${maxBytes} bytes, more than any queue request needs`
}) {}

/**
 * Every JSON body of `QueueApi` is read by the suite's rules (`@svc/platform` JsonBody.ts) before its
 * payload is decoded: a `Content-Type` charset other than UTF-8 is 415, unread; at most
 * {@link MAX_JSON_BODY_BYTES} (413 beyond), UTF-8, well-formed strings, a JSON object; a 400 naming
 * the problem otherwise. Put inside `QueueAuth` (added before it), so a request without the token
 * learns nothing of its body.
 */
export class QueueJsonBody extends HttpApiMiddleware.Service<QueueJsonBody, { provides: never; requires: never }>()(
  "@svc/schema/Queue/QueueJsonBody",
  { error: [InvalidRequest, RequestTooLarge, UnsupportedMediaType] }
) {}

export class MessagesGroup extends HttpApiGroup.make("messages").add(
  HttpApiEndpoint.get("get", "/v2/messages/:messageId", {
    params: { messageId: QueueId },
    success: Message,
    error: MessageNotFound
  }),
  HttpApiEndpoint.delete("cancel", "/v2/messages/:messageId", {
    params: { messageId: QueueId },
    success: HttpApiSchema.NoContent,
    error: [MessageNotFound, MessageNotCancellable]
  }),
  /** Bulk cancel by ids and/or a filter, at most `MAX_BULK` per call (QueueBulk.ts). */
  HttpApiEndpoint.delete("cancelMany", "/v2/messages", {
    payload: QueueBulk.CancelMessagesRequest,
    success: QueueBulk.CancelledMessages,
    error: InvalidRequest
  })
).middleware(QueueJsonBody).middleware(QueueAuth) {}

/** A DLQ page cursor: the digits of a sequence number, from an earlier page (checked by the handler). */
const DlqCursor = RequestString({ maxLength: 32 })
/** Messages per DLQ page. */
const DlqLimit = IntParam({ minimum: 1, maximum: 100 })
/** An HTTP status, as a destination answered (the DLQ filter). */
const HttpStatus = IntParam({ minimum: 100, maximum: 599 })

export class DlqGroup extends HttpApiGroup.make("dlq").add(
  HttpApiEndpoint.get("list", "/v2/dlq", {
    query: QueryParams({
      cursor: Schema.optional(DlqCursor),
      limit: Schema.optional(DlqLimit),
      url: Schema.optional(UrlParam),
      topicName: Schema.optional(NameParam),
      responseStatus: Schema.optional(HttpStatus),
      messageId: Schema.optional(IdParam)
    }),
    success: DlqPage,
    error: InvalidRequest
  }),
  HttpApiEndpoint.get("get", "/v2/dlq/:dlqId", {
    params: { dlqId: QueueId },
    success: DlqMessage,
    error: DlqMessageNotFound
  }),
  HttpApiEndpoint.post("retry", "/v2/dlq/:dlqId/retry", {
    params: { dlqId: QueueId },
    success: PublishedMessage,
    error: DlqMessageNotFound
  }),
  HttpApiEndpoint.delete("delete", "/v2/dlq/:dlqId", {
    params: { dlqId: QueueId },
    success: HttpApiSchema.NoContent,
    error: DlqMessageNotFound
  }),
  /** Bulk retry by ids and/or a filter, at most `MAX_BULK` per call (QueueBulk.ts). */
  HttpApiEndpoint.post("retryMany", "/v2/dlq/retry", {
    payload: QueueBulk.DlqSelection,
    success: QueueBulk.RetriedDlq,
    error: InvalidRequest
  }),
  /** Bulk delete by ids and/or a filter, at most `MAX_BULK` per call (QueueBulk.ts). */
  HttpApiEndpoint.delete("deleteMany", "/v2/dlq", {
    payload: QueueBulk.DlqSelection,
    success: QueueBulk.DeletedDlq,
    error: InvalidRequest
  })
).middleware(QueueJsonBody).middleware(QueueAuth) {}

export const EndpointsPayload = RequestObject({ endpoints: Schema.Array(EndpointInput) }, "a JSON object with endpoints")
/** The endpoints to remove, each by name or URL: an empty list, or an endpoint naming neither, would remove nothing. */
export const RemoveEndpointsPayload = RequestObject({
  endpoints: Schema.Array(
    RequestObject({ name: Schema.optionalKey(NameParam), url: Schema.optionalKey(UrlParam) }, "an endpoint, a JSON object with name or url")
      .check(Schema.makeFilter((endpoint) =>
        endpoint.name !== undefined || endpoint.url !== undefined || "must give the name or url of the endpoint to remove"
      ))
  ).check(Schema.isMinLength(1, { message: "must list at least one endpoint to remove, each {\"name\"} or {\"url\"}" }))
}, "a JSON object with endpoints")

export class TopicsGroup extends HttpApiGroup.make("topics").add(
  HttpApiEndpoint.get("list", "/v2/topics", { query: PageQuery, success: TopicList, error: InvalidRequest }),
  HttpApiEndpoint.get("get", "/v2/topics/:name", { params: { name: TopicName }, success: Topic, error: TopicNotFound }),
  HttpApiEndpoint.post("upsertEndpoints", "/v2/topics/:name/endpoints", {
    params: { name: TopicName },
    payload: EndpointsPayload,
    success: Topic,
    error: InvalidRequest
  }),
  HttpApiEndpoint.delete("removeEndpoints", "/v2/topics/:name/endpoints", {
    params: { name: TopicName },
    payload: RemoveEndpointsPayload,
    success: Topic,
    error: TopicNotFound
  }),
  HttpApiEndpoint.patch("setHeaders", "/v2/topics/:name", {
    params: { name: TopicName },
    payload: RequestObject({ headers: DefaultHeaders }, "a JSON object with headers"),
    success: Topic,
    error: [TopicNotFound, InvalidRequest]
  }),
  HttpApiEndpoint.delete("delete", "/v2/topics/:name", {
    params: { name: TopicName },
    success: HttpApiSchema.NoContent,
    error: TopicNotFound
  })
).middleware(QueueJsonBody).middleware(QueueAuth) {}

export class KeysGroup extends HttpApiGroup.make("keys").add(
  HttpApiEndpoint.get("get", "/v2/keys", { success: SigningKeys }),
  /** Takes no body (none, or `{}`): one with options it does not have is refused, nothing rotated; over MAX_JSON_BODY_BYTES 413, unread. */
  HttpApiEndpoint.post("rotate", "/v2/keys/rotate", { success: SigningKeys, error: [InvalidRequest, RequestTooLarge] })
).middleware(QueueAuth) {}

export class QueueApi extends HttpApi.make("queue")
  .add(HealthGroup)
  .add(MessagesGroup)
  .add(DlqGroup)
  .add(TopicsGroup)
  .add(KeysGroup)
  .add(QueueSchedules.SchedulesGroup.middleware(QueueAuth))
  .add(QueueFlow.FlowControlGroup.middleware(QueueAuth))
  .add(QueueFlow.QueuesGroup.middleware(QueueJsonBody).middleware(QueueAuth))
  .add(QueueEvents.EventsGroup.middleware(QueueAuth))
  .annotateMerge(ApiConventions)
  // Every JSON body: an unknown key is refused, not ignored (QueueLimits.ts, `RequestObject`); so is
  // an unknown query parameter of a route that takes some: `GET /v2/events?messageid=…` (a misspelt
  // filter) answered every event as if unfiltered
  .annotate(HttpApi.PayloadParseOptions, STRICT_REQUEST)
  .annotate(HttpApi.QueryParseOptions, STRICT_REQUEST)
  .annotateMerge(OpenApi.annotations({
    title: "svc queue",
    description: "Message delivery with retries, callbacks, a dead-letter queue, URL groups, schedules, flow control, " +
      "FIFO queues and signatures. Its whole document, raw publish routes included, is `queueOpenApi()` (QueueOpenApi.ts)."
  }))
{}

// -----------------------------------------------------------------------------
// Internal RPC (served at POST /rpc, NDJSON, behind QUEUE_TOKEN)
// -----------------------------------------------------------------------------

/**
 * `Authorization: Bearer <QUEUE_TOKEN>` on the `/rpc` request, checked for every procedure. It is an
 * RPC middleware (not a check in front of the route) so that its refusals reach clients as the typed
 * `Unauthorized` / `ServiceUnavailable` of each procedure instead of an opaque transport error.
 */
export class QueueRpcAuth extends RpcMiddleware.Service<QueueRpcAuth>()("@svc/schema/Queue/QueueRpcAuth", {
  error: Schema.Union([Unauthorized, ServiceUnavailable])
}) {}

/**
 * Like `POST /v2/publish/<destination>`: `headers` are the same configuration headers (`Svc-Retries`,
 * `Svc-Delay`, `Svc-Forward-<Name>`, `Content-Type`, ...), `body` is delivered byte for byte.
 */
export const PublishRpc = Rpc.make("Publish", {
  payload: {
    /** A full http(s) URL or a URL group name. */
    destination: UrlParam,
    body: Schema.optionalKey(Schema.Uint8Array),
    headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.String))
  },
  success: PublishResult,
  error: Schema.Union([InvalidRequest, MessageTooLarge])
})

/** `POST /v2/batch`'s answer: element *i* is what `POST /v2/publish` answers for element *i*. */
export const BatchResult = Schema.Array(PublishResult).annotate({ identifier: "BatchResult" })
export type BatchResult = typeof BatchResult.Type

/**
 * `POST /v2/batch` over the RPC: the same elements (`QueueBatch.ts`), rules and answers; an unknown
 * key is refused here too (`STRICT_REQUEST`, on every procedure of `QueueRpcs`).
 */
export const PublishBatchRpc = Rpc.make("PublishBatch", {
  payload: { messages: Schema.Array(BatchElement) },
  success: BatchResult,
  error: Schema.Union([InvalidRequest, BatchTooLarge])
})

export const GetMessageRpc = Rpc.make("GetMessage", {
  payload: { messageId: IdParam },
  success: Message,
  error: MessageNotFound
})

/** The filters of `GET /v2/dlq`; `limit` 1-100 (default 50). */
export const ListDlqRpc = Rpc.make("ListDlq", {
  payload: {
    cursor: Schema.optionalKey(DlqCursor),
    // the ranges (1-100, 100-599) are checked by the handler: an out-of-range value is a typed InvalidRequest
    limit: Schema.optionalKey(Int4),
    url: Schema.optionalKey(UrlParam),
    topicName: Schema.optionalKey(NameParam),
    responseStatus: Schema.optionalKey(Int4),
    messageId: Schema.optionalKey(IdParam)
  },
  success: DlqPage,
  error: InvalidRequest
})

/** Re-enqueues a dead-lettered message (its retries start over) and removes it from the DLQ. */
export const RetryDlqRpc = Rpc.make("RetryDlq", {
  payload: { dlqId: IdParam },
  success: PublishedMessage,
  error: DlqMessageNotFound
})

export const DeleteDlqRpc = Rpc.make("DeleteDlq", { payload: { dlqId: IdParam }, error: DlqMessageNotFound })

/** A page of URL groups by name, as `GET /v2/topics`; `limit` 1-100 (the default), checked by the handler. */
export const ListTopicsRpc = Rpc.make("ListTopics", {
  payload: PagePayload,
  success: TopicList,
  error: InvalidRequest
})

export const GetTopicRpc = Rpc.make("GetTopic", { payload: { name: NameParam }, success: Topic, error: TopicNotFound })

export const DeleteTopicRpc = Rpc.make("DeleteTopic", { payload: { name: NameParam }, error: TopicNotFound })

/**
 * Adds endpoints to a URL group (created when new); an endpoint with the same name or URL is
 * replaced. An unknown key is refused, as on `POST /v2/topics/<name>/endpoints`.
 */
export const UpsertEndpointsRpc = Rpc.make("UpsertEndpoints", {
  payload: { name: NameParam, endpoints: Schema.Array(EndpointInput) },
  success: Topic,
  error: InvalidRequest
})

/** The queue's internal RPC: what `svc queue` and the suite's services call. */
export class QueueRpcs extends RpcGroup.make(
  PublishRpc,
  GetMessageRpc,
  ListDlqRpc,
  RetryDlqRpc,
  DeleteDlqRpc,
  ListTopicsRpc,
  GetTopicRpc,
  DeleteTopicRpc,
  UpsertEndpointsRpc,
  PublishBatchRpc,
  QueueSchedules.AddScheduleRpc,
  QueueSchedules.ListSchedulesRpc,
  QueueSchedules.GetScheduleRpc,
  QueueSchedules.PauseScheduleRpc,
  QueueSchedules.ResumeScheduleRpc,
  QueueSchedules.DeleteScheduleRpc,
  QueueEvents.ListEventsRpc,
  QueueBulk.CancelMessagesRpc,
  QueueBulk.RetryDlqEntriesRpc,
  QueueBulk.DeleteDlqEntriesRpc
).middleware(RpcDefects).middleware(QueueRpcAuth)
  // every payload as strict as the HTTP API's bodies and queries: a misspelt key (`header` for
  // `headers` in Publish, `urll` in ListDlq) was ignored, publishing without the delay asked for or
  // answering the list unfiltered
  .annotateRpcs(Rpc.ParseOptions, STRICT_REQUEST) {}
