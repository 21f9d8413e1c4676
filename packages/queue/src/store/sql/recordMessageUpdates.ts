/**
 * The live definition of `queue.record_message_updates()`, the statement-level trigger function that
 * writes the events of every UPDATE of `queue.messages` (migrations/queue/0005_events.ts made it; the
 * memory layer applies the same rule, src/store/EventRules.ts): each changed row's state change, if
 * any, and `callback_delivered` on the source of a delivered callback.
 *
 * A message cancelled while its attempt was in flight keeps its claim, and the attempt's 2xx is still
 * recorded under it (Messages.ts): `cancelled` then `delivered`, the destination having received it.
 */
export const recordMessageUpdates = `
    CREATE OR REPLACE FUNCTION queue.record_message_updates() RETURNS trigger LANGUAGE plpgsql AS $$
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
              WHEN o.state = 'cancelled' AND n.state = 'delivered' THEN n.state
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
        WHERE n.kind <> 'message' AND o.state IN ('queued', 'cancelled') AND n.state = 'delivered'
      ) e
      ORDER BY e.seq, e.step;
      RETURN NULL;
    END $$`
