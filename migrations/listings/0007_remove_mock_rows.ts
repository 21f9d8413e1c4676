/**
 * Older deployments ran the mock source in production: its demo offers (source `mock`, ids `mock:*`)
 * must not be served as real listings. This removes them, with their runs and image rows, once.
 * A deployment that enables the mock source again (ENABLE_MOCK_SOURCE=true) gets fresh demo rows.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DELETE FROM offers WHERE source_id = 'mock' OR id LIKE 'mock:%'`
  yield* sql`DELETE FROM images WHERE source_id = 'mock'`
  yield* sql`DELETE FROM ingest_runs WHERE source_id = 'mock'`
  yield* sql`DELETE FROM ingest_leases WHERE source_id = 'mock'`
})
