/**
 * The records the Promise client answers with, as plain object types. The routes' own records come
 * from their one definition in `@svc/schema` (type-only imports: nothing of effect is loaded); the
 * batch, events and bulk shapes are the documented wire formats of issue 18.
 */
import type * as Schema from "@svc/schema"
import type { PublishOptions } from "../PublishHeaders.ts"

export type PublishedMessage = Schema.PublishedMessage
/** One message for a URL; one entry per endpoint for a URL group. */
export type PublishResult = Schema.PublishResult
export type Message = Schema.Message
export type MessageState = Schema.MessageState
export type DlqMessage = Schema.DlqMessage
export type DlqPage = Schema.DlqPage
export type Topic = Schema.Topic
export type Endpoint = Schema.Endpoint
export type DefaultHeaders = Schema.DefaultHeaders
export type SigningKeys = Schema.SigningKeys
export type Schedule = Schema.Schedule
export type CreatedSchedule = Schema.CreatedSchedule
export type FlowControl = Schema.FlowControl
export type FifoQueue = Schema.FifoQueue

/** The filters of `GET /v2/dlq`. */
export interface DlqFilter {
  readonly url?: string | undefined
  readonly topicName?: string | undefined
  readonly responseStatus?: number | undefined
  readonly messageId?: string | undefined
}

/** A page of the DLQ: at most `limit` (1-100, default 50) from `cursor` (the previous page's). */
export interface DlqListOptions extends DlqFilter {
  readonly cursor?: string | undefined
  readonly limit?: number | undefined
}

/** A schedule: a publish (no deduplication id) made on every tick of `cron`. */
export interface ScheduleOptions extends Omit<PublishOptions, "deduplicationId" | "contentBasedDeduplication"> {
  /** `Svc-Cron`: 5 fields, optionally prefixed `CRON_TZ=<IANA zone> `. */
  readonly cron: string
  /** `Svc-Schedule-Id`: create or replace the schedule with this id. */
  readonly scheduleId?: string | undefined
}

/** One element of `batch`: a publish, optionally into a FIFO queue. */
export interface BatchMessage extends PublishOptions {
  /** A FIFO queue name: the message is enqueued there (as `POST /v2/enqueue/<queue>/...`). */
  readonly queue?: string | undefined
}

/** The filters of `GET /v2/events`. */
export interface EventsOptions {
  readonly messageId?: string | undefined
  readonly state?: string | undefined
  readonly url?: string | undefined
  readonly topicName?: string | undefined
  /** From this time on (a `Date`, or Unix ms). */
  readonly fromDate?: Date | number | undefined
  /** Up to this time (a `Date`, or Unix ms). */
  readonly toDate?: Date | number | undefined
  readonly count?: number | undefined
  readonly cursor?: string | undefined
}

/** One state change of a message (`created`, `delivering`, `delivered`, ...). */
export interface QueueEvent {
  /** Unix ms. */
  readonly time: number
  readonly messageId: string
  readonly state: string
  readonly url: string
  readonly topicName?: string
  readonly [field: string]: unknown
}

/** A page of events, newest first; `cursor` continues it (absent on the last page). */
export interface EventsPage {
  readonly events: ReadonlyArray<QueueEvent>
  readonly cursor?: string
}

/** The messages a bulk cancel applies to: these ids and/or every one matching `filter` (sent as is). */
export interface MessageSelection {
  readonly messageIds?: ReadonlyArray<string> | undefined
  readonly filter?: Readonly<Record<string, unknown>> | undefined
}

/** The DLQ entries a bulk retry or delete applies to: these ids and/or every one matching `filter` (sent as is). */
export interface DlqSelection {
  readonly dlqIds?: ReadonlyArray<string> | undefined
  readonly filter?: Readonly<Record<string, unknown>> | undefined
}
