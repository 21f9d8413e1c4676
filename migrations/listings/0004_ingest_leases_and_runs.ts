/**
 * Ingest coordination and history.
 *
 * - `ingest_leases`: at most one holder per source across every instance. A holder takes the row when
 *   it is absent or expired, renews `expires_at` while its run goes on and deletes it when done; a
 *   holder that dies simply stops renewing, and the lease runs out.
 * - `ingest_runs`: one row per run (counts, outcome, times). Raw errors stay in the log; `failure`
 *   holds a short category only.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE ingest_leases (
      source_id text PRIMARY KEY,
      holder text NOT NULL,
      acquired_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL
    )
  `
  yield* sql`
    CREATE TABLE ingest_runs (
      id bigserial PRIMARY KEY,
      source_id text NOT NULL,
      trigger text NOT NULL CHECK (trigger IN ('scheduled', 'manual')),
      holder text NOT NULL,
      started_at timestamptz NOT NULL DEFAULT now(),
      finished_at timestamptz,
      ok boolean,
      offers_fetched integer NOT NULL DEFAULT 0,
      offers_upserted integer NOT NULL DEFAULT 0,
      records_rejected integer NOT NULL DEFAULT 0,
      offers_expired integer NOT NULL DEFAULT 0,
      failure text
    )
  `
  yield* sql`CREATE INDEX ingest_runs_last ON ingest_runs (source_id, finished_at DESC) WHERE finished_at IS NOT NULL`
})
