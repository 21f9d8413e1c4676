/**
 * The delivery queue's tables (schema `queue`; search_path is set to it while migrating).
 *
 * - `messages`: every accepted message, its delivery settings and its state. A message waiting for
 *   delivery is `queued` with `not_before` = when it is due. A worker claims it by pushing
 *   `not_before` to the end of a lease (timeout + margin) and setting `claim_id`; if the worker dies,
 *   the lease simply runs out and the message is due again. Every completion is guarded by
 *   `claim_id`, so a worker whose lease expired cannot overwrite a later claim's outcome.
 * - `dlq`: one row per message whose retries were used up (the message row stays, state `failed`).
 * - `topics` / `topic_endpoints`: URL groups and their default headers.
 * - `signing_keys`: the current and next HS256 signing keys (one row).
 * - `dedup`: `Svc-Deduplication-Id`s seen recently, with the answer given the first time.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE messages (
      id uuid PRIMARY KEY,
      kind text NOT NULL DEFAULT 'message' CHECK (kind IN ('message', 'callback', 'failure_callback')),
      state text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'delivered', 'failed', 'cancelled')),
      url text NOT NULL,
      method text NOT NULL DEFAULT 'POST',
      headers jsonb NOT NULL DEFAULT '{}',
      body bytea NOT NULL DEFAULT '',
      timeout_ms integer NOT NULL,
      max_retries integer NOT NULL,
      retried integer NOT NULL DEFAULT 0,
      not_before timestamptz NOT NULL,
      scheduled_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      claim_id uuid,
      delivered_at timestamptz,
      last_status integer,
      last_error text,
      callback jsonb,
      failure_callback jsonb,
      topic_name text,
      endpoint_name text,
      caller_ip text,
      dedup_id text,
      source_message_id uuid
    )`
  // The claim scans this index only: queued messages by due time.
  yield* sql`CREATE INDEX messages_due ON messages (not_before) WHERE state = 'queued'`
  yield* sql`
    CREATE TABLE dlq (
      id uuid PRIMARY KEY,
      seq bigserial NOT NULL UNIQUE,
      message_id uuid NOT NULL UNIQUE REFERENCES messages (id) ON DELETE CASCADE,
      failed_at timestamptz NOT NULL DEFAULT now(),
      response_status integer,
      response_headers jsonb,
      response_body bytea,
      last_error text
    )`
  yield* sql`
    CREATE TABLE topics (
      name text PRIMARY KEY,
      headers jsonb NOT NULL DEFAULT '{}',
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE topic_endpoints (
      topic_name text NOT NULL REFERENCES topics (name) ON DELETE CASCADE,
      url text NOT NULL,
      name text,
      position bigserial NOT NULL,
      PRIMARY KEY (topic_name, url)
    )`
  yield* sql`CREATE UNIQUE INDEX topic_endpoints_name ON topic_endpoints (topic_name, name) WHERE name IS NOT NULL`
  yield* sql`
    CREATE TABLE signing_keys (
      id integer PRIMARY KEY CHECK (id = 1),
      current_key text NOT NULL,
      next_key text NOT NULL,
      rotated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE dedup (
      id text PRIMARY KEY,
      result jsonb NOT NULL,
      expires_at timestamptz NOT NULL
    )`
})
