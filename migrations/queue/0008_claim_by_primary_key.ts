/**
 * `queue.claim_controlled` again, from its live definition (packages/queue/src/store/sql/claimControlled.ts):
 * it now updates the picked messages by primary key (`id = ANY(array)`) instead of joining them as a
 * set, which stale statistics turned into a scan of the whole table.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { claimControlled } from "../../packages/queue/src/store/sql/claimControlled.ts"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(claimControlled)
})
