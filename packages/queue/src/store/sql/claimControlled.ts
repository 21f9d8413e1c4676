/**
 * The live definition of `queue.claim_controlled(claim, lim, after_key, lease_margin_ms)`: the claim
 * of messages under flow control or in a FIFO queue (Messages.ts calls it; the memory layer's
 * `claimable` is the same rule on its tables).
 *
 * - **Exact with any number of workers.** The function first takes one transaction-scoped advisory
 *   lock, so controlled claims run one at a time across every worker process; its claim statement,
 *   whose snapshot is taken after the lock (a VOLATILE function takes one per statement), sees every
 *   claim committed before it. A key's room is its parallelism less its unexpired claims and its rate
 *   less its starts within the period; a queue delivers only its first `parallelism` queued messages.
 *   One call, one round trip: a worker idles while its claim is out.
 * - **Turns.** Keys are served in byte order from just after `after_key` (the last key the worker's
 *   previous claim served), wrapping around, each up to its room, until `lim` messages are picked:
 *   a claim looks at as many keys as it needs, not at every key. FIFO heads are interleaved with them.
 * - Starts are stamped with the claim statement's own time.
 * - The picked rows are updated by primary key (`id = ANY(array)`), never joined as a set: with
 *   stale statistics the planner hash-joined the set with a scan of the whole table (Messages.ts).
 * - Planned for each call's values (`plan_cache_mode = force_custom_plan`): the cached generic plan
 *   plpgsql switches to after five calls made some bench drains 2-4 times slower per claim.
 *
 * Migration 0006 applies this text (`CREATE OR REPLACE`); a change here needs a new migration that
 * applies it again (0008 did, for the update by primary key).
 */
const CONTROLLED_CLAIM_LOCK = "svc.queue.controlled-claim"

export const claimControlled = `
    CREATE OR REPLACE FUNCTION queue.claim_controlled(claim uuid, lim integer, after_key text, lease_margin_ms integer)
    RETURNS SETOF queue.messages LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan AS $$
    BEGIN
      PERFORM pg_advisory_xact_lock(hashtext('${CONTROLLED_CLAIM_LOCK}'));
      RETURN QUERY
      WITH heads AS (
        SELECT w.id, w.flow_key FROM queue.queues q CROSS JOIN LATERAL (
          SELECT m.id, m.flow_key, m.not_before FROM queue.messages m
          WHERE m.queue_name = q.name AND m.state = 'queued' ORDER BY m.seq LIMIT q.parallelism) w
        WHERE NOT q.paused AND w.not_before <= now()
      ),
      turn AS (
        (SELECT f.key, f.parallelism, f.rate, f.period_ms FROM queue.flow_control f
          WHERE NOT f.paused AND f.key COLLATE "C" > after_key ORDER BY f.key COLLATE "C")
        UNION ALL
        (SELECT f.key, f.parallelism, f.rate, f.period_ms FROM queue.flow_control f
          WHERE NOT f.paused AND f.key COLLATE "C" <= after_key ORDER BY f.key COLLATE "C")
      ),
      keyed AS (
        SELECT c.id FROM turn k
        CROSS JOIN LATERAL (
          SELECT LEAST(
            CASE WHEN k.parallelism IS NULL THEN lim ELSE k.parallelism - (SELECT count(*) FROM queue.messages m
              WHERE m.flow_key = k.key AND m.state = 'queued' AND m.not_before > now() AND m.claim_id IS NOT NULL) END,
            CASE WHEN k.rate IS NULL THEN lim ELSE k.rate - (SELECT count(*) FROM queue.flow_starts s
              WHERE s.key = k.key AND s.started_at > statement_timestamp() - k.period_ms * interval '1 millisecond') END
          ) AS room
          WHERE EXISTS (SELECT 1 FROM queue.messages m
            WHERE m.flow_key = k.key AND m.state = 'queued' AND m.not_before <= now())
        ) r
        CROSS JOIN LATERAL (
          SELECT m.id FROM queue.messages m
          WHERE m.flow_key = k.key AND m.state = 'queued' AND m.not_before <= now()
            AND (m.queue_name IS NULL OR m.id IN (SELECT h.id FROM heads h))
          ORDER BY m.not_before, m.seq
          LIMIT greatest(r.room, 0)) c
        LIMIT lim
      ),
      picked AS (
        SELECT p.id FROM (
          SELECT k.id, row_number() OVER () AS n FROM keyed k
          UNION ALL
          SELECT h.id, row_number() OVER () AS n FROM heads h WHERE h.flow_key IS NULL
        ) p
        ORDER BY p.n
        LIMIT lim
      ),
      claimed AS (
        UPDATE queue.messages m
        SET claim_id = claim,
            not_before = now() + (m.timeout_ms + lease_margin_ms) * interval '1 millisecond'
        WHERE m.id = ANY(ARRAY(SELECT p.id FROM picked p)) AND m.state = 'queued'
        RETURNING m.*
      ),
      started AS (
        INSERT INTO queue.flow_starts (key, started_at)
        SELECT c.flow_key, statement_timestamp() FROM claimed c JOIN queue.flow_control f ON f.key = c.flow_key
        WHERE f.rate IS NOT NULL
      ),
      pruned AS (
        DELETE FROM queue.flow_starts s USING queue.flow_control f
        WHERE s.key = f.key AND f.key IN (SELECT c.flow_key FROM claimed c)
          AND s.started_at <= statement_timestamp() - f.period_ms * interval '1 millisecond'
      )
      SELECT * FROM claimed;
    END
    $$`
