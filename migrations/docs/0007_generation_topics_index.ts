/**
 * Library search by what a library's documentation is about (Search.ts: a name that matches no
 * library's id or title finds the libraries whose topics hold it): a GIN index over each generation's
 * topics vector, so that search reads the matching generations only, not every library's vector.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX generations_topics ON generations USING gin (topics)`
})
