/**
 * The documentation index (schema `docs`; search_path is set to it while migrating).
 *
 * - `libraries`: one row per library, id `/owner/repo`. `default_version` is what `/owner/repo`
 *   (without a version) answers with: the version of the latest `svc docs add`.
 * - `versions`: one row per indexed version, with its refresh state (queued → indexing → ready |
 *   failed) and the *live generation*: the snippets readers see.
 * - `generations` / `snippets`: a re-index writes a whole new generation of snippets, then switches
 *   `versions.generation_id` to it and deletes the old one in one transaction. Readers select the
 *   pointer and the snippets in one statement, so they see all of the old generation or all of the
 *   new one, never half or a mix. A failed run deletes its own generation; one left by a crash is
 *   deleted by a later run of its version once it is an hour old.
 * - `snippets.search`: full text with the title weighted A, the heading path B, description and body
 *   C (english stemming, so "encoding" in a question finds "encode" in the docs).
 * - pg_trgm indexes the library id and title for fuzzy name search ("reactjs" finds "/facebook/react").
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public`
  yield* sql`
    CREATE TABLE libraries (
      id text PRIMARY KEY CHECK (id ~ '^/[^/]+/[^/]+$'),
      title text NOT NULL,
      description text NOT NULL DEFAULT '',
      source_kind text NOT NULL CHECK (source_kind IN ('folder', 'npm', 'git')),
      source_location text NOT NULL,
      trust_score double precision NOT NULL DEFAULT 5,
      default_version text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )
  `
  yield* sql`
    CREATE INDEX libraries_name_trgm ON libraries
    USING gin ((lower(id || ' ' || title)) public.gin_trgm_ops)
  `
  yield* sql`
    CREATE TABLE versions (
      id bigserial PRIMARY KEY,
      library_id text NOT NULL REFERENCES libraries (id) ON DELETE CASCADE,
      version text NOT NULL CHECK (version ~ '^[^/\\s]+$'),
      state text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'indexing', 'ready', 'failed')),
      error_category text,
      generation_id bigint,
      snippet_count integer NOT NULL DEFAULT 0,
      token_count integer NOT NULL DEFAULT 0,
      last_update timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (library_id, version)
    )
  `
  yield* sql`
    CREATE TABLE generations (
      id bigserial PRIMARY KEY,
      version_id bigint NOT NULL REFERENCES versions (id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL DEFAULT now()
    )
  `
  yield* sql`CREATE INDEX generations_version ON generations (version_id)`
  yield* sql`
    CREATE TABLE snippets (
      id bigserial PRIMARY KEY,
      generation_id bigint NOT NULL REFERENCES generations (id) ON DELETE CASCADE,
      ordinal integer NOT NULL,
      kind text NOT NULL CHECK (kind IN ('code', 'prose')),
      title text NOT NULL,
      heading_path text[] NOT NULL,
      heading text NOT NULL,
      description text NOT NULL DEFAULT '',
      language text,
      body text NOT NULL,
      source_path text NOT NULL,
      tokens integer NOT NULL,
      search tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english'::regconfig, title), 'A') ||
        setweight(to_tsvector('english'::regconfig, heading), 'B') ||
        setweight(to_tsvector('english'::regconfig, description || ' ' || body), 'C')
      ) STORED
    )
  `
  yield* sql`CREATE INDEX snippets_generation ON snippets (generation_id, ordinal)`
  yield* sql`CREATE INDEX snippets_search ON snippets USING gin (search)`
})
