/**
 * The dead-letter queue (`queue.dlq`, one entry per message whose retries were used up; the
 * message row stays, state `failed`): pages with filters, one entry, retry (the message is queued
 * again with its retries starting over) and delete. Entries are added by `Messages.exhaust`, in
 * the transaction that fails the message.
 */
import { atDatabaseBoundary } from "@svc/platform"
import { PgClient } from "@effect/sql-pg"
import type { DlqMessage, DlqPage, PublishedMessage } from "@svc/schema"
import { DlqMessageNotFound } from "@svc/schema"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { type SqlError, SqlSchema, type Statement } from "effect/sql"
import { Enqueue } from "./Enqueue.ts"
import { atNow, MemoryTables } from "./MemoryTables.ts"
import type { BulkOutcome, DlqQuery, DlqSelection, StoredDlqEntry, StoredMessage } from "./Model.ts"
import { CURSOR, isUuid, toDlqMessage } from "./Model.ts"
import { DlqRow, toStoredDlqEntry, toStoredMessage } from "./Rows.ts"

/** The cursor of a page whose entries were cut after `limit`: the `seq` of its last entry. */
/**
 * The parallelism of a FIFO queue or flow-control key that a DLQ retry makes again (it was deleted; the
 * key as idle, after a day): one at a time, as a queue an enqueue makes starts; a key's own limits went
 * with its row, and the next publish naming the key sets them.
 */
export const RETRY_HOME_PARALLELISM = 1

const page = <A extends { readonly seq: bigint }>(
  rows: ReadonlyArray<A>,
  limit: number,
  view: (row: A) => DlqMessage
): DlqPage => {
  const shown = rows.slice(0, limit)
  const last = shown[shown.length - 1]
  return {
    messages: shown.map(view),
    ...(rows.length > limit && last !== undefined ? { cursor: String(last.seq) } : {})
  }
}

export class Dlq extends Context.Service<Dlq, {
  /** A page in failure order, 50 unless `limit`; an unknown cursor starts at the beginning. */
  readonly list: (query: DlqQuery) => Effect.Effect<DlqPage>
  readonly get: (dlqId: string) => Effect.Effect<DlqMessage, DlqMessageNotFound>
  /** The entry goes; its message is queued again, due now, its retries starting over. */
  readonly retry: (dlqId: string) => Effect.Effect<PublishedMessage, DlqMessageNotFound>
  readonly delete: (dlqId: string) => Effect.Effect<void, DlqMessageNotFound>
  /** `retry` for at most `limit` entries of the selection, in failure order; whether more match. */
  readonly retryMany: (selection: DlqSelection, limit: number) => Effect.Effect<BulkOutcome>
  /** `delete` for at most `limit` entries of the selection, in failure order; whether more match. */
  readonly deleteMany: (selection: DlqSelection, limit: number) => Effect.Effect<BulkOutcome>
}>()("@svc/queue/store/Dlq") {
  static readonly layerNoDeps = Layer.effect(
    Dlq,
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      const { wake } = yield* Enqueue

      /** Entries joined with their messages: `m.*` and the `dlq` columns as `DlqRow` names them. */
      const entries = sql`
        SELECT m.*, d.id AS dlq_id, d.seq, d.failed_at, d.response_status, d.response_headers, d.response_body,
          d.last_error AS dlq_error
        FROM queue.dlq d JOIN queue.messages m ON m.id = d.message_id`

      const pageRows = SqlSchema.findAll({
        Request: Schema.Struct({
          after: Schema.String,
          limit: Schema.Number,
          url: Schema.NullOr(Schema.String),
          topicName: Schema.NullOr(Schema.String),
          responseStatus: Schema.NullOr(Schema.Number),
          messageId: Schema.NullOr(Schema.String)
        }),
        Result: DlqRow,
        execute: (query) =>
          sql`
            ${entries}
            WHERE d.seq > ${query.after}::int8
              AND (${query.url}::text IS NULL OR m.url = ${query.url}::text)
              AND (${query.topicName}::text IS NULL OR m.topic_name = ${query.topicName}::text)
              AND (${query.responseStatus}::int4 IS NULL OR d.response_status = ${query.responseStatus}::int4)
              AND (${query.messageId}::uuid IS NULL OR m.id = ${query.messageId}::uuid)
            ORDER BY d.seq
            LIMIT ${query.limit + 1}`
      })

      const oneRow = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: DlqRow,
        execute: (dlqId) => sql`${entries} WHERE d.id = ${dlqId}`
      })

      const view = (row: typeof DlqRow.Type) => toDlqMessage(toStoredMessage(row), toStoredDlqEntry(row))

      const list = (query: DlqQuery) => {
        const limit = query.limit ?? 50
        return Effect.map(
          pageRows({
            after: query.cursor !== undefined && CURSOR.test(query.cursor) ? query.cursor : "0",
            limit,
            url: query.url ?? null,
            topicName: query.topicName ?? null,
            responseStatus: query.responseStatus ?? null,
            messageId: query.messageId === undefined
              ? null
              : isUuid(query.messageId)
              ? query.messageId
              : "00000000-0000-0000-0000-000000000000"
          }),
          (rows) => page(rows, limit, view)
        )
      }

      const get = (dlqId: string) =>
        Effect.gen(function*() {
          if (!isUuid(dlqId)) return yield* new DlqMessageNotFound({ dlqId })
          const row = yield* oneRow(dlqId)
          if (Option.isNone(row)) return yield* new DlqMessageNotFound({ dlqId })
          return view(row.value)
        })

      const deletedMessageId = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: Schema.Struct({ message_id: Schema.String }),
        execute: (dlqId) => sql`DELETE FROM queue.dlq WHERE id = ${dlqId} RETURNING message_id`
      })

      /** A retried entry's message: queued again, due now, its retries starting over. */
      const requeue = sql`state = 'queued', retried = 0, not_before = now(), claim_id = NULL, last_error = NULL`

      /**
       * The FIFO queues and flow-control keys of `requeued` (rows with `queue_name`, `flow_key`), made
       * again where they are gone ({@link RETRY_HOME_PARALLELISM}): only a claim of a row's queue or key
       * takes a message that names one, so a retry into a deleted queue, or under a key deleted as idle,
       * stayed `queued` for good (an outside audit). A key that is there is touched under its row's lock,
       * as a publish touches it, so the idle pass never deletes it under the retried message.
       */
      const restoreHomes = (requeued: Statement.Fragment) =>
        sql`
          homes AS (SELECT DISTINCT queue_name, flow_key FROM ${requeued}),
          queues AS (
            INSERT INTO queue.queues (name, parallelism)
            SELECT DISTINCT queue_name, ${RETRY_HOME_PARALLELISM}::int4 FROM homes WHERE queue_name IS NOT NULL
            ON CONFLICT (name) DO NOTHING
          ),
          keys AS (
            INSERT INTO queue.flow_control (key, parallelism)
            SELECT DISTINCT flow_key, ${RETRY_HOME_PARALLELISM}::int4 FROM homes WHERE flow_key IS NOT NULL
            ON CONFLICT (key) DO UPDATE SET updated_at = now()
          )`

      /** Entries of the selection (joined with their messages as `m`), in failure order, one more than `limit`. */
      const candidates = ({ ids, filter }: DlqSelection, limit: number) => {
        const at = (ms: number) => sql`to_timestamp(${ms}::float8 / 1000)`
        const conditions = [
          ...(ids === undefined ? [] : [sql`d.id = ANY(${ids.filter(isUuid)}::uuid[])`]),
          ...(filter?.url === undefined ? [] : [sql`m.url = ${filter.url}`]),
          ...(filter?.topicName === undefined ? [] : [sql`m.topic_name = ${filter.topicName}`]),
          ...(filter?.responseStatus === undefined ? [] : [sql`d.response_status = ${filter.responseStatus}::int4`]),
          ...(filter?.fromDate === undefined ? [] : [sql`d.failed_at >= ${at(filter.fromDate)}`]),
          ...(filter?.toDate === undefined ? [] : [sql`d.failed_at <= ${at(filter.toDate)}`])
        ]
        return sql`
          SELECT d.id FROM queue.dlq d JOIN queue.messages m ON m.id = d.message_id
          WHERE ${conditions.length === 0 ? sql`true` : sql.and(conditions)}
          ORDER BY d.seq LIMIT ${limit + 1}`
      }
      const decodeOutcome = Schema.decodeUnknownEffect(Schema.Tuple([Schema.Struct({ count: Schema.Number, more: Schema.Boolean })]))
      const outcome = (statement: Effect.Effect<ReadonlyArray<unknown>, SqlError.SqlError>) =>
        statement.pipe(Effect.flatMap(decodeOutcome), Effect.map(([row]): BulkOutcome => row))

      // One statement each: the entries go (only those still there: a repeat or a concurrent call
      // finds nothing more) and, for a retry, their messages are queued again.
      const retryMany = (selection: DlqSelection, limit: number) =>
        outcome(sql`
          WITH candidates AS (${candidates(selection, limit)}),
          removed AS (
            DELETE FROM queue.dlq d USING (SELECT id FROM candidates LIMIT ${limit}) c WHERE d.id = c.id RETURNING d.message_id
          ), requeued AS (
            UPDATE queue.messages m SET ${requeue} FROM removed r WHERE m.id = r.message_id
            RETURNING m.id, m.queue_name, m.flow_key
          ), ${restoreHomes(sql`requeued`)}
          SELECT (SELECT count(*) FROM requeued)::int4 AS count, (SELECT count(*) FROM candidates) > ${limit} AS more`).pipe(
          Effect.tap(({ count }) => count > 0 ? wake : Effect.void)
        )

      const deleteMany = (selection: DlqSelection, limit: number) =>
        outcome(sql`
          WITH candidates AS (${candidates(selection, limit)}),
          removed AS (DELETE FROM queue.dlq d USING (SELECT id FROM candidates LIMIT ${limit}) c WHERE d.id = c.id RETURNING d.id)
          SELECT (SELECT count(*) FROM removed)::int4 AS count, (SELECT count(*) FROM candidates) > ${limit} AS more`)

      const retry = (dlqId: string) =>
        sql.withTransaction(Effect.gen(function*() {
          if (!isUuid(dlqId)) return yield* new DlqMessageNotFound({ dlqId })
          const row = yield* deletedMessageId(dlqId)
          if (Option.isNone(row)) return yield* new DlqMessageNotFound({ dlqId })
          yield* sql`
            WITH requeued AS (
              UPDATE queue.messages SET ${requeue} WHERE id = ${row.value.message_id} RETURNING queue_name, flow_key
            ), ${restoreHomes(sql`requeued`)}
            SELECT 1`
          return { messageId: row.value.message_id }
        })).pipe(Effect.tap(() => wake))

      const remove = (dlqId: string) =>
        Effect.gen(function*() {
          if (!isUuid(dlqId)) return yield* new DlqMessageNotFound({ dlqId })
          const deleted = yield* sql`DELETE FROM queue.dlq WHERE id = ${dlqId} RETURNING id`
          if (deleted.length === 0) return yield* new DlqMessageNotFound({ dlqId })
        })

      return Dlq.of({
        list: (query) => atDatabaseBoundary(list(query)),
        get: (dlqId) => atDatabaseBoundary(get(dlqId)),
        retry: (dlqId) => atDatabaseBoundary(retry(dlqId)),
        delete: (dlqId) => atDatabaseBoundary(remove(dlqId)),
        retryMany: (selection, limit) => atDatabaseBoundary(retryMany(selection, limit)),
        deleteMany: (selection, limit) => atDatabaseBoundary(deleteMany(selection, limit))
      })
    })
  )

  /** Postgres; needs `PgClient`. */
  static readonly layer = Dlq.layerNoDeps.pipe(Layer.provide(Enqueue.layer))

  /** In memory, on the `MemoryTables` shared with `Messages.layerMemory` (tests only). */
  static readonly layerMemory = Layer.effect(
    Dlq,
    Effect.gen(function*() {
      const tables = yield* MemoryTables
      const entryOf = (dlqId: string) => isUuid(dlqId) ? tables.dlq.get(dlqId) : undefined
      const view = (entry: NonNullable<ReturnType<typeof entryOf>>) => toDlqMessage(tables.messages.get(entry.messageId)!, entry)
      const requeue = (message: StoredMessage, now: number) => {
        tables.messages.set(message.id, {
          ...message,
          state: "queued",
          retried: 0,
          notBefore: new Date(now),
          claimId: null,
          lastError: null
        })
        // the Postgres `restoreHomes`: its queue and key made again where gone, a key there touched
        if (message.queueName !== null && !tables.queues.has(message.queueName)) {
          tables.queues.set(message.queueName, {
            name: message.queueName,
            parallelism: RETRY_HOME_PARALLELISM,
            paused: false,
            createdAt: now,
            updatedAt: now
          })
        }
        if (message.flowKey !== null) {
          const key = tables.flowControl.get(message.flowKey)
          tables.flowControl.set(
            message.flowKey,
            key === undefined
              ? { key: message.flowKey, parallelism: RETRY_HOME_PARALLELISM, rate: null, periodMs: 1000, paused: false, updatedAt: now }
              : { ...key, updatedAt: now }
          )
        }
      }
      /** The Postgres `candidates`: entries of the selection in failure order. */
      const candidates = ({ ids, filter }: DlqSelection): Array<StoredDlqEntry> => {
        const idSet = ids === undefined ? undefined : new Set(ids)
        return [...tables.dlq.values()]
          .filter((entry) => {
            const message = tables.messages.get(entry.messageId)!
            return (idSet === undefined || idSet.has(entry.id)) &&
              (filter?.url === undefined || message.url === filter.url) &&
              (filter?.topicName === undefined || message.topicName === filter.topicName) &&
              (filter?.responseStatus === undefined || entry.responseStatus === filter.responseStatus) &&
              (filter?.fromDate === undefined || entry.failedAt.getTime() >= filter.fromDate) &&
              (filter?.toDate === undefined || entry.failedAt.getTime() <= filter.toDate)
          })
          .sort((a, b) => a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0)
      }
      const removeMany = (selection: DlqSelection, limit: number, then: (entry: StoredDlqEntry, now: number) => void) =>
        atNow(tables, (now): BulkOutcome => {
          const found = candidates(selection)
          for (const entry of found.slice(0, limit)) {
            tables.dlq.delete(entry.id)
            then(entry, now)
          }
          return { count: Math.min(limit, found.length), more: found.length > limit }
        })
      return Dlq.of({
        list: (query) =>
          atNow(tables, () => {
            const limit = query.limit ?? 50
            const after = BigInt(query.cursor !== undefined && CURSOR.test(query.cursor) ? query.cursor : "0")
            const rows = [...tables.dlq.values()]
              .filter((entry) => {
                const message = tables.messages.get(entry.messageId)!
                return entry.seq > after &&
                  (query.url === undefined || message.url === query.url) &&
                  (query.topicName === undefined || message.topicName === query.topicName) &&
                  (query.responseStatus === undefined || entry.responseStatus === query.responseStatus) &&
                  (query.messageId === undefined || message.id === query.messageId)
              })
              .sort((a, b) => a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0)
              .slice(0, limit + 1)
            return page(rows, limit, view)
          }),
        get: (dlqId) =>
          Effect.suspend(() => {
            const entry = entryOf(dlqId)
            return entry === undefined ? Effect.fail(new DlqMessageNotFound({ dlqId })) : Effect.succeed(view(entry))
          }),
        retry: (dlqId) =>
          Effect.flatten(atNow(tables, (now) => {
            const entry = entryOf(dlqId)
            if (entry === undefined) return Effect.fail(new DlqMessageNotFound({ dlqId }))
            tables.dlq.delete(entry.id)
            requeue(tables.messages.get(entry.messageId)!, now)
            return Effect.succeed({ messageId: entry.messageId })
          })),
        delete: (dlqId) =>
          Effect.suspend(() => {
            const entry = entryOf(dlqId)
            if (entry === undefined) return Effect.fail(new DlqMessageNotFound({ dlqId }))
            tables.dlq.delete(entry.id)
            return Effect.void
          }),
        retryMany: (selection, limit) =>
          removeMany(selection, limit, (entry, now) => requeue(tables.messages.get(entry.messageId)!, now)),
        deleteMany: (selection, limit) => removeMany(selection, limit, () => {})
      })
    })
  )
}
