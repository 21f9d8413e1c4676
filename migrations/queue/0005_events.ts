/**
 * The events log (issue 18): `events` holds one row per state change of a message — created,
 * delivering, retry_scheduled, delivered, failed (into the DLQ), cancelled, requeued (retried from
 * the DLQ), and on the message a callback belongs to, callback_sent and callback_delivered.
 *
 * The rows are written by two statement-level triggers on `messages` (transition tables): every
 * statement that changes messages — a publish's INSERT, a claim, a batch of completions, a bulk
 * cancel — appends the events of all its rows with one INSERT ... SELECT in the same statement and
 * transaction. No store has to remember to record anything, and no event costs a round trip.
 * The rule is one diff of the old and new row (see `queue.record_message_updates`); the memory
 * layer applies the same rule to its rows (src/store/EventRules.ts).
 *
 * `QUEUE_EVENTS=false` disables both triggers (src/store/Events.ts, at start): then nothing is
 * recorded at all.
 *
 * Ordered by `id` (newest first); `events_message` serves `?messageId=`, the BRIN index
 * `events_time` pruning by age in small batches (src/Pruning.ts) and date ranges.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE events (
      id bigserial PRIMARY KEY,
      time timestamptz NOT NULL DEFAULT now(),
      message_id uuid NOT NULL,
      state text NOT NULL,
      url text NOT NULL,
      topic_name text,
      endpoint_name text,
      response_status integer,
      error text,
      retried integer,
      next_delivery_time timestamptz,
      callback_message_id uuid
    )`
  yield* sql`CREATE INDEX events_message ON events (message_id, id)`
  // Rows are appended in time order: a BRIN index finds the expired ones (pruning) and a time range
  // by visiting only the block ranges that hold them, at almost no cost per insert.
  yield* sql`CREATE INDEX events_time ON events USING brin (time) WITH (autosummarize = on)`

  // created for every new row; callback_sent on the source message of a new callback.
  yield* sql`
    CREATE FUNCTION record_message_inserts() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO queue.events (message_id, state, url, topic_name, endpoint_name, retried, next_delivery_time, callback_message_id)
      SELECT e.message_id, e.state, e.url, e.topic_name, e.endpoint_name, e.retried, e.next_delivery_time, e.callback_message_id
      FROM (
        SELECT n.seq AS seq, 0 AS step, n.id AS message_id, 'created' AS state, n.url, n.topic_name, n.endpoint_name,
          n.retried, n.not_before AS next_delivery_time, NULL::uuid AS callback_message_id
        FROM inserted n
        UNION ALL
        SELECT n.seq, 1, s.id, 'callback_sent', s.url, s.topic_name, s.endpoint_name, NULL::int4, NULL::timestamptz, n.id
        FROM inserted n JOIN queue.messages s ON s.id = n.source_message_id
        WHERE n.kind <> 'message'
      ) e
      ORDER BY e.seq, e.step;
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER messages_events_insert AFTER INSERT ON messages
    REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION record_message_inserts()`

  // The diff of each changed row: which state change it was, if any. A release (claim given back)
  // or a moved time is none.
  yield* sql`
    CREATE FUNCTION record_message_updates() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO queue.events (message_id, state, url, topic_name, endpoint_name, response_status, error, retried,
        next_delivery_time, callback_message_id)
      SELECT e.message_id, e.state, e.url, e.topic_name, e.endpoint_name, e.response_status, e.error, e.retried,
        e.next_delivery_time, e.callback_message_id
      FROM (
        SELECT d.seq, 0 AS step, d.id AS message_id, d.state, d.url, d.topic_name, d.endpoint_name,
          CASE WHEN d.state IN ('retry_scheduled', 'delivered', 'failed') THEN d.last_status END AS response_status,
          CASE WHEN d.state IN ('retry_scheduled', 'failed') THEN d.last_error END AS error,
          d.retried,
          CASE WHEN d.state IN ('retry_scheduled', 'requeued') THEN d.not_before END AS next_delivery_time,
          NULL::uuid AS callback_message_id
        FROM (
          SELECT n.id, n.seq, n.url, n.topic_name, n.endpoint_name, n.last_status, n.last_error, n.retried, n.not_before,
            CASE
              WHEN o.state = 'queued' AND n.state IN ('delivered', 'failed', 'cancelled') THEN n.state
              WHEN o.state = 'failed' AND n.state = 'queued' THEN 'requeued'
              WHEN n.state = 'queued' AND n.retried > o.retried THEN 'retry_scheduled'
              WHEN n.state = 'queued' AND n.claim_id IS NOT NULL AND n.claim_id IS DISTINCT FROM o.claim_id THEN 'delivering'
            END AS state
          FROM new_rows n JOIN old_rows o ON o.id = n.id
        ) d
        WHERE d.state IS NOT NULL
        UNION ALL
        SELECT n.seq, 1, s.id, 'callback_delivered', s.url, s.topic_name, s.endpoint_name, NULL::int4, NULL, NULL::int4,
          NULL::timestamptz, n.id
        FROM new_rows n JOIN old_rows o ON o.id = n.id JOIN queue.messages s ON s.id = n.source_message_id
        WHERE n.kind <> 'message' AND o.state = 'queued' AND n.state = 'delivered'
      ) e
      ORDER BY e.seq, e.step;
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER messages_events_update AFTER UPDATE ON messages
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION record_message_updates()`
})
