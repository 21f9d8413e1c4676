/**
 * Ranking (issue 19): the words inside the identifiers of a snippet's title and heading path
 * (`maxRetryAfter` → max retry after), written by the indexer (packages/docs/src/ranking/Identifiers.ts),
 * join the full-text vector as weight D; ranking/Bm25.ts weighs each field (A title, B heading path,
 * C description and body, D these words) from `unnest(search)`.
 *
 * Snippets indexed before this migration get the same words from an SQL approximation of that split
 * (camelCase humps and `_`, `.`, `-` separators; ASCII letters); a re-index writes the exact ones.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE snippets ADD COLUMN identifiers text NOT NULL DEFAULT ''`
  yield* sql`
    UPDATE snippets s SET identifiers = coalesce((
      SELECT string_agg(lower(regexp_replace(
        regexp_replace(m[1], '([a-z0-9])([A-Z])', '\\1 \\2', 'g'), '[^A-Za-z0-9]+', ' ', 'g')), ' ')
      FROM regexp_matches(s.title || ' ' || s.heading,
        '([A-Za-z0-9]+(?:[_.-]+[A-Za-z0-9]+)+|[A-Za-z0-9]*[a-z][A-Z][A-Za-z0-9]*)', 'g') m
    ), '')`
  yield* sql`DROP INDEX snippets_search`
  yield* sql`ALTER TABLE snippets DROP COLUMN search`
  yield* sql`
    ALTER TABLE snippets ADD COLUMN search tsvector GENERATED ALWAYS AS (
      setweight(to_tsvector('english'::regconfig, title), 'A') ||
      setweight(to_tsvector('english'::regconfig, heading), 'B') ||
      setweight(to_tsvector('english'::regconfig, description || ' ' || body), 'C') ||
      setweight(to_tsvector('english'::regconfig, identifiers), 'D')
    ) STORED`
  yield* sql`CREATE INDEX snippets_search ON snippets USING gin (search)`
})
