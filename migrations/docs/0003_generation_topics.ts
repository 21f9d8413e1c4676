/**
 * What a library's documentation is about, as one full-text vector per generation (its snippets'
 * titles, headings and descriptions): a library search weighs the question against it in one row
 * per library instead of ranking every snippet of every look-alike library.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE generations ADD COLUMN topics tsvector`
  yield* sql`
    UPDATE generations g SET topics = (
      SELECT to_tsvector('english'::regconfig, left(string_agg(s.title || ' ' || s.heading || ' ' || s.description, ' '), 500000))
      FROM snippets s WHERE s.generation_id = g.id
    )`
})
