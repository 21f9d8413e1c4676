/**
 * `queue.record_message_updates` again, from its live definition (packages/queue/src/store/sql/
 * recordMessageUpdates.ts): a cancelled message whose attempt was already in flight records
 * `delivered` (and, for a callback, `callback_delivered` on its source) when that attempt's 2xx
 * comes back, since the destination received it.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { recordMessageUpdates } from "../../packages/queue/src/store/sql/recordMessageUpdates.ts"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(recordMessageUpdates)
})
