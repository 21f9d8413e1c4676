/**
 * Inserting messages into `queue.messages` and waking the workers, for the Postgres stores that
 * enqueue (publishes, callbacks, a DLQ retry; schedules next). Internal to the real layers: the
 * statement runs inside the caller's transaction and the caller wakes the workers after commit.
 */
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer } from "effect"
import type { SqlError } from "effect/sql"
import * as Crypto from "node:crypto"
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
        }::uuid, ${message.scheduleId ?? null}::text)`

      /** `not_before` computed by the database (one clock for all workers). */
      const insert = (messages: ReadonlyArray<NewMessage>) =>
        Effect.gen(function*() {
          if (messages.length === 0) return { ids: [], due: false }
          const ids = messages.map(() => Crypto.randomUUID())
          yield* sql`
            INSERT INTO queue.messages (id, kind, url, method, headers, body, timeout_ms, max_retries, not_before,
              scheduled_at, callback, failure_callback, topic_name, endpoint_name, caller_ip, dedup_id, source_message_id, schedule_id)
            SELECT r.id, r.kind, r.url, r.method, r.headers, r.body, r.timeout_ms, r.max_retries,
              now() + r.delay_ms * interval '1 millisecond', now() + r.delay_ms * interval '1 millisecond',
              r.callback, r.failure_callback, r.topic_name, r.endpoint_name, r.caller_ip, r.dedup_id, r.source_message_id, r.schedule_id
            FROM (VALUES ${sql.csv(messages.map((message, i) => row(message, ids[i]!)))})
              AS r(id, kind, url, method, headers, body, timeout_ms, max_retries, delay_ms, callback, failure_callback,
                topic_name, endpoint_name, caller_ip, dedup_id, source_message_id, schedule_id)`
          return { ids, due: messages.some((message) => message.delivery.delayMs === 0) }
        })

      return Enqueue.of({ insert, wake })
    })
  )
}
