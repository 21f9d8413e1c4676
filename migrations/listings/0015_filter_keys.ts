/**
 * Filter keys: `make_key`, `model_key`, `fuel_key`, `transmission_key` and `region_key`, each the
 * offer's value as the filters compare it (packages/listings/src/SearchWords.ts `filterKey`: case,
 * accents and punctuation do not count, "Škoda" -> "skoda"), so that `?make=Skoda` finds an offer the
 * feed wrote "Škoda" — it compared `lower(make)`, and a phone keyboard user typed no háček.
 *
 * The ingest writes the keys (`write_offer_batch` takes five arrays more: its old signature is
 * dropped, as `CREATE OR REPLACE` with other arguments would make a second function). Offers stored
 * before get theirs here, computed by the same function, a batch at a time; their content hash does
 * not cover the keys, so the next ingest rewrites none of them for it. The make's index reads the key
 * now (`offers_make_newest`), so the make filter stays an index walk.
 *
 * A later change of `filterKey` needs a migration that computes the keys again: {@link rekeyOffers}.
 */
import { Effect, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { filterKey } from "../../packages/listings/src/SearchWords.ts"
import { writeOfferBatch } from "../../packages/listings/src/sql/writeOfferBatch.ts"

/** Offers keyed per statement. */
const BATCH = 5_000

const Stored = Schema.Struct({
  id: Schema.String,
  make: Schema.String,
  model: Schema.String,
  fuel: Schema.String,
  transmission: Schema.String,
  region: Schema.String
})

/** Computes every stored offer's filter keys (listed or removed), in id order, {@link BATCH} at a time. */
export const rekeyOffers = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const next = SqlSchema.findAll({
    Request: Schema.String,
    Result: Stored,
    execute: (after) =>
      sql`SELECT id, make, model, fuel, transmission, region FROM listings.offers WHERE id > ${after} ORDER BY id LIMIT ${BATCH}`
  })
  let after = ""
  while (true) {
    const rows = yield* next(after)
    if (rows.length === 0) return
    const keys = (field: "make" | "model" | "fuel" | "transmission" | "region") => rows.map((row) => filterKey(row[field]))
    yield* sql`
      UPDATE listings.offers o SET make_key = k.make_key, model_key = k.model_key, fuel_key = k.fuel_key,
        transmission_key = k.transmission_key, region_key = k.region_key
      FROM unnest(${rows.map((row) => row.id)}::text[], ${keys("make")}::text[], ${keys("model")}::text[],
        ${keys("fuel")}::text[], ${keys("transmission")}::text[], ${keys("region")}::text[])
        AS k(id, make_key, model_key, fuel_key, transmission_key, region_key)
      WHERE o.id = k.id`
    after = rows[rows.length - 1]!.id
  }
})

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE offers ADD COLUMN make_key text, ADD COLUMN model_key text, ADD COLUMN fuel_key text,
    ADD COLUMN transmission_key text, ADD COLUMN region_key text`
  yield* rekeyOffers
  yield* sql`ALTER TABLE offers ALTER COLUMN make_key SET NOT NULL, ALTER COLUMN model_key SET NOT NULL,
    ALTER COLUMN fuel_key SET NOT NULL, ALTER COLUMN transmission_key SET NOT NULL, ALTER COLUMN region_key SET NOT NULL`
  yield* sql`DROP INDEX offers_make_newest`
  yield* sql`CREATE INDEX offers_make_newest ON offers (make_key, updated_at DESC, id) WHERE removed_at IS NULL`
  // the signature 0013 created (and 0014 applied again); a fresh database also has the new one from 0014
  yield* sql`DROP FUNCTION write_offer_batch(text, text[], text[], text[], text[], text[], text[], text[], float8[],
    text[], text[], text[], text[], text[], integer[], integer[], integer[], text[], float8[], float8[], jsonb[],
    text[], timestamptz[], timestamptz[], text[], text[], text[])`
  yield* sql.unsafe(writeOfferBatch)
})
