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
import { Effect } from "effect";
import { SqlClient } from "effect/sql";
declare const _default: Effect.Effect<void, import("effect/sql/SqlError").SqlError, SqlClient.SqlClient>;
export default _default;
