/**
 * Each version's own source (kind and location), written when the version is registered: an added
 * version becomes its library's default, with the library's source, only once it is ready (Indexer.ts),
 * so a version queued by an interrupted add was resumed from the library's source — the previous
 * version's — and stored that documentation under the new label (an outside re-probe). NULL for versions
 * registered before: they are read from the library's source, as they were.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE versions ADD COLUMN source_kind text, ADD COLUMN source_location text`
})
