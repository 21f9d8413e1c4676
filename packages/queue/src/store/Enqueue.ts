/**
 * Inserting messages into `queue.messages` and waking the workers, for the Postgres stores that
 * enqueue (publishes, callbacks, a DLQ retry; schedules next). Internal to the real layers: the
 * statement runs inside the caller's transaction and the caller wakes the workers after commit.
 */
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer } from "effect"
import type { SqlError } from "effect/sql"
import * as Crypto from "node:crypto"
import type { FlowControlSettings } from "../Publish.ts"
import type { NewMessage } from "./Model.ts"

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

      const row = (message: NewMessage, id: string) =>
        sql`(${id}::uuid, ${message.kind}, ${message.url}, ${message.delivery.method}, ${
          sql.json(message.delivery.headers)
        }::jsonb, ${message.body}::bytea, ${message.delivery.timeoutMs}::int4, ${message.delivery.retries}::int4, ${message.delivery.delayMs}::float8, ${
          message.callback === undefined ? null : sql.json(message.callback)
        }::jsonb, ${message.failureCallback === undefined ? null : sql.json(message.failureCallback)}::jsonb, ${
          message.topicName ?? null
        }::text, ${message.endpointName ?? null}::text, ${message.callerIp ?? null}::text, ${message.dedupId ?? null}::text, ${
          message.sourceMessageId ?? null
        }::uuid, ${message.scheduleId ?? null}::text, ${message.flowControl?.key ?? null}::text, ${message.queueName ?? null}::text)`

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

      /** `not_before` computed by the database (one clock for all workers). */
      const insert = (messages: ReadonlyArray<NewMessage>) =>
        Effect.gen(function*() {
          if (messages.length === 0) return { ids: [], due: false }
          const ids = messages.map(() => Crypto.randomUUID())
          const flows = new Map(messages.flatMap((m) => m.flowControl === undefined ? [] : [[m.flowControl.key, m.flowControl]]))
          for (const flow of flows.values()) yield* upsertFlowControl(flow)
          const queues = new Set(messages.flatMap((m) => m.queueName === undefined ? [] : [m.queueName]))
          for (const name of queues) {
            yield* sql`INSERT INTO queue.queues (name, parallelism) VALUES (${name}, 1) ON CONFLICT (name) DO NOTHING`
          }
          yield* sql`
            INSERT INTO queue.messages (id, kind, url, method, headers, body, timeout_ms, max_retries, not_before,
              scheduled_at, callback, failure_callback, topic_name, endpoint_name, caller_ip, dedup_id, source_message_id, schedule_id,
              flow_key, queue_name)
            SELECT r.id, r.kind, r.url, r.method, r.headers, r.body, r.timeout_ms, r.max_retries,
              now() + r.delay_ms * interval '1 millisecond', now() + r.delay_ms * interval '1 millisecond',
              r.callback, r.failure_callback, r.topic_name, r.endpoint_name, r.caller_ip, r.dedup_id, r.source_message_id, r.schedule_id,
              r.flow_key, r.queue_name
            FROM (VALUES ${sql.csv(messages.map((message, i) => row(message, ids[i]!)))})
              AS r(id, kind, url, method, headers, body, timeout_ms, max_retries, delay_ms, callback, failure_callback,
                topic_name, endpoint_name, caller_ip, dedup_id, source_message_id, schedule_id, flow_key, queue_name)`
          return { ids, due: messages.some((message) => message.delivery.delayMs === 0) }
        })

      return Enqueue.of({ insert, wake })
    })
  )
}
