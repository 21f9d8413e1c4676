/**
 * Schedules (issue 17): a cron that publishes a stored request, and the record of each fire.
 *
 * - `schedules`: the request to publish (destination, configuration headers, body) and its cron.
 *   `next_tick` is the cron time the schedule fires next; a scheduler fires a tick only while
 *   holding the row (`FOR UPDATE SKIP LOCKED`) and only if `next_tick` still equals it, and moves
 *   `next_tick` on in the same transaction.
 * - `schedule_fires`: one row per (schedule, tick), inserted in the transaction that inserts the
 *   fire's messages: a tick can never fire twice, whatever number of processes run the scheduler.
 * - `messages.schedule_id`: the schedule that produced a message (callback bodies and the
 *   `Svc-Schedule-Id` delivery header carry it).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE schedules (
      id text PRIMARY KEY,
      cron text NOT NULL,
      destination text NOT NULL,
      headers jsonb NOT NULL DEFAULT '{}',
      body bytea NOT NULL DEFAULT '',
      caller_ip text,
      paused boolean NOT NULL DEFAULT false,
      next_tick timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  // The scheduler's scan: active schedules by their next tick.
  yield* sql`CREATE INDEX schedules_due ON schedules (next_tick) WHERE NOT paused`
  yield* sql`
    CREATE TABLE schedule_fires (
      schedule_id text NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
      tick timestamptz NOT NULL,
      fired_at timestamptz NOT NULL DEFAULT now(),
      message_ids jsonb NOT NULL DEFAULT '[]',
      error text,
      PRIMARY KEY (schedule_id, tick)
    )`
  yield* sql`ALTER TABLE messages ADD COLUMN schedule_id text`
})
