/**
 * Inserting messages into `queue.messages` and waking the workers, for the Postgres stores that
 * enqueue (publishes, callbacks, a DLQ retry; schedules next). Internal to the real layers: the
 * statement runs inside the caller's transaction and the caller wakes the workers after commit.
 */
import { PgClient, PgTypes } from "@effect/sql-pg"
import { Context, Effect, Layer, Result } from "effect"
import type { SqlError } from "effect/sql"
import type { FlowControlSettings } from "../Publish.ts"
import { type NewMessage, newMessageId } from "./Model.ts"

/** A column of values as one typed array parameter (NULL elements allowed, even all of them). */
const column = (oid: number, values: ReadonlyArray<unknown>) => Result.getOrThrow(PgTypes.array(values, oid))
const text = (values: ReadonlyArray<string | null>) => column(PgTypes.OID.text, values)
const { OID } = PgTypes

/**
 * `ANALYZE queue.messages` after this many rows inserted by this process (at most every
 * {@link ANALYZE_MIN_INTERVAL_MS}). A burst of publishes fills the table faster than autovacuum
 * (a minute's naptime) refreshes its statistics; with stale ones the planner believes few messages
 * are queued and completes a batch of deliveries by scanning every queued row (measured: 16-30 ms
 * per 60-message completion with 30,000 queued, 0.6 ms once analyzed).
 */
export const ANALYZE_EVERY_ROWS = 10_000
export const ANALYZE_MIN_INTERVAL_MS = 5_000

/** The NOTIFY channel that wakes workers when a message becomes due now. */
export const CHANNEL = "svc_queue_messages"

export class Enqueue extends Context.Service<Enqueue, {
  /** One INSERT of the batch (in the caller's transaction); `due` when one is due at once. */
  readonly insert: (
    messages: ReadonlyArray<NewMessage>
  ) => Effect.Effect<{ readonly ids: ReadonlyArray<string>; readonly due: boolean }, SqlError.SqlError>
  /**
   * Wake workers after a commit. Coalesced: at most one NOTIFY per few milliseconds from this
   * process, always sent after every commit it covers (NOTIFY serializes commits server-wide, so
   * one per publish would cap the publish rate).
   */
  readonly wake: Effect.Effect<void>
}>()("@svc/queue/store/Enqueue") {
  static readonly layer = Layer.effect(
    Enqueue,
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient

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

      /**
       * The limits of a flow-control key, from a publish: while the key has queued messages the
       * highest of each limit wins (no limit beats any limit; of two rates, the higher rate per
       * period); once they have drained, the publish's own limits replace the stored ones.
       */
      const upsertFlowControl = (flow: FlowControlSettings) =>
        sql`
          INSERT INTO queue.flow_control AS f (key, parallelism, rate, period_ms)
          VALUES (${flow.key}, ${flow.parallelism ?? null}::int4, ${flow.rate ?? null}::int4, ${flow.periodMs}::int4)
          ON CONFLICT (key) DO UPDATE SET
            parallelism = CASE
              WHEN NOT EXISTS (SELECT 1 FROM queue.messages m WHERE m.flow_key = f.key AND m.state = 'queued') THEN EXCLUDED.parallelism
              WHEN f.parallelism IS NULL OR EXCLUDED.parallelism IS NULL THEN NULL
              ELSE greatest(f.parallelism, EXCLUDED.parallelism) END,
            rate = CASE
              WHEN NOT EXISTS (SELECT 1 FROM queue.messages m WHERE m.flow_key = f.key AND m.state = 'queued') THEN EXCLUDED.rate
              WHEN f.rate IS NULL OR EXCLUDED.rate IS NULL THEN NULL
              WHEN EXCLUDED.rate::float8 / EXCLUDED.period_ms > f.rate::float8 / f.period_ms THEN EXCLUDED.rate
              ELSE f.rate END,
            period_ms = CASE
              WHEN NOT EXISTS (SELECT 1 FROM queue.messages m WHERE m.flow_key = f.key AND m.state = 'queued') THEN EXCLUDED.period_ms
              WHEN f.rate IS NULL OR EXCLUDED.rate IS NULL THEN EXCLUDED.period_ms
              WHEN EXCLUDED.rate::float8 / EXCLUDED.period_ms > f.rate::float8 / f.period_ms THEN EXCLUDED.period_ms
              ELSE f.period_ms END,
            updated_at = now()`

      // Statistics kept fresh by the inserting processes (see ANALYZE_EVERY_ROWS).
      let insertedSinceAnalyze = 0
      let lastAnalyze = 0
      let analyzing = false
      const keepStatistics = (rows: number) =>
        Effect.suspend(() => {
          insertedSinceAnalyze += rows
          const now = Date.now()
          if (analyzing || insertedSinceAnalyze < ANALYZE_EVERY_ROWS || now - lastAnalyze < ANALYZE_MIN_INTERVAL_MS) return Effect.void
          analyzing = true
          insertedSinceAnalyze = 0
          lastAnalyze = now
          // The columns the claims and completions filter on: not the bodies and headers, whose
          // statistics no plan uses and which make up most of the work of a full ANALYZE.
          return sql`ANALYZE queue.messages (id, state, not_before, claim_id, flow_key, queue_name)`.pipe(
            Effect.ignore,
            Effect.ensuring(Effect.sync(() => {
              analyzing = false
            })),
            Effect.forkDetach,
            Effect.asVoid
          )
        })

      /** `not_before` computed by the database (one clock for all workers). */
      const insert = (messages: ReadonlyArray<NewMessage>) =>
        Effect.gen(function*() {
          if (messages.length === 0) return { ids: [], due: false }
          const ids = messages.map(newMessageId)
          const flows = new Map(messages.flatMap((m) => m.flowControl === undefined ? [] : [[m.flowControl.key, m.flowControl]]))
          for (const flow of flows.values()) yield* upsertFlowControl(flow)
          const queues = new Set(messages.flatMap((m) => m.queueName === undefined ? [] : [m.queueName]))
          for (const name of queues) {
            yield* sql`INSERT INTO queue.queues (name, parallelism) VALUES (${name}, 1) ON CONFLICT (name) DO NOTHING`
          }
          const of = <A>(value: (message: NewMessage) => A) => messages.map(value)
          // One statement whatever the batch size: a typed array per column, zipped by unnest (the
          // driver sends them in Postgres' binary format; 21 parameters, not 21 per message).
          yield* sql`
            INSERT INTO queue.messages (id, kind, url, method, headers, body, timeout_ms, max_retries, not_before,
              scheduled_at, callback, failure_callback, topic_name, endpoint_name, caller_ip, dedup_id, source_message_id, schedule_id,
              flow_key, queue_name, retry_delay)
            SELECT r.id, r.kind, r.url, r.method, r.headers, r.body, r.timeout_ms, r.max_retries, r.due, r.due,
              r.callback, r.failure_callback, r.topic_name, r.endpoint_name, r.caller_ip, r.dedup_id, r.source_message_id, r.schedule_id,
              r.flow_key, r.queue_name, r.retry_delay
            FROM (
              SELECT u.*,
                -- Svc-Delay counts from now; Svc-Not-Before is an instant: the later wins (GREATEST skips NULL).
                GREATEST(now() + u.delay_ms * interval '1 millisecond', to_timestamp(u.not_before_ms / 1000.0)) AS due
              FROM unnest(${column(OID.uuid, ids)}, ${text(of((m) => m.kind))}, ${text(of((m) => m.url))},
                ${text(of((m) => m.delivery.method))}, ${column(OID.jsonb, of((m) => m.delivery.headers))},
                ${column(OID.bytea, of((m) => m.body))}, ${column(OID.int4, of((m) => m.delivery.timeoutMs))},
                ${column(OID.int4, of((m) => m.delivery.retries))}, ${column(OID.float8, of((m) => m.delivery.delayMs))},
                ${column(OID.float8, of((m) => m.delivery.notBefore ?? null))},
                ${column(OID.jsonb, of((m) => m.callback ?? null))}, ${column(OID.jsonb, of((m) => m.failureCallback ?? null))},
                ${text(of((m) => m.topicName ?? null))}, ${text(of((m) => m.endpointName ?? null))},
                ${text(of((m) => m.callerIp ?? null))}, ${text(of((m) => m.dedupId ?? null))},
                ${column(OID.uuid, of((m) => m.sourceMessageId ?? null))}, ${text(of((m) => m.scheduleId ?? null))},
                ${text(of((m) => m.flowControl?.key ?? null))}, ${text(of((m) => m.queueName ?? null))},
                ${text(of((m) => m.delivery.retryDelay ?? null))})
                AS u(id, kind, url, method, headers, body, timeout_ms, max_retries, delay_ms, not_before_ms, callback,
                  failure_callback, topic_name, endpoint_name, caller_ip, dedup_id, source_message_id, schedule_id, flow_key,
                  queue_name, retry_delay)
            ) r`
          // After the caller's commit, on a connection of its own (never inside its transaction).
          yield* sql.afterCommit(keepStatistics(messages.length))
          const now = Date.now()
          return {
            ids,
            due: messages.some((message) =>
              message.delivery.delayMs === 0 && (message.delivery.notBefore === undefined || message.delivery.notBefore <= now)
            )
          }
        })

      return Enqueue.of({ insert, wake })
    })
  )
}
