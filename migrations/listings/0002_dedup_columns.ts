/**
 * De-duplication: `dedup_key` is computed at ingest from the normalized make, model, year, mileage
 * and price (+ currency). Among the listed offers of one key, `dedup_winner` marks the one a
 * de-duplicated answer shows when no filter tells duplicates apart: the most recently updated, then
 * the lowest id. Ingest maintains it in the same transaction as the rows it changes.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { dedupKeySql, winnerOrderSql } from "../../packages/listings/src/Dedup.ts"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE offers ADD COLUMN dedup_key text NOT NULL DEFAULT ''`
  yield* sql`ALTER TABLE offers ADD COLUMN dedup_winner boolean NOT NULL DEFAULT false`
  // Rows of older deployments: the same key the ingest computes (packages/listings/src/Dedup.ts).
  yield* sql`
    UPDATE offers SET dedup_key = ${sql.literal(dedupKeySql)}
  `
  yield* sql`
    UPDATE offers SET dedup_winner = true
    FROM (SELECT DISTINCT ON (dedup_key) id FROM offers WHERE removed_at IS NULL ORDER BY dedup_key, ${sql.literal(winnerOrderSql())}) w
    WHERE offers.id = w.id
  `
  yield* sql`
    CREATE INDEX offers_dedup ON offers (dedup_key, ${sql.literal(winnerOrderSql())}) WHERE removed_at IS NULL
  `
  yield* sql`
    CREATE INDEX offers_winner_newest ON offers (updated_at DESC, id) WHERE removed_at IS NULL AND dedup_winner
  `
})
