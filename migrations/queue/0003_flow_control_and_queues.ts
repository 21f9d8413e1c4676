/**
 * Flow control and FIFO queues (issue 17).
 *
 * - `messages.flow_key`: the message's `Svc-Flow-Control-Key`. All messages of one key share the
 *   limits of its `flow_control` row. `messages.queue_name`: the FIFO queue the message was enqueued
 *   to; `messages.seq`: publish order (a queue delivers its messages in `seq` order).
 * - `flow_control`: one row per key: the limits (NULL = no limit of that kind), paused. A claim
 *   locks the rows of the keys it serves (`FOR UPDATE SKIP LOCKED`), so the counts it makes (unexpired
 *   claims of the key, starts in the period) are exact with any number of workers.
 * - `flow_starts`: one row per delivery attempt started under a key with a rate, kept for one period
 *   (the sliding window of `rate`).
 * - `queues`: FIFO queues: parallelism and paused. A queue delivers only its first `parallelism`
 *   queued messages (by `seq`), so a message waiting for a retry holds its place.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE messages ADD COLUMN flow_key text, ADD COLUMN queue_name text, ADD COLUMN seq bigserial`
  yield* sql`CREATE INDEX messages_flow ON messages (flow_key, not_before) WHERE state = 'queued' AND flow_key IS NOT NULL`
  yield* sql`CREATE INDEX messages_fifo ON messages (queue_name, seq) WHERE state = 'queued' AND queue_name IS NOT NULL`
  // The claim of messages under neither flow control nor a queue scans this index only.
  yield* sql`CREATE INDEX messages_due_free ON messages (not_before)
    WHERE state = 'queued' AND flow_key IS NULL AND queue_name IS NULL`
  yield* sql`
    CREATE TABLE flow_control (
      key text PRIMARY KEY,
      parallelism integer CHECK (parallelism >= 1),
      rate integer CHECK (rate >= 1),
      period_ms integer NOT NULL DEFAULT 1000 CHECK (period_ms >= 1),
      paused boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE TABLE flow_starts (key text NOT NULL, started_at timestamptz NOT NULL)`
  yield* sql`CREATE INDEX flow_starts_key ON flow_starts (key, started_at)`
  yield* sql`
    CREATE TABLE queues (
      name text PRIMARY KEY,
      parallelism integer NOT NULL CHECK (parallelism >= 1),
      paused boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
})
