/**
 * Issue 19's sources: websites (and llms.txt) and OpenAPI documents are source kinds of their own
 * (`website`, `openapi`), for libraries and for a key's team settings (`--sources website`); a
 * library's rules for agents from its `svc.json` (a JSON array of strings); the scheduled refresh's
 * claim (`refresher`: one row, who runs it and until when, when it is due next) and the revision
 * each git or npm library was last read at (`refresh_revisions`: a commit, a package version).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE libraries DROP CONSTRAINT libraries_source_kind_check`
  yield* sql`
    ALTER TABLE libraries ADD CONSTRAINT libraries_source_kind_check
    CHECK (source_kind IN ('folder', 'npm', 'git', 'website', 'openapi'))`
  yield* sql`ALTER TABLE api_keys DROP CONSTRAINT api_keys_sources_check`
  yield* sql`
    ALTER TABLE api_keys ADD CONSTRAINT api_keys_sources_check
    CHECK (sources <@ ARRAY['folder', 'npm', 'git', 'website', 'openapi']::text[])`
  yield* sql`ALTER TABLE libraries ADD COLUMN rules jsonb NOT NULL DEFAULT '[]'::jsonb`
  yield* sql`
    CREATE TABLE refresher (
      id smallint PRIMARY KEY CHECK (id = 1),
      holder text NOT NULL,
      lease_until timestamptz,
      next_run timestamptz NOT NULL
    )`
  yield* sql`
    CREATE TABLE refresh_revisions (
      library_id text PRIMARY KEY REFERENCES libraries (id) ON DELETE CASCADE,
      revision text NOT NULL,
      checked_at timestamptz NOT NULL DEFAULT now()
    )`
})
