/**
 * The queue's tables in memory, for the stores' `layerMemory`: one value per layer build, shared by
 * the stores that share tables in Postgres (messages and the DLQ). Each store operation reads the
 * clock (`Clock`, so `TestClock` drives it) and then changes these maps in one synchronous step,
 * which is what a transaction is here.
 */
import type { DefaultHeaders, PublishedMessage } from "@svc/schema"
import { Clock, Context, Effect, Layer } from "effect"
import type { FlowControlSettings } from "../Publish.ts"
import { eventsOfInsert, eventsOfUpdate, type StoredEvent } from "./EventRules.ts"
import { type NewMessage, newMessageId, type StoredDlqEntry, type StoredMessage } from "./Model.ts"
import type { MemorySchedules } from "./Schedules.ts"

export interface MemoryTopic {
  readonly name: string
  readonly headers: DefaultHeaders
  readonly createdAt: number
  readonly updatedAt: number
  /** In insertion order (`position` in Postgres). */
  readonly endpoints: ReadonlyArray<{ readonly name: string | null; readonly url: string }>
}

/** A flow-control key (`queue.flow_control`). */
export interface MemoryFlowControl {
  readonly key: string
  readonly parallelism: number | null
  readonly rate: number | null
  readonly periodMs: number
  readonly paused: boolean
  /** The last publish naming the key, or pause/resume (ms; `updated_at`). */
  readonly updatedAt: number
}

/** A FIFO queue (`queue.queues`). */
export interface MemoryQueue {
  readonly name: string
  readonly parallelism: number
  readonly paused: boolean
  readonly createdAt: number
  readonly updatedAt: number
}

export interface Tables {
  readonly messages: Map<string, StoredMessage>
  /** By DLQ id. */
  readonly dlq: Map<string, StoredDlqEntry>
  readonly dedup: Map<string, { readonly result: ReadonlyArray<PublishedMessage>; readonly expiresAt: number }>
  readonly topics: Map<string, MemoryTopic>
  keys: { readonly current: string; readonly next: string } | undefined
  /** The DLQ's `seq` (a bigserial in Postgres). */
  seq: bigint
  /** Schedules and their fires (store/Schedules.ts). */
  readonly schedules: MemorySchedules
  readonly flowControl: Map<string, MemoryFlowControl>
  /** Attempts started under a key with a rate (`queue.flow_starts`): key and time (ms). */
  flowStarts: Array<{ readonly key: string; readonly at: number }>
  readonly queues: Map<string, MemoryQueue>
  /** `messages.seq` (a bigserial in Postgres). */
  messageSeq: bigint
  /** The events log (`queue.events`), in recording order; appended by every write of `messages`. */
  events: Array<StoredEvent>
  /** `events.id` (a bigserial in Postgres). */
  eventSeq: bigint
  /** `QUEUE_EVENTS` (set by `Events.layerMemory`): false, nothing is recorded (the triggers disabled). */
  eventsEnabled: boolean
  /** The time of the store operation running now (set by {@link atNow}): the events' time. */
  now: number
}

/**
 * The messages table: every `set` records the events of the change as the Postgres triggers do
 * (`EventRules.ts`), so no store operation has to remember to.
 */
class MessagesTable extends Map<string, StoredMessage> {
  readonly tables: () => Tables
  constructor(tables: () => Tables) {
    super()
    this.tables = tables
  }
  override set(id: string, next: StoredMessage) {
    const tables = this.tables()
    if (tables.eventsEnabled) {
      const old = this.get(id)
      const source = (sourceId: string) => this.get(sourceId)
      const events = old === undefined ? eventsOfInsert(next, source) : eventsOfUpdate(old, next, source)
      for (const event of events) tables.events.push({ ...event, id: ++tables.eventSeq, time: new Date(tables.now) })
    }
    return super.set(id, next)
  }
}

export class MemoryTables extends Context.Service<MemoryTables, Tables>()("@svc/queue/store/MemoryTables") {
  /** Fresh, empty tables per build. */
  static readonly layer = Layer.sync(MemoryTables, (): Tables => {
    const tables: Tables = {
      messages: new MessagesTable(() => tables),
      dlq: new Map(),
      dedup: new Map(),
      topics: new Map(),
      keys: undefined,
      seq: 0n,
      schedules: { rows: new Map(), fires: new Map() },
      flowControl: new Map(),
      flowStarts: [],
      queues: new Map(),
      messageSeq: 0n,
      events: [],
      eventSeq: 0n,
      eventsEnabled: true,
      now: 0
    }
    return tables
  })
}

/** Runs `f` on the tables at the clock's current time (ms), in one synchronous step. */
export const atNow = <A>(tables: Tables, f: (now: number, tables: Tables) => A): Effect.Effect<A> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.sync(() => {
      tables.now = now
      return f(now, tables)
    }))

/** The rows an INSERT of `messages` at `now` adds (`not_before` = now + the delay); returns the ids. */
export const insertMessages = (tables: Tables, now: number, messages: ReadonlyArray<NewMessage>): Array<string> => {
  for (const message of messages) {
    if (message.flowControl !== undefined) upsertFlowControl(tables, now, message.flowControl)
    if (message.queueName !== undefined && !tables.queues.has(message.queueName)) {
      tables.queues.set(message.queueName, { name: message.queueName, parallelism: 1, paused: false, createdAt: now, updatedAt: now })
    }
  }
  return messages.map((message) => {
    const id = newMessageId()
    const due = new Date(Math.max(now + message.delivery.delayMs, message.delivery.notBefore ?? 0))
    tables.messages.set(id, {
      id,
      kind: message.kind,
      state: "queued",
      url: message.url,
      method: message.delivery.method,
      headers: message.delivery.headers,
      body: message.body,
      timeoutMs: message.delivery.timeoutMs,
      maxRetries: message.delivery.retries,
      retried: 0,
      notBefore: due,
      scheduledAt: due,
      createdAt: new Date(now),
      claimId: null,
      deliveredAt: null,
      lastStatus: null,
      lastError: null,
      callback: message.callback ?? null,
      failureCallback: message.failureCallback ?? null,
      topicName: message.topicName ?? null,
      endpointName: message.endpointName ?? null,
      callerIp: message.callerIp ?? null,
      dedupId: message.dedupId ?? null,
      sourceMessageId: message.sourceMessageId ?? null,
      scheduleId: message.scheduleId ?? null,
      flowKey: message.flowControl?.key ?? null,
      queueName: message.queueName ?? null,
      seq: ++tables.messageSeq,
      retryDelay: message.delivery.retryDelay ?? null
    })
    return id
  })
}

/** Enqueue.ts's rule for the limits of a key: the highest wins while the key has queued messages. */
const upsertFlowControl = (tables: Tables, now: number, flow: FlowControlSettings) => {
  const old = tables.flowControl.get(flow.key)
  const fresh = { parallelism: flow.parallelism ?? null, rate: flow.rate ?? null, periodMs: flow.periodMs }
  const draining = [...tables.messages.values()].some((m) => m.flowKey === flow.key && m.state === "queued")
  if (old === undefined || !draining) {
    tables.flowControl.set(flow.key, { key: flow.key, paused: old?.paused ?? false, updatedAt: now, ...fresh })
    return
  }
  const parallelism = old.parallelism === null || fresh.parallelism === null ? null : Math.max(old.parallelism, fresh.parallelism)
  const newRateWins = old.rate === null || fresh.rate === null || fresh.rate / fresh.periodMs > old.rate / old.periodMs
  const rate = old.rate === null || fresh.rate === null ? null : newRateWins ? fresh.rate : old.rate
  tables.flowControl.set(flow.key, {
    ...old,
    parallelism,
    rate,
    periodMs: newRateWins ? fresh.periodMs : old.periodMs,
    updatedAt: now
  })
}
