/**
 * Where an agent can open a snippet (issue 19): the repository's page of its file at its line, or a
 * folder's file path (packages/docs/src/sources/SourceLinks.ts). Null for snippets indexed before, and
 * for sources without one: their `Source:` line keeps the relative path until a re-index.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE snippets ADD COLUMN source_url text`
})
