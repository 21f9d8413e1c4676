/**
 * The offer table (schema `listings`; search_path is set to it while migrating).
 *
 * - `id` is `<source_id>:<native_id>`, exactly what the API returns as CarOffer.id.
 * - `images` / `thumbnail` hold image *keys* (hex SHA-256 of the original URL, see `images`); the API
 *   turns them into `{PUBLIC_BASE_URL}/images/<key>`.
 * - `removed_at` is set when an offer vanished from a successful full run of its source (or its
 *   `expires_at` passed): such offers are no longer listed.
 * - `search` is the full-text document over title, make and model, accent-folded (`f_unaccent`).
 * - `content_hash` lets an ingest skip rewriting unchanged offers.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE EXTENSION IF NOT EXISTS unaccent SCHEMA public`
  // unaccent() is only STABLE (it reads a dictionary); pinning the dictionary makes it safe to mark
  // IMMUTABLE, which a generated column and an index need.
  yield* sql`
    CREATE FUNCTION f_unaccent(text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    RETURN public.unaccent('public.unaccent'::regdictionary, $1)
  `
  yield* sql`
    CREATE TABLE offers (
      id text PRIMARY KEY,
      source_id text NOT NULL,
      native_id text NOT NULL,
      title text NOT NULL,
      make text NOT NULL,
      model text NOT NULL,
      price double precision NOT NULL,
      currency text NOT NULL CHECK (currency IN ('PLN', 'EUR', 'USD')),
      fuel text NOT NULL,
      transmission text NOT NULL,
      region text NOT NULL,
      original_url text NOT NULL,
      year integer,
      mileage integer,
      power integer,
      location text,
      images jsonb NOT NULL DEFAULT '[]',
      thumbnail text,
      updated_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz,
      first_seen_at timestamptz NOT NULL DEFAULT now(),
      removed_at timestamptz,
      content_hash text NOT NULL DEFAULT '',
      search tsvector GENERATED ALWAYS AS (
        to_tsvector('simple'::regconfig, listings.f_unaccent(title || ' ' || make || ' ' || model))
      ) STORED
    )
  `
  yield* sql`CREATE INDEX offers_active_newest ON offers (updated_at DESC, id) WHERE removed_at IS NULL`
  yield* sql`CREATE INDEX offers_source ON offers (source_id)`
  yield* sql`CREATE INDEX offers_make_model ON offers (lower(make), lower(model)) WHERE removed_at IS NULL`
  yield* sql`CREATE INDEX offers_search ON offers USING gin (search) WHERE removed_at IS NULL`
})
