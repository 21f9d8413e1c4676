/**
 * `search` stops being computed by the database (`to_tsvector` over `f_unaccent`, generated on every
 * write) and is written by the ingest: the distinct words of title, make and model, made by the same
 * function that splits a request's `query` (packages/listings/src/SearchWords.ts).
 *
 * Why: computing the document was a seventh of writing an offer (measured on 100,000 offers with every
 * index: 3.45 s generated, 2.97 s written as words), and the database's parser disagreed with the
 * query's splitting ("1.6" stayed one word in the document and became two in the query).
 *
 * Rows already stored keep the document they have (they match as they did) until the next run of their
 * source: their content hash was computed without the words, so that run rewrites each of them once.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE offers ALTER COLUMN search DROP EXPRESSION`
  yield* sql`ALTER TABLE offers ALTER COLUMN search SET DEFAULT ''`
  yield* sql`ALTER TABLE offers ALTER COLUMN search SET NOT NULL`
  yield* sql`DROP FUNCTION f_unaccent(text)`
})
