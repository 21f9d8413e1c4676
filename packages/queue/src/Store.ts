/**
 * The queue's state in Postgres (schema `queue`, see migrations/queue): enqueueing, claiming,
 * completing, the dead-letter queue, URL groups and signing keys. Every statement is
 * schema-qualified; every completion of a claimed message is guarded by its `claim_id`.
 */
import { PgClient } from "@effect/sql-pg"
import type { CallbackSettings, DefaultHeaders, DlqMessage, DlqPage, Endpoint, Message, MessageState, PublishedMessage, Topic } from "@svc/schema"
import { DlqMessageNotFound, MessageNotCancellable, MessageNotFound, TopicNotFound } from "@svc/schema"
import { Context, Data, Duration, Effect, Layer, Option } from "effect"
import type { SqlError } from "effect/sql"
import * as Crypto from "node:crypto"
import type { DeliverySettings } from "./Publish.ts"
import { QueueConfig } from "./QueueConfig.ts"
import { newSigningKey } from "./Signature.ts"

/** The NOTIFY channel that wakes workers when a message becomes due now. */
export const CHANNEL = "svc_queue_messages"

export type MessageKind = "message" | "callback" | "failure_callback"

/** A message as a worker claimed it. */
export interface ClaimedMessage {
  readonly id: string
  readonly claimId: string
  readonly kind: MessageKind
  readonly url: string
  readonly method: string
  readonly headers: Record<string, string>
  readonly body: Uint8Array
  readonly timeoutMs: number
  readonly maxRetries: number
  readonly retried: number
  readonly callback: CallbackSettings | null
  readonly failureCallback: CallbackSettings | null
  readonly topicName: string | null
  readonly endpointName: string | null
  readonly callerIp: string | null
  readonly scheduledAt: Date
  readonly createdAt: Date
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
}

export interface DeliveredResult {
  readonly id: string
  readonly claimId: string
  readonly status: number
}

/** An upsert would make a URL group hold more than its cap of endpoints. */
export class GroupFull extends Data.TaggedError("GroupFull")<{
  readonly name: string
  readonly endpoints: number
  readonly max: number
}> {}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const isUuid = (id: string) => UUID.test(id)

const ms = (date: Date | null | undefined): number | undefined => date == null ? undefined : date.getTime()
const b64 = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? new Uint8Array()).toString("base64")

/** Optional keys only when present (exactOptionalPropertyTypes). */
const defined = <A extends Record<string, unknown>>(record: A): { [K in keyof A]: Exclude<A[K], undefined | null> } => {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(record)) if (value !== undefined && value !== null) out[key] = value
  return out as any
}

export class Store extends Context.Service<Store, {
  readonly insert: (messages: ReadonlyArray<NewMessage>) => Effect.Effect<ReadonlyArray<string>, SqlError.SqlError>
  readonly publish: (
    messages: ReadonlyArray<NewMessage>,
    dedupId: string | undefined
  ) => Effect.Effect<ReadonlyArray<PublishedMessage>, SqlError.SqlError>
  readonly claim: (limit: number) => Effect.Effect<ReadonlyArray<ClaimedMessage>, SqlError.SqlError>
  /** Earliest `not_before` of a queued message (for the idle sleep). */
  readonly nextDue: Effect.Effect<Option.Option<number>, SqlError.SqlError>
  readonly markDelivered: (results: ReadonlyArray<DeliveredResult>) => Effect.Effect<void, SqlError.SqlError>
  /** Delivered, and enqueue its callback in the same transaction. */
  readonly deliveredWithCallback: (
    result: DeliveredResult,
    callback: NewMessage
  ) => Effect.Effect<void, SqlError.SqlError>
  readonly scheduleRetry: (
    message: ClaimedMessage,
    delayMs: number,
    status: number | undefined,
    error: string | undefined
  ) => Effect.Effect<void, SqlError.SqlError>
  /** Retries used up: state failed, a DLQ row, and the callbacks `makeCallbacks(dlqId)` asks for. */
  readonly exhaust: (
    message: ClaimedMessage,
    failure: {
      readonly status: number | undefined
      readonly headers: Record<string, Array<string>> | undefined
      readonly body: Uint8Array | undefined
      readonly error: string | undefined
    },
    makeCallbacks: (dlqId: string) => ReadonlyArray<NewMessage>
  ) => Effect.Effect<void, SqlError.SqlError>
  /** Give claimed messages back (shutdown): due again now. */
  readonly release: (claims: ReadonlyArray<{ readonly id: string; readonly claimId: string }>) => Effect.Effect<void, SqlError.SqlError>
  readonly getMessage: (id: string) => Effect.Effect<Message, MessageNotFound | SqlError.SqlError>
  readonly cancel: (id: string) => Effect.Effect<void, MessageNotFound | MessageNotCancellable | SqlError.SqlError>
  readonly listDlq: (query: {
    readonly cursor?: string | undefined
    readonly limit?: number | undefined
    readonly url?: string | undefined
    readonly topicName?: string | undefined
    readonly responseStatus?: number | undefined
    readonly messageId?: string | undefined
  }) => Effect.Effect<DlqPage, SqlError.SqlError>
  readonly getDlq: (dlqId: string) => Effect.Effect<DlqMessage, DlqMessageNotFound | SqlError.SqlError>
  readonly retryDlq: (dlqId: string) => Effect.Effect<PublishedMessage, DlqMessageNotFound | SqlError.SqlError>
  readonly deleteDlq: (dlqId: string) => Effect.Effect<void, DlqMessageNotFound | SqlError.SqlError>
  readonly listTopics: Effect.Effect<ReadonlyArray<Topic>, SqlError.SqlError>
  readonly getTopic: (name: string) => Effect.Effect<Option.Option<Topic>, SqlError.SqlError>
  /** Adds endpoints, in one transaction; fails with {@link GroupFull} (nothing stored) past `maxEndpoints`. */
  readonly upsertEndpoints: (
    name: string,
    endpoints: ReadonlyArray<Endpoint>,
    maxEndpoints: number
  ) => Effect.Effect<Topic, GroupFull | SqlError.SqlError>
  readonly removeEndpoints: (
    name: string,
    endpoints: ReadonlyArray<{ readonly name?: string | undefined; readonly url?: string | undefined }>
  ) => Effect.Effect<Topic, TopicNotFound | SqlError.SqlError>
  readonly setTopicHeaders: (name: string, headers: DefaultHeaders) => Effect.Effect<Topic, TopicNotFound | SqlError.SqlError>
  readonly deleteTopic: (name: string) => Effect.Effect<void, TopicNotFound | SqlError.SqlError>
  readonly signingKeys: Effect.Effect<{ readonly current: string; readonly next: string }, SqlError.SqlError>
  readonly rotateKeys: Effect.Effect<{ readonly current: string; readonly next: string }, SqlError.SqlError>
}>()("@svc/queue/Store") {
  static readonly layer = Layer.effect(
    Store,
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      const config = yield* QueueConfig
      const leaseMarginMs = Duration.toMillis(config.leaseMargin)
      const dedupWindowMs = Duration.toMillis(config.dedupWindow)

      const toRow = (message: NewMessage, id: string) => ({
        id,
        kind: message.kind,
        url: message.url,
        method: message.delivery.method,
        headers: sql.json(message.delivery.headers),
        body: message.body,
        timeout_ms: message.delivery.timeoutMs,
        max_retries: message.delivery.retries,
        delay_ms: message.delivery.delayMs,
        callback: message.callback === undefined ? null : sql.json(message.callback),
        failure_callback: message.failureCallback === undefined ? null : sql.json(message.failureCallback),
        topic_name: message.topicName ?? null,
        endpoint_name: message.endpointName ?? null,
        caller_ip: message.callerIp ?? null,
        dedup_id: message.dedupId ?? null,
        source_message_id: message.sourceMessageId ?? null
      })

      /**
       * Wake workers after a commit. Coalesced: at most one NOTIFY per few milliseconds from this
       * process, always sent after every commit it covers (NOTIFY serializes commits server-wide,
       * so one per publish would cap the publish rate).
       */
      let notifyScheduled = false
      const wake = Effect.suspend(() => {
        if (notifyScheduled) return Effect.void
        notifyScheduled = true
        return Effect.sleep("2 millis").pipe(
          Effect.andThen(Effect.sync(() => {
            notifyScheduled = false
          })),
          Effect.andThen(sql.notify(CHANNEL, "")),
          Effect.ignore,
          Effect.forkDetach,
          Effect.asVoid
        )
      })

      /** The INSERT of a batch; `not_before` computed by the database (one clock for all workers). */
      const insertStatement = (messages: ReadonlyArray<NewMessage>) => {
        const ids = messages.map(() => Crypto.randomUUID())
        const rows = messages.map((message, i) => toRow(message, ids[i]!))
        const statement = sql`
            INSERT INTO queue.messages (id, kind, url, method, headers, body, timeout_ms, max_retries, not_before,
              scheduled_at, callback, failure_callback, topic_name, endpoint_name, caller_ip, dedup_id, source_message_id)
            SELECT r.id, r.kind, r.url, r.method, r.headers, r.body, r.timeout_ms, r.max_retries,
              now() + r.delay_ms * interval '1 millisecond', now() + r.delay_ms * interval '1 millisecond',
              r.callback, r.failure_callback, r.topic_name, r.endpoint_name, r.caller_ip, r.dedup_id, r.source_message_id
            FROM (VALUES ${
          sql.csv(rows.map((row) =>
            sql`(${row.id}::uuid, ${row.kind}, ${row.url}, ${row.method}, ${row.headers}::jsonb, ${row.body}::bytea, ${row.timeout_ms}::int4, ${row.max_retries}::int4, ${row.delay_ms}::float8, ${row.callback}::jsonb, ${row.failure_callback}::jsonb, ${row.topic_name}::text, ${row.endpoint_name}::text, ${row.caller_ip}::text, ${row.dedup_id}::text, ${row.source_message_id}::uuid)`
          ))
        }) AS r(id, kind, url, method, headers, body, timeout_ms, max_retries, delay_ms, callback, failure_callback,
              topic_name, endpoint_name, caller_ip, dedup_id, source_message_id)`
        const due = messages.some((message) => message.delivery.delayMs === 0)
        return { ids, statement, due }
      }

      /** Insert inside the caller's transaction; the caller wakes workers after commit when `due`. */
      const insertInTransaction = (messages: ReadonlyArray<NewMessage>) =>
        Effect.gen(function*() {
          if (messages.length === 0) return { ids: [] as Array<string>, due: false }
          const { ids, statement, due } = insertStatement(messages)
          yield* statement
          return { ids, due }
        })

      /** Insert (one statement, atomic by itself) and wake workers for due ones. */
      const insert = (messages: ReadonlyArray<NewMessage>) =>
        Effect.gen(function*() {
          const { ids, due } = yield* insertInTransaction(messages)
          if (due) yield* wake
          return ids
        })

      const toPublished = (messages: ReadonlyArray<NewMessage>, ids: ReadonlyArray<string>) =>
        messages.map((message, i) =>
          defined({
            messageId: ids[i]!,
            url: message.topicName === undefined ? undefined : message.url,
            endpointName: message.endpointName
          }) as PublishedMessage
        )

      const publish = (messages: ReadonlyArray<NewMessage>, dedupId: string | undefined) =>
        dedupId === undefined
          ? Effect.map(insert(messages), (ids) => toPublished(messages, ids))
          : publishOnce(messages, dedupId)

      /** With a deduplication id: the id, the messages and the remembered answer commit together. */
      const publishOnce = (messages: ReadonlyArray<NewMessage>, dedupId: string) =>
        sql.withTransaction(Effect.gen(function*() {
          {
            const fresh = yield* sql<{ id: string }>`
              INSERT INTO queue.dedup (id, result, expires_at)
              VALUES (${dedupId}, '[]'::jsonb, now() + ${dedupWindowMs}::float8 * interval '1 millisecond')
              ON CONFLICT (id) DO UPDATE SET result = '[]'::jsonb, expires_at = EXCLUDED.expires_at
                WHERE queue.dedup.expires_at < now()
              RETURNING id`
            if (fresh.length === 0) {
              const [seen] = yield* sql<{ result: ReadonlyArray<PublishedMessage> }>`
                SELECT result FROM queue.dedup WHERE id = ${dedupId}`
              return { result: (seen?.result ?? []).map((entry) => ({ ...entry, deduplicated: true })), due: false }
            }
          }
          const { ids, due } = yield* insertInTransaction(messages)
          const result = toPublished(messages, ids)
          yield* sql`UPDATE queue.dedup SET result = ${sql.json(result)}::jsonb WHERE id = ${dedupId}`
          // Forget long-expired ids.
          yield* sql`DELETE FROM queue.dedup WHERE expires_at < now() - interval '1 hour'`
          return { result, due }
        })).pipe(Effect.tap(({ due }) => due ? wake : Effect.void), Effect.map(({ result }) => result))

      interface ClaimRow {
        id: string
        kind: MessageKind
        url: string
        method: string
        headers: Record<string, string>
        body: Uint8Array
        timeout_ms: number
        max_retries: number
        retried: number
        callback: CallbackSettings | null
        failure_callback: CallbackSettings | null
        topic_name: string | null
        endpoint_name: string | null
        caller_ip: string | null
        scheduled_at: Date
        created_at: Date
      }

      const claim = (limit: number) =>
        Effect.gen(function*() {
          const claimId = Crypto.randomUUID()
          const rows = yield* sql<ClaimRow>`
            WITH due AS (
              SELECT id FROM queue.messages
              WHERE state = 'queued' AND not_before <= now()
              ORDER BY not_before
              LIMIT ${limit}
              FOR UPDATE SKIP LOCKED
            )
            UPDATE queue.messages m
            SET claim_id = ${claimId}::uuid,
                not_before = now() + (m.timeout_ms + ${leaseMarginMs}::int4) * interval '1 millisecond'
            FROM due WHERE m.id = due.id
            RETURNING m.id, m.kind, m.url, m.method, m.headers, m.body, m.timeout_ms, m.max_retries, m.retried,
              m.callback, m.failure_callback, m.topic_name, m.endpoint_name, m.caller_ip, m.scheduled_at, m.created_at`
          return rows.map((row): ClaimedMessage => ({
            id: row.id,
            claimId,
            kind: row.kind,
            url: row.url,
            method: row.method,
            headers: row.headers,
            body: row.body,
            timeoutMs: row.timeout_ms,
            maxRetries: row.max_retries,
            retried: row.retried,
            callback: row.callback,
            failureCallback: row.failure_callback,
            topicName: row.topic_name,
            endpointName: row.endpoint_name,
            callerIp: row.caller_ip,
            scheduledAt: row.scheduled_at,
            createdAt: row.created_at
          }))
        })

      const nextDue = Effect.map(
        sql<{ due: Date | null; now: Date }>`
          SELECT (SELECT min(not_before) FROM queue.messages WHERE state = 'queued') AS due, now() AS now`,
        ([row]) =>
          row?.due == null ? Option.none() : Option.some(Math.max(0, row.due.getTime() - row.now.getTime()))
      )

      const markDelivered = (results: ReadonlyArray<DeliveredResult>) =>
        results.length === 0 ? Effect.void : sql`
          UPDATE queue.messages m
          SET state = 'delivered', delivered_at = now(), claim_id = NULL, last_status = d.status, last_error = NULL
          FROM unnest(${results.map((r) => r.id)}::uuid[], ${results.map((r) => r.claimId)}::uuid[],
                      ${results.map((r) => r.status)}::int4[]) AS d(id, claim, status)
          WHERE m.id = d.id AND m.claim_id = d.claim AND m.state = 'queued'`.pipe(Effect.asVoid)

      const deliveredWithCallback = (result: DeliveredResult, callback: NewMessage) =>
        sql.withTransaction(Effect.gen(function*() {
          const updated = yield* sql`
            UPDATE queue.messages
            SET state = 'delivered', delivered_at = now(), claim_id = NULL, last_status = ${result.status}, last_error = NULL
            WHERE id = ${result.id} AND claim_id = ${result.claimId} AND state = 'queued'
            RETURNING id`
          return updated.length > 0 ? (yield* insertInTransaction([callback])).due : false
        })).pipe(Effect.flatMap((due) => due ? wake : Effect.void))

      const scheduleRetry = (message: ClaimedMessage, delayMs: number, status: number | undefined, error: string | undefined) =>
        sql`
          UPDATE queue.messages
          SET retried = retried + 1, claim_id = NULL, last_status = ${status ?? null}, last_error = ${error ?? null},
              not_before = now() + ${delayMs}::float8 * interval '1 millisecond'
          WHERE id = ${message.id} AND claim_id = ${message.claimId} AND state = 'queued'`.pipe(Effect.asVoid)

      const exhaust: Store["Service"]["exhaust"] = (message, failure, makeCallbacks) =>
        sql.withTransaction(Effect.gen(function*() {
          const updated = yield* sql`
            UPDATE queue.messages
            SET state = 'failed', claim_id = NULL, last_status = ${failure.status ?? null}, last_error = ${failure.error ?? null}
            WHERE id = ${message.id} AND claim_id = ${message.claimId} AND state = 'queued'
            RETURNING id`
          if (updated.length === 0) return false
          const dlqId = Crypto.randomUUID()
          yield* sql`
            INSERT INTO queue.dlq (id, message_id, response_status, response_headers, response_body, last_error)
            VALUES (${dlqId}, ${message.id}, ${failure.status ?? null},
              ${failure.headers === undefined ? null : sql.json(failure.headers)}::jsonb,
              ${failure.body ?? null}::bytea, ${failure.error ?? null})`
          return (yield* insertInTransaction(makeCallbacks(dlqId))).due
        })).pipe(Effect.flatMap((due) => due ? wake : Effect.void))

      const release = (claims: ReadonlyArray<{ readonly id: string; readonly claimId: string }>) =>
        claims.length === 0 ? Effect.void : sql`
          UPDATE queue.messages m SET claim_id = NULL, not_before = now()
          FROM unnest(${claims.map((c) => c.id)}::uuid[], ${claims.map((c) => c.claimId)}::uuid[]) AS d(id, claim)
          WHERE m.id = d.id AND m.claim_id = d.claim AND m.state = 'queued'`.pipe(Effect.asVoid)

      interface MessageRow extends ClaimRow {
        state: "queued" | "delivered" | "failed" | "cancelled"
        in_flight: boolean
        delivered_at: Date | null
        not_before: Date
        last_status: number | null
        last_error: string | null
        dedup_id: string | null
        dlq_id: string | null
      }

      const getMessage = (id: string) =>
        Effect.gen(function*() {
          if (!isUuid(id)) return yield* new MessageNotFound({ messageId: id })
          const [row] = yield* sql<MessageRow>`
            SELECT m.*, (m.claim_id IS NOT NULL AND m.not_before > now()) AS in_flight, d.id AS dlq_id
            FROM queue.messages m LEFT JOIN queue.dlq d ON d.message_id = m.id
            WHERE m.id = ${id}`
          if (row === undefined) return yield* new MessageNotFound({ messageId: id })
          const state: MessageState = row.state === "queued" && row.in_flight ? "delivering" : row.state
          return {
            messageId: row.id,
            state,
            kind: row.kind,
            url: row.url,
            method: row.method,
            header: row.headers,
            body: b64(row.body),
            retried: row.retried,
            maxRetries: row.max_retries,
            timeoutMs: row.timeout_ms,
            notBefore: row.scheduled_at.getTime(),
            createdAt: row.created_at.getTime(),
            ...defined({
              topicName: row.topic_name,
              endpointName: row.endpoint_name,
              deliveredAt: ms(row.delivered_at),
              lastStatus: row.last_status,
              lastError: row.last_error,
              deduplicationId: row.dedup_id,
              callback: row.callback,
              failureCallback: row.failure_callback,
              dlqId: row.dlq_id,
              callerIP: row.caller_ip
            })
          } satisfies Message
        })

      const cancel = (id: string) =>
        Effect.gen(function*() {
          if (!isUuid(id)) return yield* new MessageNotFound({ messageId: id })
          const updated = yield* sql`
            UPDATE queue.messages SET state = 'cancelled', claim_id = NULL
            WHERE id = ${id} AND state = 'queued' RETURNING id`
          if (updated.length > 0) return
          const [row] = yield* sql<{ state: string }>`SELECT state FROM queue.messages WHERE id = ${id}`
          if (row === undefined) return yield* new MessageNotFound({ messageId: id })
          return yield* new MessageNotCancellable({ messageId: id, state: row.state })
        })

      interface DlqRow extends MessageRow {
        dlq_id: string
        seq: bigint
        failed_at: Date
        response_status: number | null
        response_headers: Record<string, Array<string>> | null
        response_body: Uint8Array | null
        dlq_error: string | null
      }

      const toDlq = (row: DlqRow): DlqMessage => ({
        dlqId: row.dlq_id,
        messageId: row.id,
        url: row.url,
        method: row.method,
        header: row.headers,
        body: b64(row.body),
        retried: row.retried,
        maxRetries: row.max_retries,
        createdAt: row.created_at.getTime(),
        failedAt: row.failed_at.getTime(),
        ...defined({
          topicName: row.topic_name,
          endpointName: row.endpoint_name,
          responseStatus: row.response_status,
          responseHeader: row.response_headers,
          responseBody: row.response_body === null ? undefined : b64(row.response_body),
          lastError: row.dlq_error,
          callerIP: row.caller_ip
        })
      })

      const listDlq: Store["Service"]["listDlq"] = (query) =>
        Effect.gen(function*() {
          const limit = query.limit ?? 50
          const after = query.cursor !== undefined && /^\d{1,18}$/.test(query.cursor) ? query.cursor : "0"
          const messageId = query.messageId === undefined ? null : isUuid(query.messageId) ? query.messageId : "00000000-0000-0000-0000-000000000000"
          const rows = yield* sql<DlqRow>`
            SELECT m.*, d.id AS dlq_id, d.seq, d.failed_at, d.response_status, d.response_headers, d.response_body,
              d.last_error AS dlq_error
            FROM queue.dlq d JOIN queue.messages m ON m.id = d.message_id
            WHERE d.seq > ${after}::int8
              AND (${query.url ?? null}::text IS NULL OR m.url = ${query.url ?? null}::text)
              AND (${query.topicName ?? null}::text IS NULL OR m.topic_name = ${query.topicName ?? null}::text)
              AND (${query.responseStatus ?? null}::int4 IS NULL OR d.response_status = ${query.responseStatus ?? null}::int4)
              AND (${messageId}::uuid IS NULL OR m.id = ${messageId}::uuid)
            ORDER BY d.seq
            LIMIT ${limit + 1}`
          const page = rows.slice(0, limit)
          const last = page[page.length - 1]
          return {
            messages: page.map(toDlq),
            ...(rows.length > limit && last !== undefined ? { cursor: String(last.seq) } : {})
          }
        })

      const getDlq = (dlqId: string) =>
        Effect.gen(function*() {
          if (!isUuid(dlqId)) return yield* new DlqMessageNotFound({ dlqId })
          const [row] = yield* sql<DlqRow>`
            SELECT m.*, d.id AS dlq_id, d.seq, d.failed_at, d.response_status, d.response_headers, d.response_body,
              d.last_error AS dlq_error
            FROM queue.dlq d JOIN queue.messages m ON m.id = d.message_id
            WHERE d.id = ${dlqId}`
          if (row === undefined) return yield* new DlqMessageNotFound({ dlqId })
          return toDlq(row)
        })

      const retryDlq = (dlqId: string) =>
        sql.withTransaction(Effect.gen(function*() {
          if (!isUuid(dlqId)) return yield* new DlqMessageNotFound({ dlqId })
          const [row] = yield* sql<{ message_id: string }>`DELETE FROM queue.dlq WHERE id = ${dlqId} RETURNING message_id`
          if (row === undefined) return yield* new DlqMessageNotFound({ dlqId })
          yield* sql`
            UPDATE queue.messages
            SET state = 'queued', retried = 0, not_before = now(), claim_id = NULL, last_error = NULL
            WHERE id = ${row.message_id}`
          return { messageId: row.message_id }
        })).pipe(Effect.tap(() => wake))

      const deleteDlq = (dlqId: string) =>
        Effect.gen(function*() {
          if (!isUuid(dlqId)) return yield* new DlqMessageNotFound({ dlqId })
          const deleted = yield* sql`DELETE FROM queue.dlq WHERE id = ${dlqId} RETURNING id`
          if (deleted.length === 0) return yield* new DlqMessageNotFound({ dlqId })
        })

      interface TopicRow {
        name: string
        headers: DefaultHeaders
        created_at: Date
        updated_at: Date
        endpoints: ReadonlyArray<{ name: string | null; url: string }>
      }
      const toTopic = (row: TopicRow): Topic => ({
        name: row.name,
        headers: row.headers,
        createdAt: row.created_at.getTime(),
        updatedAt: row.updated_at.getTime(),
        endpoints: row.endpoints.map((endpoint) =>
          endpoint.name === null ? { url: endpoint.url } : { name: endpoint.name, url: endpoint.url }
        )
      })
      const selectTopics = (name: string | null) =>
        sql<TopicRow>`
          SELECT t.name, t.headers, t.created_at, t.updated_at,
            coalesce((SELECT jsonb_agg(jsonb_build_object('name', e.name, 'url', e.url) ORDER BY e.position)
                      FROM queue.topic_endpoints e WHERE e.topic_name = t.name), '[]'::jsonb) AS endpoints
          FROM queue.topics t
          WHERE (${name}::text IS NULL OR t.name = ${name}::text)
          ORDER BY t.name`.pipe(Effect.map((rows) => rows.map(toTopic)))

      const getTopic = (name: string) => Effect.map(selectTopics(name), (topics) => Option.fromUndefinedOr(topics[0]))
      const mustGetTopic = (name: string) =>
        Effect.flatMap(getTopic(name), Option.match({
          onNone: () => Effect.fail(new TopicNotFound({ name })),
          onSome: Effect.succeed
        }))

      const upsertEndpoints = (name: string, endpoints: ReadonlyArray<Endpoint>, maxEndpoints: number) =>
        sql.withTransaction(Effect.gen(function*() {
          // The topic row is locked from here on: concurrent upserts of one group count in turn.
          yield* sql`
            INSERT INTO queue.topics (name) VALUES (${name})
            ON CONFLICT (name) DO UPDATE SET updated_at = now()`
          for (const endpoint of endpoints) {
            const endpointName = endpoint.name ?? null
            if (endpointName !== null) {
              // A named endpoint given a new URL moves there.
              yield* sql`DELETE FROM queue.topic_endpoints
                WHERE topic_name = ${name} AND name = ${endpointName} AND url <> ${endpoint.url}`
            }
            yield* sql`
              INSERT INTO queue.topic_endpoints (topic_name, url, name) VALUES (${name}, ${endpoint.url}, ${endpointName})
              ON CONFLICT (topic_name, url) DO UPDATE SET name = EXCLUDED.name`
          }
          const [count] = yield* sql<{ n: number }>`
            SELECT count(*)::int4 AS n FROM queue.topic_endpoints WHERE topic_name = ${name}`
          // Failing rolls the transaction back: nothing of this request stays.
          if (count!.n > maxEndpoints) return yield* new GroupFull({ name, endpoints: count!.n, max: maxEndpoints })
          return yield* Effect.orDie(mustGetTopic(name))
        }))

      const removeEndpoints: Store["Service"]["removeEndpoints"] = (name, endpoints) =>
        sql.withTransaction(Effect.gen(function*() {
          yield* mustGetTopic(name)
          for (const endpoint of endpoints) {
            yield* sql`
              DELETE FROM queue.topic_endpoints
              WHERE topic_name = ${name}
                AND ((${endpoint.url ?? null}::text IS NOT NULL AND url = ${endpoint.url ?? null}::text)
                  OR (${endpoint.name ?? null}::text IS NOT NULL AND name = ${endpoint.name ?? null}::text))`
          }
          yield* sql`UPDATE queue.topics SET updated_at = now() WHERE name = ${name}`
          return yield* mustGetTopic(name)
        }))

      const setTopicHeaders = (name: string, headers: DefaultHeaders) =>
        Effect.gen(function*() {
          const updated = yield* sql`
            UPDATE queue.topics SET headers = ${sql.json(headers)}::jsonb, updated_at = now()
            WHERE name = ${name} RETURNING name`
          if (updated.length === 0) return yield* new TopicNotFound({ name })
          return yield* mustGetTopic(name)
        })

      const deleteTopic = (name: string) =>
        Effect.gen(function*() {
          const deleted = yield* sql`DELETE FROM queue.topics WHERE name = ${name} RETURNING name`
          if (deleted.length === 0) return yield* new TopicNotFound({ name })
        })

      const signingKeys = Effect.gen(function*() {
        const [row] = yield* sql<{ current_key: string; next_key: string }>`
          SELECT current_key, next_key FROM queue.signing_keys WHERE id = 1`
        if (row !== undefined) return { current: row.current_key, next: row.next_key }
        yield* sql`
          INSERT INTO queue.signing_keys (id, current_key, next_key) VALUES (1, ${newSigningKey()}, ${newSigningKey()})
          ON CONFLICT (id) DO NOTHING`
        const [created] = yield* sql<{ current_key: string; next_key: string }>`
          SELECT current_key, next_key FROM queue.signing_keys WHERE id = 1`
        return { current: created!.current_key, next: created!.next_key }
      })

      const rotateKeys = Effect.gen(function*() {
        yield* signingKeys
        const [row] = yield* sql<{ current_key: string; next_key: string }>`
          UPDATE queue.signing_keys SET current_key = next_key, next_key = ${newSigningKey()}, rotated_at = now()
          WHERE id = 1 RETURNING current_key, next_key`
        return { current: row!.current_key, next: row!.next_key }
      })

      return Store.of({
        insert,
        publish,
        claim,
        nextDue,
        markDelivered,
        deliveredWithCallback,
        scheduleRetry,
        exhaust,
        release,
        getMessage,
        cancel,
        listDlq,
        getDlq,
        retryDlq,
        deleteDlq,
        listTopics: selectTopics(null),
        getTopic,
        upsertEndpoints,
        removeEndpoints,
        setTopicHeaders,
        deleteTopic,
        signingKeys,
        rotateKeys
      })
    })
  )
}
