/**
 * Flow-control claims in turns, in one call (packages/queue/src/store/sql/claimControlled.ts).
 *
 * - `queue.claim_controlled(...)`: the controlled claim, from its live definition.
 * - `flow_control_turn`: the keys in byte order, so a claim's turn starts after the last key served
 *   without sorting every key, whatever the database's collation (the worker compares keys the same
 *   way).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { claimControlled } from "../../packages/queue/src/store/sql/claimControlled.ts"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX flow_control_turn ON flow_control (key COLLATE "C") WHERE NOT paused`
  yield* sql.unsafe(claimControlled)
})
