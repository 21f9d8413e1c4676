/**
 * Publish options of issue 18.
 *
 * - `messages.retry_delay`: the message's `Svc-Retry-Delay`, an expression of `retried` (see
 *   packages/queue/src/RetryDelay.ts) the worker evaluates for each retry; NULL = the queue's
 *   exponential backoff. `Svc-Not-Before` needs no column: it only sets the first `not_before`.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE messages ADD COLUMN retry_delay text`
})
