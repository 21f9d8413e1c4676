/**
 * What the queue's stores (`Messages`, `Dlq`, `Groups`, `SigningKeys`) hold and hand out, whatever
 * keeps it (Postgres or memory): a stored message as a record, the inputs of the writes, and the
 * one conversion of a stored message into the API's `Message` and `DlqMessage`, so both layers
 * answer alike.
 */
import type {
  CallbackSettings,
  DlqFilter,
  DlqMessage,
  Message,
  MessageFilter,
  MessageState,
  PublishedMessage,
  RequestIssue
} from "@svc/schema"
import { Data } from "effect"
import { v7 as uuidv7 } from "uuid"
import type { DeliverySettings, FlowControlSettings } from "../Publish.ts"

/** How often idle workers look again at messages waiting on flow control or a queue (ms). */
export const CONTROLLED_POLL_MS = 50

/** Compares two keys as Postgres' `COLLATE "C"` does: by their UTF-8 bytes. */
export const inByteOrder = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b))

/**
 * Where a claim's turn over the flow-control keys starts next (both layers serve keys in byte
 * order from just after it, wrapping around): the last of the keys just served in that order,
 * or `after` when none was.
 */
export const nextTurnStart = (after: string, served: ReadonlyArray<string | null>): string => {
  const keys = served.filter((key): key is string => key !== null)
  const last = (candidates: ReadonlyArray<string>) => candidates.reduce((a, b) => (inByteOrder(b, a) > 0 ? b : a))
  const later = keys.filter((key) => inByteOrder(key, after) > 0)
  return later.length > 0 ? last(later) : keys.length > 0 ? last(keys) : after
}

export type MessageKind = "message" | "callback" | "failure_callback"

/** A message as a worker claimed it: what an attempt and its callbacks need, and the claim. */
export interface ClaimedMessage extends
  Pick<
    StoredMessage,
    | "id"
    | "kind"
    | "url"
    | "method"
    | "headers"
    | "body"
    | "timeoutMs"
    | "maxRetries"
    | "retried"
    | "callback"
    | "failureCallback"
    | "topicName"
    | "endpointName"
    | "callerIp"
    | "scheduledAt"
    | "createdAt"
    | "scheduleId"
    | "flowKey"
    | "queueName"
    | "retryDelay"
  >
{
  readonly claimId: string
}

/** A message to insert. */
export interface NewMessage {
  readonly kind: MessageKind
  readonly url: string
  readonly delivery: DeliverySettings
  readonly body: Uint8Array
  readonly callback?: CallbackSettings | undefined
  readonly failureCallback?: CallbackSettings | undefined
  readonly topicName?: string | undefined
  readonly endpointName?: string | undefined
  readonly callerIp?: string | undefined
  readonly dedupId?: string | undefined
  readonly sourceMessageId?: string | undefined
  /** The schedule whose fire produced the message (store/Schedules.ts). */
  readonly scheduleId?: string | undefined
  /** Flow control: the key whose limits the message shares (see FlowControl.ts). */
  readonly flowControl?: FlowControlSettings | undefined
  /** The FIFO queue the message goes to (created with parallelism 1 when new; see Queues.ts). */
  readonly queueName?: string | undefined
}

/** One publish of a batch (`Messages.publishBatch`): its messages (one per target) and deduplication id. */
export interface BatchPublish {
  readonly messages: ReadonlyArray<NewMessage>
  readonly dedupId: string | undefined
}

export interface DeliveredResult {
  readonly id: string
  readonly claimId: string
  readonly status: number
}

/** A claim to give back or complete: the message and the claim that holds it. */
export interface Claim {
  readonly id: string
  readonly claimId: string
}

/**
 * A message whose retries are used up, as data computed before the storage transaction: the DLQ
 * row's id and contents, and the callbacks to enqueue with it (their bodies already name `dlqId`).
 */
export interface Exhausted {
  readonly dlqId: string
  readonly status: number | undefined
  readonly headers: Record<string, Array<string>> | undefined
  readonly body: Uint8Array | undefined
  readonly error: string | undefined
  readonly callbacks: ReadonlyArray<NewMessage>
}

export interface DlqQuery {
  readonly cursor?: string | undefined
  readonly limit?: number | undefined
  readonly url?: string | undefined
  readonly topicName?: string | undefined
  readonly responseStatus?: number | undefined
  readonly messageId?: string | undefined
}

/**
 * What a bulk operation applies to: the ids (those that are not ids name nothing), the filter, or
 * both (the ids that match the filter). Checked by the caller (Bulk.ts): at least one is given.
 */
export interface Selection<Filter> {
  readonly ids?: ReadonlyArray<string> | undefined
  readonly filter?: Filter | undefined
}
export type MessageSelection = Selection<MessageFilter>
export type DlqSelection = Selection<DlqFilter>

/** A bulk operation's outcome: how many it changed, and whether more match (the caller repeats). */
export interface BulkOutcome {
  readonly count: number
  readonly more: boolean
}

/** An upsert would make a URL group hold more than its cap of endpoints. */
export class GroupFull extends Data.TaggedError("GroupFull")<{
  readonly name: string
  readonly endpoints: number
  readonly max: number
}> {}

/** A message as stored (the columns of `queue.messages`, decoded). */
export interface StoredMessage {
  readonly id: string
  readonly kind: MessageKind
  readonly state: "queued" | "delivered" | "failed" | "cancelled"
  readonly url: string
  readonly method: string
  readonly headers: Record<string, string>
  readonly body: Uint8Array
  readonly timeoutMs: number
  readonly maxRetries: number
  readonly retried: number
  readonly notBefore: Date
  readonly scheduledAt: Date
  readonly createdAt: Date
  readonly claimId: string | null
  readonly deliveredAt: Date | null
  readonly lastStatus: number | null
  readonly lastError: string | null
  readonly callback: CallbackSettings | null
  readonly failureCallback: CallbackSettings | null
  readonly topicName: string | null
  readonly endpointName: string | null
  readonly callerIp: string | null
  readonly dedupId: string | null
  readonly sourceMessageId: string | null
  readonly scheduleId: string | null
  readonly flowKey: string | null
  readonly queueName: string | null
  /** Publish order (a FIFO queue delivers by it). */
  readonly seq: bigint
  /** `Svc-Retry-Delay`: an expression of `retried` (RetryDelay.ts); null = the default backoff. */
  readonly retryDelay: string | null
}

/** A DLQ entry as stored (the columns of `queue.dlq`, decoded). */
export interface StoredDlqEntry {
  readonly id: string
  readonly seq: bigint
  readonly messageId: string
  readonly failedAt: Date
  readonly responseStatus: number | null
  readonly responseHeaders: { readonly [name: string]: ReadonlyArray<string> } | null
  readonly responseBody: Uint8Array | null
  readonly lastError: string | null
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
/** Ids are uuids: anything else names nothing (and never reaches a `::uuid` cast). */
/**
 * A new message's id: a UUIDv7, whose first 48 bits are the time. Ids made close in time sit close
 * in the indexes keyed by them (the messages' primary key, the events' `(message_id, id)`), so an
 * insert or an updated row's new index entry lands in a few recently used pages instead of a random
 * one: 10-14 µs less Postgres CPU per delivered message in `bench:queue`'s batch run (issue 18).
 * 74 random bits remain, as unguessable as needed (every route needs the token anyway).
 */
export const newMessageId = (): string => uuidv7()

export const isUuid = (id: string) => UUID.test(id)

/**
 * The issue for a message or DLQ id a request filters or selects by that is not one (both are UUIDs),
 * or none: the rule of every id filter (`messageId` of events and the DLQ) and bulk id list
 * (`messageIds`, `dlqIds`). Such an id names nothing: the DLQ filter answered an empty page and a bulk
 * cancel `{"cancelled": 0}`, where the events filter said what was wrong. (A single id in a path, as
 * `GET /v2/messages/<id>`, stays a 404: no such message.)
 */
export const idIssue = (
  id: string,
  where: Pick<RequestIssue, "in" | "parameter">,
  what: "message id" | "DLQ id"
): RequestIssue | undefined =>
  isUuid(id) ? undefined : { ...where, problem: `is not a ${what} (a UUID): ${JSON.stringify(id.slice(0, 100))}` }

/** A DLQ cursor is the `seq` of the last entry of the previous page. */
export const CURSOR = /^\d{1,18}$/

const b64 = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? new Uint8Array()).toString("base64")

/** Optional keys only when present (exactOptionalPropertyTypes). */
const defined = <A extends Record<string, unknown>>(record: A): { [K in keyof A]?: Exclude<A[K], undefined | null> } => {
  const out: { [K in keyof A]?: Exclude<A[K], undefined | null> } = {}
  for (const key of Object.keys(record) as Array<keyof A>) {
    const value = record[key]
    if (value !== undefined && value !== null) out[key] = value as Exclude<A[keyof A], undefined | null>
  }
  return out
}

/** The answer of a publish: the message ids, and for a group each endpoint's URL and name. */
export const toPublished = (messages: ReadonlyArray<NewMessage>, ids: ReadonlyArray<string>): Array<PublishedMessage> =>
  messages.map((message, i) => ({
    messageId: ids[i]!,
    ...defined({
      url: message.topicName === undefined ? undefined : message.url,
      endpointName: message.endpointName
    })
  }))

/** The API's view of a message; `inFlight` = claimed with an unexpired lease. */
export const toMessage = (row: StoredMessage, inFlight: boolean, dlqId: string | null): Message => {
  const state: MessageState = row.state === "queued" && inFlight ? "delivering" : row.state
  return {
    messageId: row.id,
    state,
    kind: row.kind,
    url: row.url,
    method: row.method,
    header: row.headers,
    body: b64(row.body),
    retried: row.retried,
    maxRetries: row.maxRetries,
    timeoutMs: row.timeoutMs,
    notBefore: row.scheduledAt.getTime(),
    createdAt: row.createdAt.getTime(),
    ...defined({
      topicName: row.topicName,
      endpointName: row.endpointName,
      deliveredAt: row.deliveredAt?.getTime(),
      lastStatus: row.lastStatus,
      lastError: row.lastError,
      deduplicationId: row.dedupId,
      callback: row.callback,
      failureCallback: row.failureCallback,
      dlqId,
      callerIP: row.callerIp,
      retryDelay: row.retryDelay
    })
  }
}

/** The API's view of a DLQ entry and its message. */
export const toDlqMessage = (message: StoredMessage, entry: StoredDlqEntry): DlqMessage => ({
  dlqId: entry.id,
  messageId: message.id,
  url: message.url,
  method: message.method,
  header: message.headers,
  body: b64(message.body),
  retried: message.retried,
  maxRetries: message.maxRetries,
  createdAt: message.createdAt.getTime(),
  failedAt: entry.failedAt.getTime(),
  ...defined({
    topicName: message.topicName,
    endpointName: message.endpointName,
    responseStatus: entry.responseStatus,
    responseHeader: entry.responseHeaders,
    responseBody: entry.responseBody === null ? undefined : b64(entry.responseBody),
    lastError: entry.lastError,
    callerIP: message.callerIp
  })
})

/** A claimed copy of a stored message (the memory layer's claim; the record's other fields ride along unused). */
export const toClaimed = (message: StoredMessage, claimId: string): ClaimedMessage => ({ ...message, claimId })
