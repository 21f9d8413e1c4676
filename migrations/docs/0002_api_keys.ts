/**
 * API keys of the REST API v2 (DESIGN.md §5 "Docs lookup"), created with `svc docs keys create`.
 *
 * - The key itself (`svcsk_` + 43 random url-safe characters) is never stored: `key_hash` is its
 *   SHA-256 (hex). The keys are 256 bits of randomness, so a fast unsalted hash is enough — nobody can
 *   brute-force a preimage — and a request is authenticated by one indexed equality lookup.
 * - `prefix` (`svcsk_` + the first 8 random characters) is not secret: it names the key in
 *   `svc docs keys list` and `svc docs keys revoke`, the way a dashboard shows the start of a key.
 * - Team settings: `libraries` (ids `/owner/repo`, or prefixes ending in `*` such as `/acme/*`) and
 *   `sources` (source kinds: folder, npm, git). An empty array means "no restriction".
 * - Revoked keys stay (with `revoked_at`), so the list shows what existed and a revoked key answers
 *   401 like an unknown one.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE api_keys (
      id bigserial PRIMARY KEY,
      name text NOT NULL DEFAULT '',
      team text,
      prefix text NOT NULL UNIQUE,
      key_hash text NOT NULL UNIQUE,
      libraries text[] NOT NULL DEFAULT '{}',
      sources text[] NOT NULL DEFAULT '{}' CHECK (sources <@ ARRAY['folder', 'npm', 'git']::text[]),
      created_at timestamptz NOT NULL DEFAULT now(),
      revoked_at timestamptz
    )
  `
})
