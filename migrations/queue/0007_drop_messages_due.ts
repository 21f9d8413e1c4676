/**
 * `messages_due` (every queued message by due time) goes: since flow control and queues (0003) the
 * claims and the idle sleep read `messages_due_free`, `messages_flow` and `messages_fifo`, which
 * together cover every queued message, so it only cost two more index entries per message (its
 * insert and its claim). Bulk cancel by filter reads the three (src/store/Messages.ts, `cancelMany`).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP INDEX messages_due`
})
