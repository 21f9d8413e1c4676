/**
 * De-duplication: `dedup_key` is computed at ingest from the normalized make, model, year, mileage
 * and price (+ currency). Among the listed offers of one key, `dedup_winner` marks the one a
 * de-duplicated answer shows when no filter tells duplicates apart: the most recently updated, then
 * the lowest id. Ingest maintains it in the same transaction as the rows it changes.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { winnerOrderSql } from "../../packages/listings/src/Dedup.ts"

/**
 * The key as this migration computed it when it was written: lower(make) | lower(model) | year |
 * mileage | price rounded | currency. Not Dedup.ts's `dedupKeySql`, which it imported until the key
 * changed: a migration's meaning must not change after it ran (databases that ran it hold these
 * keys; a fresh one must reach the same state), and the key now reads `make_key`/`model_key`, which
 * migration 0015 adds, so on a fresh database it would fail here. Migration 0016 recomputes every key
 * with the current definition.
 */
const KEY_AT_0002 = "concat_ws('|', lower(make), lower(model), coalesce(year::text, ''), " +
  "coalesce(mileage::text, ''), floor(price + 0.5)::bigint::text, currency)"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE offers ADD COLUMN dedup_key text NOT NULL DEFAULT ''`
  yield* sql`ALTER TABLE offers ADD COLUMN dedup_winner boolean NOT NULL DEFAULT false`
  // Rows of older deployments: the same key the ingest computed then (see KEY_AT_0002).
  yield* sql`
    UPDATE offers SET dedup_key = ${sql.literal(KEY_AT_0002)}
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
