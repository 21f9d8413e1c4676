/**
 * The queue's events log (issue 18): `GET /v2/events` (the `events` group of `QueueApi`, assembled
 * in `Queue.ts`, which adds the queue's auth) and the `ListEvents` RPC. Definitions only.
 *
 * Every state change of a message is one event; the message a callback belongs to also gets
 * `callback_sent` (its callback message was created) and `callback_delivered`.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { Rpc } from "effect/rpc"
import { InvalidRequest } from "./Errors.ts"
import { BoundedInt, IdParam, IntParam, NameParam, RequestString, UrlParam } from "./Limits.ts"
import { QueryParams } from "./QueueLimits.ts"

export const EVENT_STATES = [
  "created",
  "delivering",
  "retry_scheduled",
  "delivered",
  "failed",
  "cancelled",
  "requeued",
  "callback_sent",
  "callback_delivered"
] as const
export const EventState = Schema.Literals(EVENT_STATES)
export type EventState = typeof EventState.Type

/** The largest date JavaScript holds (year 275760), as Unix milliseconds. */
export const MAX_UNIX_MS = 8_640_000_000_000_000
/** A point in time as Unix milliseconds, from 1970 to {@link MAX_UNIX_MS}. */
const UNIX_MS_RANGE = { minimum: 0, maximum: MAX_UNIX_MS }
export const UnixMs = BoundedInt(UNIX_MS_RANGE)

/** Events per page: 100 unless `count`, at most {@link MAX_EVENTS_PAGE}. */
export const MAX_EVENTS_PAGE = 1000
export const DEFAULT_EVENTS_PAGE = 100

export const QueueEvent = Schema.Struct({
  /** Unix ms of the change (the database's clock). */
  time: Schema.Number,
  messageId: Schema.String,
  state: EventState,
  /** The message's destination. */
  url: Schema.String,
  topicName: Schema.optionalKey(Schema.String),
  endpointName: Schema.optionalKey(Schema.String),
  /** The destination's answer (retry_scheduled, delivered, failed), when it answered. */
  responseStatus: Schema.optionalKey(Schema.Int),
  /** Why the attempt failed (retry_scheduled, failed). */
  error: Schema.optionalKey(Schema.String),
  /** Retries used so far. */
  retried: Schema.optionalKey(Schema.Int),
  /** Unix ms when the message is due (created, retry_scheduled, requeued). */
  nextDeliveryTime: Schema.optionalKey(Schema.Number),
  /** callback_sent / callback_delivered: the callback (or failure-callback) message. */
  callbackMessageId: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "QueueEvent" })
export type QueueEvent = typeof QueueEvent.Type

export const EventsPage = Schema.Struct({
  events: Schema.Array(QueueEvent),
  /** Pass as `cursor` for the next (older) page; absent on the last page. */
  cursor: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "EventsPage" })
export type EventsPage = typeof EventsPage.Type

/** An events cursor: opaque to callers (checked by the handler). */
const EventsCursor = RequestString({ maxLength: 32 })
const EVENTS_COUNT_RANGE = { minimum: 1, maximum: MAX_EVENTS_PAGE }
const EventsCount = BoundedInt(EVENTS_COUNT_RANGE)

/** The filters of `GET /v2/events` and `ListEvents`. */
export const EventsQueryFields = {
  messageId: IdParam,
  state: EventState,
  url: UrlParam,
  topicName: NameParam,
  fromDate: UnixMs,
  toDate: UnixMs,
  count: EventsCount,
  cursor: EventsCursor
}

export class EventsGroup extends HttpApiGroup.make("events").add(
  HttpApiEndpoint.get("list", "/v2/events", {
    query: QueryParams({
      messageId: Schema.optional(EventsQueryFields.messageId),
      state: Schema.optional(EventsQueryFields.state),
      url: Schema.optional(EventsQueryFields.url),
      topicName: Schema.optional(EventsQueryFields.topicName),
      // the numbers as a URL writes them (IntParam: digits only); the RPC takes JSON numbers
      fromDate: Schema.optional(IntParam(UNIX_MS_RANGE)),
      toDate: Schema.optional(IntParam(UNIX_MS_RANGE)),
      count: Schema.optional(IntParam(EVENTS_COUNT_RANGE)),
      cursor: Schema.optional(EventsQueryFields.cursor)
    }),
    success: EventsPage,
    error: InvalidRequest
  })
) {}

/** The filters of `GET /v2/events`, newest first. */
export const ListEventsRpc = Rpc.make("ListEvents", {
  payload: {
    messageId: Schema.optionalKey(EventsQueryFields.messageId),
    state: Schema.optionalKey(EventsQueryFields.state),
    url: Schema.optionalKey(EventsQueryFields.url),
    topicName: Schema.optionalKey(EventsQueryFields.topicName),
    fromDate: Schema.optionalKey(EventsQueryFields.fromDate),
    toDate: Schema.optionalKey(EventsQueryFields.toDate),
    count: Schema.optionalKey(EventsQueryFields.count),
    cursor: Schema.optionalKey(EventsQueryFields.cursor)
  },
  success: EventsPage,
  error: InvalidRequest
})
