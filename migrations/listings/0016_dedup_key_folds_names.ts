/**
 * The de-duplication key compares make and model as the filters do (packages/listings/src/Dedup.ts,
 * by SearchWords.filterKey): "Škoda"/"Skoda", "Mercedes-Benz"/"Mercedes Benz" and "Citroën"/"Citroen"
 * are now one car. The key compared `lower(make)`/`lower(model)`, so the same car offered by two feeds
 * spelt two ways was shown twice to the app.
 *
 * Here every stored offer (listed or removed) gets the key as Dedup.ts defines it now, computed by its
 * SQL twin `dedupKeySql` from `make_key`/`model_key` (which every row has since 0015), and then the winner
 * of every key is decided again by the live `listings.recompute_dedup_winners` (src/sql/): offers that
 * had a key each may now share one, and a key may have lost offers to another. All of it under the
 * writers' lock, as every writer of offers takes it, held to the commit of the migrations' transaction:
 * an instance still ingesting meanwhile waits, and never sees a key with two winners or none.
 *
 * In batches of {@link BATCH} offers (and keys), by id (and key) order as 0015 computed the filter keys,
 * each statement bounded, with a progress line per batch. Only rows whose key changes are written.
 * `offers_version` is bumped, so the answers instances remember (see Offers) are read again.
 *
 * The content hash of an offer covers its key, so the next ingest of a source rewrites once each offer
 * whose key changed here (same values and key; an offer whose feed gives no `updatedAt` is re-dated
 * then, as by any change).
 */
import { Effect, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { dedupKeySql, lockWritersSql } from "../../packages/listings/src/Dedup.ts"

/** Offers (or keys) per statement. */
const BATCH = 5_000

const Progress = Schema.Struct({ last: Schema.NullOr(Schema.String), read: Schema.Number, changed: Schema.Number })
const Key = Schema.Struct({ dedup_key: Schema.String })
const Count = Schema.Struct({ n: Schema.Number })

/**
 * Computes every stored offer's dedup key again and every key's winner, under the writers' lock (taken
 * here, held to the end of the caller's transaction: run it inside one, as a migration is). A later
 * change of the key (or of `filterKey`) needs a migration that runs this again.
 */
export const rekeyDedup = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`SELECT ${sql.literal(lockWritersSql)}`
  const count = SqlSchema.findAll({ Request: Schema.Void, Result: Count, execute: () => sql`SELECT count(*)::int AS n FROM listings.offers` })
  const [total] = yield* count()
  if (total!.n === 0) return

  const rekey = SqlSchema.findAll({
    Request: Schema.String,
    Result: Progress,
    execute: (after) =>
      sql`
        WITH batch AS (
          SELECT id, ${sql.literal(dedupKeySql)} AS dedup_key FROM listings.offers
          WHERE id > ${after} ORDER BY id LIMIT ${BATCH}
        ),
        changed AS (
          UPDATE listings.offers o SET dedup_key = b.dedup_key FROM batch b
          WHERE o.id = b.id AND o.dedup_key <> b.dedup_key
          RETURNING o.id
        )
        SELECT (SELECT max(id) FROM batch) AS last, (SELECT count(*)::int FROM batch) AS read,
          (SELECT count(*)::int FROM changed) AS changed`
  })
  let after = ""
  let read = 0
  let changed = 0
  while (true) {
    const [batch] = yield* rekey(after)
    if (batch!.last === null) break
    read += batch!.read
    changed += batch!.changed
    after = batch!.last
    yield* Effect.logInfo(`Migration 0016: dedup keys of ${read} of ${total!.n} offers computed again, ${changed} changed`)
  }

  // the keys of listed offers: a key only removed offers hold has no winner
  const keysAfter = SqlSchema.findAll({
    Request: Schema.String,
    Result: Key,
    execute: (afterKey) =>
      sql`SELECT DISTINCT dedup_key FROM listings.offers WHERE removed_at IS NULL AND dedup_key > ${afterKey}
        ORDER BY dedup_key LIMIT ${BATCH}`
  })
  let afterKey = ""
  let keys = 0
  while (true) {
    const batch = (yield* keysAfter(afterKey)).map((row) => row.dedup_key)
    if (batch.length === 0) break
    yield* sql`SELECT listings.recompute_dedup_winners(${batch}::text[])`
    keys += batch.length
    afterKey = batch[batch.length - 1]!
    yield* Effect.logInfo(`Migration 0016: winners of ${keys} dedup keys decided again`)
  }
  // tells instances' remembered answers and counts that the listed offers changed (see Offers)
  yield* sql`UPDATE listings.offers_version SET version = version + 1`
})

export default rekeyDedup
