/**
 * Three indexes fewer on `offers`: every index is written for every offer an ingest writes, and the
 * indexes were most of that cost (100,000 offers: 0.9 s without any index, 3.5 s with the ten).
 *
 * - `offers_winner_newest` (newest de-duplicated offers) held 95 % of `offers_active_newest`: a
 *   de-duplicated page walks `offers_active_newest` and skips the few offers that lost their key.
 * - `offers_make_model` and `offers_make_winner_newest` become one index of a make's listed offers,
 *   newest first: a make's page walks it with or without de-duplication, and a model filter reads
 *   the make's entries only.
 * - `offers_source`: expiring the vanished offers of a source reads the table once per run anyway,
 *   and a `sources` filter walks the sort index like the other list filters.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP INDEX offers_winner_newest, offers_make_model, offers_make_winner_newest, offers_source`
  yield* sql`CREATE INDEX offers_make_newest ON offers (lower(make), updated_at DESC, id) WHERE removed_at IS NULL`
})
