/**
 * The events of a change of a message row, for the memory layer: the rule the Postgres triggers of
 * migrations/queue/0005_events.ts (the update rule now from src/store/sql/recordMessageUpdates.ts)
 * apply to every INSERT and UPDATE of `queue.messages`, written
 * once here for `MemoryTables` (whose messages map applies it on every write). And the one
 * conversion of a stored event into the API's `QueueEvent`, for both layers.
 */
import type { EventState, QueueEvent } from "@svc/schema"
import type { StoredMessage } from "./Model.ts"

/** An event as stored (the columns of `queue.events`). */
export interface StoredEvent {
  /** Order of recording (a bigserial in Postgres): the cursor. */
  readonly id: bigint
  readonly time: Date
  readonly messageId: string
  readonly state: EventState
  readonly url: string
  readonly topicName: string | null
  readonly endpointName: string | null
  readonly responseStatus: number | null
  readonly error: string | null
  readonly retried: number | null
  readonly nextDeliveryTime: Date | null
  readonly callbackMessageId: string | null
}

/** An event before it is stored: no id or time yet. */
export type NewEvent = Omit<StoredEvent, "id" | "time">

const about = (message: StoredMessage) => ({
  messageId: message.id,
  url: message.url,
  topicName: message.topicName,
  endpointName: message.endpointName
})

const none = { responseStatus: null, error: null, retried: null, nextDeliveryTime: null, callbackMessageId: null }

/** The callback's event on the message it belongs to (callback_sent, callback_delivered). */
const onSource = (
  state: "callback_sent" | "callback_delivered",
  callback: StoredMessage,
  source: (id: string) => StoredMessage | undefined
): Array<NewEvent> => {
  const owner = callback.kind === "message" || callback.sourceMessageId === null ? undefined : source(callback.sourceMessageId)
  return owner === undefined ? [] : [{ ...about(owner), ...none, state, callbackMessageId: callback.id }]
}

/** `record_message_inserts`: created, and callback_sent on the source of a new callback. */
export const eventsOfInsert = (
  message: StoredMessage,
  source: (id: string) => StoredMessage | undefined
): Array<NewEvent> => [
  { ...about(message), ...none, state: "created", retried: message.retried, nextDeliveryTime: message.notBefore },
  ...onSource("callback_sent", message, source)
]

/** Which state change `next` is of `old`, if any (`record_message_updates`). */
const changeOf = (old: StoredMessage, next: StoredMessage): EventState | undefined => {
  if (old.state === "queued" && (next.state === "delivered" || next.state === "failed" || next.state === "cancelled")) {
    return next.state
  }
  // cancelled while its attempt was in flight, and that attempt answered 2xx
  if (old.state === "cancelled" && next.state === "delivered") return "delivered"

  if (old.state === "failed" && next.state === "queued") return "requeued"
  if (next.state === "queued" && next.retried > old.retried) return "retry_scheduled"
  if (next.state === "queued" && next.claimId !== null && next.claimId !== old.claimId) return "delivering"
  return undefined
}

/** `record_message_updates`: the row's state change, and callback_delivered on the source of a delivered callback. */
export const eventsOfUpdate = (
  old: StoredMessage,
  next: StoredMessage,
  source: (id: string) => StoredMessage | undefined
): Array<NewEvent> => {
  const state = changeOf(old, next)
  if (state === undefined) return []
  const answered = state === "retry_scheduled" || state === "delivered" || state === "failed"
  const failed = state === "retry_scheduled" || state === "failed"
  const due = state === "retry_scheduled" || state === "requeued"
  return [
    {
      ...about(next),
      state,
      responseStatus: answered ? next.lastStatus : null,
      error: failed ? next.lastError : null,
      retried: next.retried,
      nextDeliveryTime: due ? next.notBefore : null,
      callbackMessageId: null
    },
    ...(state === "delivered" ? onSource("callback_delivered", next, source) : [])
  ]
}

/** The API's view of a stored event (absent fields left out). */
export const toQueueEvent = (event: StoredEvent): QueueEvent => ({
  time: event.time.getTime(),
  messageId: event.messageId,
  state: event.state,
  url: event.url,
  ...(event.topicName === null ? {} : { topicName: event.topicName }),
  ...(event.endpointName === null ? {} : { endpointName: event.endpointName }),
  ...(event.responseStatus === null ? {} : { responseStatus: event.responseStatus }),
  ...(event.error === null ? {} : { error: event.error }),
  ...(event.retried === null ? {} : { retried: event.retried }),
  ...(event.nextDeliveryTime === null ? {} : { nextDeliveryTime: event.nextDeliveryTime.getTime() }),
  ...(event.callbackMessageId === null ? {} : { callbackMessageId: event.callbackMessageId })
})
