/**
 * The image cache: one row per image URL a feed gave (key = hex SHA-256 of the URL). `cached` rows
 * have the bytes in object storage under `key`; `pending` ones wait for the background cacher;
 * `failed` ones are retried by later passes up to a bound; `rejected` ones broke a limit (size,
 * content type) and are never fetched again. GET /images/<key> serves cached bytes, otherwise redirects
 * to `original_url`.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE images (
      key text PRIMARY KEY CHECK (key ~ '^[0-9a-f]{64}$'),
      original_url text NOT NULL,
      source_id text NOT NULL,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'cached', 'failed', 'rejected')),
      content_type text,
      size_bytes integer,
      etag text,
      attempts integer NOT NULL DEFAULT 0,
      first_seen_at timestamptz NOT NULL DEFAULT now(),
      last_attempt_at timestamptz,
      cached_at timestamptz
    )
  `
  yield* sql`CREATE INDEX images_todo ON images (first_seen_at) WHERE status IN ('pending', 'failed')`
})
