/**
 * The events log (`queue.events`): pages of events, newest first, with filters; and pruning by age.
 * Events are written by the database itself, in the statement that changes a message (the triggers
 * of migrations/queue/0005_events.ts; in memory, the messages table of `MemoryTables`): this store
 * only reads them, prunes them, and at start switches recording on or off (`QUEUE_EVENTS`).
 */
import { PgClient } from "@effect/sql-pg"
import { atDatabaseBoundary } from "@svc/platform"
import type { EventState, EventsPage } from "@svc/schema"
import { EventState as EventStateSchema } from "@svc/schema"
import { Context, Effect, Layer, Schema } from "effect"
import { QueueConfig } from "../QueueConfig.ts"
import { type StoredEvent, toQueueEvent } from "./EventRules.ts"
import { atNow, MemoryTables } from "./MemoryTables.ts"

/** A page request, already checked (Operations): `cursor` is the id of the last event of the previous page. */
export interface EventsQuery {
  readonly messageId?: string | undefined
  readonly state?: EventState | undefined
  readonly url?: string | undefined
  readonly topicName?: string | undefined
  /** Unix ms, inclusive. */
  readonly fromDate?: number | undefined
  /** Unix ms, inclusive. */
  readonly toDate?: number | undefined
  readonly count: number
  readonly cursor?: bigint | undefined
}

/** The triggers that record events (migrations/queue/0005_events.ts). */
const TRIGGERS = ["messages_events_insert", "messages_events_update"] as const

const EventRow = Schema.Struct({
  id: Schema.BigInt,
  time: Schema.Date,
  message_id: Schema.String,
  state: EventStateSchema,
  url: Schema.String,
  topic_name: Schema.NullOr(Schema.String),
  endpoint_name: Schema.NullOr(Schema.String),
  response_status: Schema.NullOr(Schema.Number),
  error: Schema.NullOr(Schema.String),
  retried: Schema.NullOr(Schema.Number),
  next_delivery_time: Schema.NullOr(Schema.Date),
  callback_message_id: Schema.NullOr(Schema.String)
})
const decodeRows = Schema.decodeUnknownEffect(Schema.Array(EventRow))

const toStored = (row: typeof EventRow.Type): StoredEvent => ({
  id: row.id,
  time: row.time,
  messageId: row.message_id,
  state: row.state,
  url: row.url,
  topicName: row.topic_name,
  endpointName: row.endpoint_name,
  responseStatus: row.response_status,
  error: row.error,
  retried: row.retried,
  nextDeliveryTime: row.next_delivery_time,
  callbackMessageId: row.callback_message_id
})

/** The page of `rows` (newest first, up to `count + 1` of them): the cursor when more follow. */
const page = (rows: ReadonlyArray<StoredEvent>, count: number): EventsPage => {
  const shown = rows.slice(0, count)
  const last = shown[shown.length - 1]
  return {
    events: shown.map(toQueueEvent),
    ...(rows.length > count && last !== undefined ? { cursor: String(last.id) } : {})
  }
}

export class Events extends Context.Service<Events, {
  readonly list: (query: EventsQuery) => Effect.Effect<EventsPage>
  /**
   * Deletes at most `batchSize` of the events recorded more than `olderThanMs` ago; the number
   * deleted (the pruner repeats while a batch comes back full).
   */
  readonly prune: (olderThanMs: number, batchSize: number) => Effect.Effect<number>
}>()("@svc/queue/store/Events") {
  /** Postgres; needs `PgClient` and `QueueConfig`. Switches the triggers to `QUEUE_EVENTS` when they differ. */
  static readonly layer = Layer.effect(
    Events,
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      const config = yield* QueueConfig

      // Recording is the database's: the triggers are on or off for every process. Switched only
      // when they differ from this process's setting (ALTER TABLE takes a short table lock).
      const [current] = yield* sql`
        SELECT coalesce(bool_and(tgenabled <> 'D'), false) AS enabled FROM pg_trigger
        WHERE tgrelid = 'queue.messages'::regclass AND tgname IN ${sql.in(TRIGGERS)}`.pipe(
        Effect.flatMap(Schema.decodeUnknownEffect(Schema.Tuple([Schema.Struct({ enabled: Schema.Boolean })]))),
        Effect.orDie
      )
      if (current.enabled !== config.events) {
        for (const trigger of TRIGGERS) {
          yield* sql.unsafe(`ALTER TABLE queue.messages ${config.events ? "ENABLE" : "DISABLE"} TRIGGER ${trigger}`).pipe(Effect.orDie)
        }
        yield* Effect.logInfo(`Queue events log ${config.events ? "switched on" : "switched off"} (QUEUE_EVENTS=${config.events})`)
      }

      const list = (query: EventsQuery) => {
        const conditions = [
          ...(query.cursor === undefined ? [] : [sql`id < ${String(query.cursor)}::int8`]),
          ...(query.messageId === undefined ? [] : [sql`message_id = ${query.messageId}::uuid`]),
          ...(query.state === undefined ? [] : [sql`state = ${query.state}`]),
          ...(query.url === undefined ? [] : [sql`url = ${query.url}`]),
          ...(query.topicName === undefined ? [] : [sql`topic_name = ${query.topicName}`]),
          ...(query.fromDate === undefined ? [] : [sql`time >= to_timestamp(${query.fromDate}::float8 / 1000)`]),
          ...(query.toDate === undefined ? [] : [sql`time <= to_timestamp(${query.toDate}::float8 / 1000)`])
        ]
        return sql`
          SELECT id, time, message_id, state, url, topic_name, endpoint_name, response_status, error, retried,
            next_delivery_time, callback_message_id
          FROM queue.events WHERE ${conditions.length === 0 ? sql`true` : sql.and(conditions)}
          ORDER BY id DESC LIMIT ${query.count + 1}`.pipe(
          Effect.flatMap(decodeRows),
          Effect.map((rows) => page(rows.map(toStored), query.count))
        )
      }

      // Found through the BRIN index on time (only the block ranges holding expired rows are read,
      // however many recent events there are); SKIP LOCKED so that pruners of several processes
      // take different rows and never wait on each other.
      const prune = (olderThanMs: number, batchSize: number) =>
        Effect.map(
          sql`
            DELETE FROM queue.events WHERE ctid IN (
              SELECT ctid FROM queue.events
              WHERE time < now() - ${olderThanMs}::float8 * interval '1 millisecond'
              LIMIT ${batchSize}
              FOR UPDATE SKIP LOCKED)
            RETURNING id`,
          (rows) => rows.length
        )

      return Events.of({
        list: (query) => atDatabaseBoundary(list(query)),
        prune: (olderThanMs, batchSize) => atDatabaseBoundary(prune(olderThanMs, batchSize))
      })
    })
  )

  /** In memory, on the `MemoryTables` whose messages table records the events (tests only). */
  static readonly layerMemory = Layer.effect(
    Events,
    Effect.gen(function*() {
      const tables = yield* MemoryTables
      tables.eventsEnabled = (yield* QueueConfig).events
      const matches = (query: EventsQuery) => (event: StoredEvent) =>
        (query.cursor === undefined || event.id < query.cursor) &&
        (query.messageId === undefined || event.messageId === query.messageId) &&
        (query.state === undefined || event.state === query.state) &&
        (query.url === undefined || event.url === query.url) &&
        (query.topicName === undefined || event.topicName === query.topicName) &&
        (query.fromDate === undefined || event.time.getTime() >= query.fromDate) &&
        (query.toDate === undefined || event.time.getTime() <= query.toDate)
      return Events.of({
        list: (query) =>
          Effect.sync(() => page(tables.events.filter(matches(query)).reverse().slice(0, query.count + 1), query.count)),
        prune: (olderThanMs, batchSize) =>
          atNow(tables, (now) => {
            const old = tables.events.filter((event) => event.time.getTime() < now - olderThanMs).slice(0, batchSize)
            const gone = new Set(old)
            tables.events = tables.events.filter((event) => !gone.has(event))
            return old.length
          })
      })
    })
  )
}
