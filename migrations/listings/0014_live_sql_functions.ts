/**
 * The listings SQL functions from their live definitions (packages/listings/src/sql/), with
 * `CREATE OR REPLACE`: from here on, each function is what its file there says, and a reader finds
 * it without reading migration history. The text is the same as 0013's (its rules now come from
 * packages/listings/src/Dedup.ts); a later change to a function edits its file and adds a migration
 * that applies it again.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { recomputeDedupWinners } from "../../packages/listings/src/sql/recomputeDedupWinners.ts"
import { writeOfferBatch } from "../../packages/listings/src/sql/writeOfferBatch.ts"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(recomputeDedupWinners)
  yield* sql.unsafe(writeOfferBatch)
})
