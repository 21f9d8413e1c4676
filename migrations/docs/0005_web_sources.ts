/**
 * Issue 19's sources: websites (and llms.txt) and OpenAPI documents are source kinds of their own
 * (`website`, `openapi`), for libraries and for a key's team settings (`--sources website`); a
 * library's rules for agents from its `svc.json` (a JSON array of strings).
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
})
