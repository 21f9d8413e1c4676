/**
 * How many of a key's or queue's queued messages wait and how many are in flight (an unexpired claim),
 * as `GET /v2/flow-control` and `GET /v2/queues` show them: one definition for both stores.
 */
import type { PgClient } from "@effect/sql-pg"
import type { Statement } from "effect/sql"

/** `waiting` and `in_flight` of the queued messages whose `column` equals `value` (a lateral subquery). */
export const queuedCountsSql = (sql: PgClient.PgClient, column: "flow_key" | "queue_name", value: Statement.Fragment): Statement.Fragment =>
  sql`(
    SELECT
      count(*) FILTER (WHERE NOT (m.claim_id IS NOT NULL AND m.not_before > now()))::int4 AS waiting,
      count(*) FILTER (WHERE m.claim_id IS NOT NULL AND m.not_before > now())::int4 AS in_flight
    FROM queue.messages m WHERE m.${sql.literal(column)} = ${value} AND m.state = 'queued')`
