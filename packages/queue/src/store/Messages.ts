/**
 * The messages store (`queue.messages`, `queue.dedup`): publish (with deduplication ids), the
 * worker's claims and their completions (delivered, retry, exhausted into the DLQ, released), and a
 * message's state and cancellation. Every completion of a claimed message is guarded by its claim
 * id: a worker whose lease expired cannot overwrite a later claim's outcome. A cancel keeps the claim,
 * so the 2xx of an attempt already in flight is still recorded (the message ends delivered).
 *
 * `layer` is Postgres (schema `queue`, see migrations/queue); `layerMemory` keeps the same tables
 * in memory (`MemoryTables`) for tests.
 */
import { atDatabaseBoundary } from "@svc/platform"
import { PgClient } from "@effect/sql-pg"
import type { Message, PublishedMessage } from "@svc/schema"
import { MessageNotCancellable, MessageNotFound } from "@svc/schema"
import { Context, Duration, Effect, Layer, Option, Schema } from "effect"
import { SqlSchema, type Statement } from "effect/sql"
import * as Crypto from "node:crypto"
import { QueueConfig } from "../QueueConfig.ts"
import { Enqueue } from "./Enqueue.ts"
import { makeMessagesMemory } from "./MessagesMemory.ts"
import { makePublishBatch } from "./PublishBatch.ts"
import type {
  BatchPublish,
  BulkOutcome,
  Claim,
  ClaimedMessage,
  DeliveredResult,
  Exhausted,
  MessageSelection,
  NewMessage
} from "./Model.ts"
import { CONTROLLED_POLL_MS, isUuid, nextTurnStart, toMessage, toPublished } from "./Model.ts"
import { ClaimRow, MessageViewRow, toClaimedMessage, toStoredMessage } from "./Rows.ts"

export interface MessagesShape {
  /** Enqueue; with a deduplication id, a repeat within the window enqueues nothing and answers the first. */
  readonly publish: (
    messages: ReadonlyArray<NewMessage>,
    dedupId: string | undefined
  ) => Effect.Effect<ReadonlyArray<PublishedMessage>>
  /**
   * The publishes of one batch in one transaction, each deduplicated by its own id (also against
   * the earlier publishes of the batch); the answers in order (PublishBatch.ts).
   */
  readonly publishBatch: (publishes: ReadonlyArray<BatchPublish>) => Effect.Effect<ReadonlyArray<ReadonlyArray<PublishedMessage>>>
  /**
   * Up to `limit` due messages, leased to one new claim: until now + the message's timeout +
   * `QUEUE_LEASE_MARGIN` no other claim sees them; then they are due again.
   */
  readonly claim: (limit: number) => Effect.Effect<ReadonlyArray<ClaimedMessage>>
  /** Milliseconds until the earliest queued message is due (0 when one is), for the idle sleep. */
  readonly nextDue: Effect.Effect<Option.Option<number>>
  readonly markDelivered: (results: ReadonlyArray<DeliveredResult>) => Effect.Effect<void>
  /** Delivered, and enqueue its callback in the same transaction. */
  readonly deliveredWithCallback: (result: DeliveredResult, callback: NewMessage) => Effect.Effect<void>
  /** A failed attempt with retries left: `retried` + 1, due again after `delayMs`. */
  readonly scheduleRetry: (
    message: Claim,
    delayMs: number,
    status: number | undefined,
    error: string | undefined
  ) => Effect.Effect<void>
  /** Retries used up: state failed, the DLQ entry and the callbacks, in one transaction. */
  readonly exhaust: (message: Claim, exhausted: Exhausted) => Effect.Effect<void>
  /** Give claimed messages back (shutdown): due again now. */
  readonly release: (claims: ReadonlyArray<Claim>) => Effect.Effect<void>
  readonly get: (id: string) => Effect.Effect<Message, MessageNotFound>
  /** A queued message (claimed or not) becomes cancelled, keeping its claim (module comment); a finished one cannot. */
  readonly cancel: (id: string) => Effect.Effect<void, MessageNotFound | MessageNotCancellable>
  /** Cancels at most `limit` queued messages of the selection, in publish order; whether more match. */
  readonly cancelMany: (selection: MessageSelection, limit: number) => Effect.Effect<BulkOutcome>
}

export class Messages extends Context.Service<Messages, MessagesShape>()("@svc/queue/store/Messages") {
  /** Postgres, with `Enqueue` given by the caller (shared with the DLQ store). */
  static readonly layerNoDeps = Layer.effect(
    Messages,
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      const enqueue = yield* Enqueue
      const { insert, wake } = enqueue
      const config = yield* QueueConfig
      const leaseMarginMs = Duration.toMillis(config.leaseMargin)
      const dedupWindowMs = Duration.toMillis(config.dedupWindow)
      const wakeIf = (due: boolean) => due ? wake : Effect.void
      const publishBatch = makePublishBatch({ sql, enqueue, dedupWindowMs })

      const seenAnswer = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: Schema.Struct({
          result: Schema.Array(Schema.Struct({
            messageId: Schema.String,
            url: Schema.optionalKey(Schema.String),
            endpointName: Schema.optionalKey(Schema.String)
          }))
        }),
        execute: (dedupId) => sql`SELECT result FROM queue.dedup WHERE id = ${dedupId}`
      })

      /** With a deduplication id: the id, the messages and the remembered answer commit together. */
      const publishOnce = (messages: ReadonlyArray<NewMessage>, dedupId: string) =>
        sql.withTransaction(Effect.gen(function*() {
          const fresh = yield* sql`
            INSERT INTO queue.dedup (id, result, expires_at)
            VALUES (${dedupId}, '[]'::jsonb, now() + ${dedupWindowMs}::float8 * interval '1 millisecond')
            ON CONFLICT (id) DO UPDATE SET result = '[]'::jsonb, expires_at = EXCLUDED.expires_at
              WHERE queue.dedup.expires_at < now()
            RETURNING id`
          if (fresh.length === 0) {
            const seen = yield* seenAnswer(dedupId)
            const first = Option.match(seen, { onNone: () => [], onSome: (row) => row.result })
            return { result: first.map((entry) => ({ ...entry, deduplicated: true })), due: false }
          }
          const { ids, due } = yield* insert(messages)
          const result = toPublished(messages, ids)
          yield* sql`UPDATE queue.dedup SET result = ${sql.json(result)}::jsonb WHERE id = ${dedupId}`
          // Forget long-expired ids.
          yield* sql`DELETE FROM queue.dedup WHERE expires_at < now() - interval '1 hour'`
          return { result, due }
        })).pipe(Effect.tap(({ due }) => wakeIf(due)), Effect.map(({ result }) => result))

      const publish = (messages: ReadonlyArray<NewMessage>, dedupId: string | undefined) =>
        dedupId === undefined
          // One INSERT: atomic by itself, no transaction needed.
          ? Effect.map(insert(messages).pipe(Effect.tap(({ due }) => wakeIf(due))), ({ ids }) => toPublished(messages, ids))
          : publishOnce(messages, dedupId)

      const claimColumns = sql.join(", ", false)(Object.keys(ClaimRow.fields).map((column) => sql`m.${sql(column)}`))

      /** Messages under neither flow control nor a queue: one statement, `FOR UPDATE SKIP LOCKED`. */
      const claimFree = SqlSchema.findAll({
        Request: Schema.Struct({ claimId: Schema.String, limit: Schema.Number }),
        Result: ClaimRow,
        execute: ({ claimId, limit }) =>
          // The claimed ids as an array the UPDATE finds by primary key: joined as a set instead, stale
          // statistics (a table that grew since its last ANALYZE) made the planner hash-join with a
          // scan of the whole table, 16 ms a claim of 100 rows in a table of 100,000 (bench:queue).
          // Planned at every call (`unprepared`), on the table's size at that moment: a prepared
          // statement's generic plan made while the table was nearly empty (a new database, the first
          // seconds of a burst) kept scanning all of it as it grew, until the next ANALYZE.
          sql`
            UPDATE queue.messages m
            SET claim_id = ${claimId}::uuid,
                not_before = now() + (m.timeout_ms + ${leaseMarginMs}::int4) * interval '1 millisecond'
            WHERE m.id = ANY(ARRAY(
              SELECT id FROM queue.messages
              WHERE state = 'queued' AND not_before <= now() AND flow_key IS NULL AND queue_name IS NULL
              ORDER BY not_before
              LIMIT ${limit}
              FOR UPDATE SKIP LOCKED
            ))
            RETURNING ${claimColumns}`.unprepared
      })

      // Messages under flow control or in a FIFO queue: one call of queue.claim_controlled (its
      // live definition, and why it is exact with any number of workers: sql/claimControlled.ts).
      const claimControlled = SqlSchema.findAll({
        Request: Schema.Struct({ claimId: Schema.String, limit: Schema.Number, after: Schema.String }),
        Result: ClaimRow,
        execute: ({ after, claimId, limit }) =>
          sql`SELECT ${claimColumns} FROM queue.claim_controlled(${claimId}::uuid, ${limit}::int4, ${after}, ${leaseMarginMs}::int4) m`
      })
      /** The last key served by this process's previous controlled claim (where the next turn starts). */
      let lastServedKey = ""

      /**
       * Whether any flow-control key or queue exists (read at most once a second per process): a
       * queue that never uses either claims with the one statement of `claimFree`, as before them,
       * and so does one whose keys were all pruned as idle (`Pruning.ts`). A key is never pruned
       * while a message names it, so a stale "none" only delays a new key's first message by at
       * most a second.
       */
      const anyControlled = SqlSchema.findAll({
        Request: Schema.Void,
        Result: Schema.Struct({ any: Schema.Boolean }),
        execute: () => sql`SELECT EXISTS (SELECT 1 FROM queue.flow_control) OR EXISTS (SELECT 1 FROM queue.queues) AS any`
      })
      let controlledSeen: { readonly any: boolean; readonly at: number } | undefined
      const hasControlled = Effect.suspend(() =>
        controlledSeen !== undefined && Date.now() - controlledSeen.at < 1000
          ? Effect.succeed(controlledSeen.any)
          : Effect.map(anyControlled(undefined), ([row]) => {
            controlledSeen = { any: row?.any === true, at: Date.now() }
            return controlledSeen.any
          })
      )

      // Controlled messages first (their limits bound them), then the rest of the batch.
      const claim = (limit: number) =>
        Effect.gen(function*() {
          const claimId = Crypto.randomUUID()
          const controlled = (yield* hasControlled)
            ? yield* claimControlled({ claimId, limit, after: lastServedKey })
            : []
          lastServedKey = nextTurnStart(lastServedKey, controlled.map((row) => row.flow_key))
          const free = controlled.length < limit ? yield* claimFree({ claimId, limit: limit - controlled.length }) : []
          return [...controlled, ...free].map((row) => toClaimedMessage(row, claimId))
        })

      const dueRow = SqlSchema.findAll({
        Request: Schema.Void,
        Result: Schema.Struct({ due: Schema.NullOr(Schema.Date), now: Schema.Date }),
        execute: () =>
          // Messages under flow control or in a queue may wait on their limits: looked at again every
          // CONTROLLED_POLL_MS while any waits (a worker finishing one claims again at once).
          sql`
            SELECT LEAST(
              (SELECT min(not_before) FROM queue.messages WHERE state = 'queued' AND flow_key IS NULL AND queue_name IS NULL),
              (SELECT GREATEST(min(m.not_before), now() + ${CONTROLLED_POLL_MS}::int4 * interval '1 millisecond')
                FROM queue.messages m
                WHERE m.state = 'queued' AND (m.flow_key IS NOT NULL OR m.queue_name IS NOT NULL)
                  AND NOT EXISTS (SELECT 1 FROM queue.flow_control f WHERE f.key = m.flow_key AND f.paused)
                  AND NOT EXISTS (SELECT 1 FROM queue.queues q WHERE q.name = m.queue_name AND q.paused)
                HAVING count(*) > 0)
            ) AS due, now() AS now`
      })
      const nextDue = Effect.map(dueRow(undefined), ([row]) =>
        row === undefined || row.due === null
          ? Option.none<number>()
          : Option.some(Math.max(0, row.due.getTime() - row.now.getTime())))

      // `m.id = ANY(ids)` beside the join: the rows are found by primary key whatever the statistics
      // say (as in the claim above). Planned at every call (`unprepared`), with the arrays' real
      // sizes: a prepared statement's generic plan assumes 10 elements, and one such plan (bench:queue,
      // auto_explain) rescanned the unnest of 2,000 results once per matched row — 0.8 s a call, and
      // the slower the calls, the bigger the next batch. Planning costs ~0.1 ms a batch.
      const markDelivered = (results: ReadonlyArray<DeliveredResult>) => {
        const ids = results.map((r) => r.id)
        return results.length === 0 ? Effect.void : sql`
          UPDATE queue.messages m
          SET state = 'delivered', delivered_at = now(), claim_id = NULL, last_status = d.status, last_error = NULL
          FROM unnest(${ids}::uuid[], ${results.map((r) => r.claimId)}::uuid[], ${results.map((r) => r.status)}::int4[])
            AS d(id, claim, status)
          WHERE m.id = ANY(${ids}::uuid[]) AND m.id = d.id AND m.claim_id = d.claim AND m.state IN ('queued', 'cancelled')`.unprepared
          .pipe(Effect.asVoid)
      }

      const deliveredWithCallback = (result: DeliveredResult, callback: NewMessage) =>
        sql.withTransaction(Effect.gen(function*() {
          const updated = yield* sql`
            UPDATE queue.messages
            SET state = 'delivered', delivered_at = now(), claim_id = NULL, last_status = ${result.status}, last_error = NULL
            WHERE id = ${result.id} AND claim_id = ${result.claimId} AND state IN ('queued', 'cancelled')
            RETURNING id`
          return updated.length > 0 ? (yield* insert([callback])).due : false
        })).pipe(Effect.flatMap(wakeIf))

      const scheduleRetry = (message: Claim, delayMs: number, status: number | undefined, error: string | undefined) =>
        sql`
          UPDATE queue.messages
          SET retried = retried + 1, claim_id = NULL, last_status = ${status ?? null}, last_error = ${error ?? null},
              not_before = now() + ${delayMs}::float8 * interval '1 millisecond'
          WHERE id = ${message.id} AND claim_id = ${message.claimId} AND state = 'queued'`.pipe(Effect.asVoid)

      const exhaust = (message: Claim, exhausted: Exhausted) =>
        sql.withTransaction(Effect.gen(function*() {
          const updated = yield* sql`
            UPDATE queue.messages
            SET state = 'failed', claim_id = NULL, last_status = ${exhausted.status ?? null}, last_error = ${exhausted.error ?? null}
            WHERE id = ${message.id} AND claim_id = ${message.claimId} AND state = 'queued'
            RETURNING id`
          if (updated.length === 0) return false
          yield* sql`
            INSERT INTO queue.dlq (id, message_id, response_status, response_headers, response_body, last_error)
            VALUES (${exhausted.dlqId}, ${message.id}, ${exhausted.status ?? null},
              ${exhausted.headers === undefined ? null : sql.json(exhausted.headers)}::jsonb,
              ${exhausted.body ?? null}::bytea, ${exhausted.error ?? null})`
          return (yield* insert(exhausted.callbacks)).due
        })).pipe(Effect.flatMap(wakeIf))

      // Planned at every call, as the delivered batch is.
      const release = (claims: ReadonlyArray<Claim>) => {
        const ids = claims.map((c) => c.id)
        return claims.length === 0 ? Effect.void : sql`
          UPDATE queue.messages m SET claim_id = NULL, not_before = now()
          FROM unnest(${ids}::uuid[], ${claims.map((c) => c.claimId)}::uuid[]) AS d(id, claim)
          WHERE m.id = ANY(${ids}::uuid[]) AND m.id = d.id AND m.claim_id = d.claim AND m.state = 'queued'`.unprepared.pipe(Effect.asVoid)
      }

      const viewRow = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: MessageViewRow,
        execute: (id) =>
          sql`
            SELECT m.*, (m.claim_id IS NOT NULL AND m.not_before > now()) AS in_flight, d.id AS dlq_id
            FROM queue.messages m LEFT JOIN queue.dlq d ON d.message_id = m.id
            WHERE m.id = ${id}`
      })

      const get = (id: string) =>
        Effect.gen(function*() {
          if (!isUuid(id)) return yield* new MessageNotFound({ messageId: id })
          const row = yield* viewRow(id)
          if (Option.isNone(row)) return yield* new MessageNotFound({ messageId: id })
          return toMessage(toStoredMessage(row.value), row.value.in_flight, row.value.dlq_id)
        })

      const stateRow = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: Schema.Struct({ state: Schema.String }),
        execute: (id) => sql`SELECT state FROM queue.messages WHERE id = ${id}`
      })

      const cancel = (id: string) =>
        Effect.gen(function*() {
          if (!isUuid(id)) return yield* new MessageNotFound({ messageId: id })
          const updated = yield* sql`
            UPDATE queue.messages SET state = 'cancelled'
            WHERE id = ${id} AND state = 'queued' RETURNING id`
          if (updated.length > 0) return
          const row = yield* stateRow(id)
          if (Option.isNone(row)) return yield* new MessageNotFound({ messageId: id })
          return yield* new MessageNotCancellable({ messageId: id, state: row.value.state })
        })

      const decodeCancelled = Schema.decodeUnknownEffect(Schema.Tuple([Schema.Struct({ cancelled: Schema.Number, more: Schema.Boolean })]))
      const cancelMany = (selection: MessageSelection, limit: number) => {
        const { ids, filter } = selection
        const at = (ms: number) => sql`to_timestamp(${ms}::float8 / 1000)`
        const conditions = [
          sql`state = 'queued'`,
          ...(ids === undefined ? [] : [sql`id = ANY(${ids.filter(isUuid)}::uuid[])`]),
          ...(filter?.url === undefined ? [] : [sql`url = ${filter.url}`]),
          ...(filter?.topicName === undefined ? [] : [sql`topic_name = ${filter.topicName}`]),
          ...(filter?.queue === undefined ? [] : [sql`queue_name = ${filter.queue}`]),
          ...(filter?.scheduleId === undefined ? [] : [sql`schedule_id = ${filter.scheduleId}`]),
          ...(filter?.flowControlKey === undefined ? [] : [sql`flow_key = ${filter.flowControlKey}`]),
          ...(filter?.fromDate === undefined ? [] : [sql`created_at >= ${at(filter.fromDate)}`]),
          ...(filter?.toDate === undefined ? [] : [sql`created_at <= ${at(filter.toDate)}`])
        ]
        // One more candidate than the limit tells whether more match. Queued messages are indexed in
        // three parts (free, flow control, FIFO queue), each read by its partial index.
        const part = (partition: Statement.Fragment) =>
          sql`(SELECT id, seq FROM queue.messages WHERE ${sql.and([...conditions, partition])} ORDER BY seq LIMIT ${limit + 1})`
        return sql`
            WITH candidates AS (
              SELECT id FROM (
                ${part(sql`flow_key IS NULL AND queue_name IS NULL`)}
                UNION ALL ${part(sql`flow_key IS NOT NULL`)}
                UNION ALL ${part(sql`flow_key IS NULL AND queue_name IS NOT NULL`)}
              ) queued ORDER BY seq LIMIT ${limit + 1}
            ), cancelled AS (
              UPDATE queue.messages m SET state = 'cancelled'
              FROM (SELECT id FROM candidates LIMIT ${limit}) c
              WHERE m.id = c.id AND m.state = 'queued'
              RETURNING m.id
            )
            SELECT (SELECT count(*) FROM cancelled)::int4 AS cancelled, (SELECT count(*) FROM candidates) > ${limit} AS more`.pipe(
          Effect.flatMap(decodeCancelled),
          Effect.map(([row]) => ({ count: row.cancelled, more: row.more }))
        )
      }

      return Messages.of({
        publish: (messages, dedupId) => atDatabaseBoundary(publish(messages, dedupId)),
        publishBatch: (publishes) => atDatabaseBoundary(publishBatch(publishes)),
        claim: (limit) => atDatabaseBoundary(claim(limit)),
        nextDue: atDatabaseBoundary(nextDue),
        markDelivered: (results) => atDatabaseBoundary(markDelivered(results)),
        deliveredWithCallback: (result, callback) => atDatabaseBoundary(deliveredWithCallback(result, callback)),
        scheduleRetry: (message, delayMs, status, error) => atDatabaseBoundary(scheduleRetry(message, delayMs, status, error)),
        exhaust: (message, exhausted) => atDatabaseBoundary(exhaust(message, exhausted)),
        release: (claims) => atDatabaseBoundary(release(claims)),
        get: (id) => atDatabaseBoundary(get(id)),
        cancel: (id) => atDatabaseBoundary(cancel(id)),
        cancelMany: (selection, limit) => atDatabaseBoundary(cancelMany(selection, limit))
      })
    })
  )

  /** Postgres; needs `PgClient` and `QueueConfig`. */
  static readonly layer = Messages.layerNoDeps.pipe(Layer.provide(Enqueue.layer))

  /** In memory, on the shared `MemoryTables` (tests only). */
  static readonly layerMemory = Layer.effect(Messages, Effect.map(makeMessagesMemory, Messages.of))
}
