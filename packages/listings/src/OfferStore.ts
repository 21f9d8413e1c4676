/**
 * Writing offers: batched upserts, expiry of vanished offers, and the `dedup_winner` flags.
 *
 * One batch is one transaction: the upsert, the image rows and the winner flags of every key it
 * touched commit together, so a reader (one statement, one snapshot) never sees a key with two
 * winners or none. Winner recomputation takes a transaction-scoped advisory lock first: sources ingest
 * in parallel and may touch the same key, and under READ COMMITTED the last transaction to recompute
 * then sees every earlier commit.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import type { FeedImage, OfferRow } from "./Normalize.ts"

const DEDUP_LOCK = "listings.dedup_winner"

export class OfferStore extends Context.Service<OfferStore, {
  /** Upserts one batch (ids unique within it); returns how many rows were inserted or changed. */
  readonly upsertBatch: (
    sourceId: string,
    rows: ReadonlyArray<OfferRow>,
    images: ReadonlyArray<FeedImage>
  ) => Effect.Effect<number, SqlError.SqlError>
  /** After a successful full run: marks the source's listed offers not in `seenIds` (or past their expiry) removed. */
  readonly expireVanished: (sourceId: string, seenIds: ReadonlyArray<string>) => Effect.Effect<number, SqlError.SqlError>
}>()("@svc/listings/OfferStore") {
  static readonly layer = Layer.effect(
    OfferStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const recomputeWinners = (keys: ReadonlyArray<string>) =>
        keys.length === 0 ? Effect.void : Effect.gen(function*() {
          yield* sql`SELECT pg_advisory_xact_lock(hashtext(${DEDUP_LOCK}))`
          yield* sql`
            WITH k AS (SELECT DISTINCT unnest(${keys}::text[]) AS dedup_key),
            ranked AS (
              SELECT o.id, row_number() OVER (PARTITION BY o.dedup_key ORDER BY o.updated_at DESC, o.id) = 1 AS winner
              FROM listings.offers o JOIN k ON k.dedup_key = o.dedup_key
              WHERE o.removed_at IS NULL
            )
            UPDATE listings.offers o SET dedup_winner = r.winner
            FROM ranked r WHERE o.id = r.id AND o.dedup_winner <> r.winner`
        })

      const upsertBatch = Effect.fn("OfferStore.upsertBatch")(function*(
        sourceId: string,
        rows: ReadonlyArray<OfferRow>,
        images: ReadonlyArray<FeedImage>
      ) {
        if (rows.length === 0) return 0
        return yield* sql.withTransaction(Effect.gen(function*() {
          const changed = yield* sql<{ readonly dedup_key: string; readonly old_key: string | null }>`
            WITH input AS (
              SELECT * FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(
                id text, source_id text, native_id text, title text, make text, model text, price float8,
                currency text, fuel text, transmission text, region text, original_url text, year int,
                mileage int, power int, location text, latitude float8, longitude float8, images jsonb,
                thumbnail text, updated_at timestamptz, expires_at timestamptz, dedup_key text, content_hash text)
            ),
            old AS (
              SELECT o.id, o.dedup_key FROM listings.offers o JOIN input USING (id)
            ),
            up AS (
              INSERT INTO listings.offers AS o (id, source_id, native_id, title, make, model, price, currency, fuel,
                transmission, region, original_url, year, mileage, power, location, latitude, longitude, images,
                thumbnail, updated_at, expires_at, dedup_key, content_hash, dedup_winner, removed_at)
              SELECT id, source_id, native_id, title, make, model, price, currency, fuel, transmission, region,
                original_url, year, mileage, power, location, latitude, longitude, images, thumbnail,
                coalesce(updated_at, now()), expires_at, dedup_key, content_hash, false, NULL
              FROM input
              ON CONFLICT (id) DO UPDATE SET
                source_id = excluded.source_id, native_id = excluded.native_id, title = excluded.title,
                make = excluded.make, model = excluded.model, price = excluded.price, currency = excluded.currency,
                fuel = excluded.fuel, transmission = excluded.transmission, region = excluded.region,
                original_url = excluded.original_url, year = excluded.year, mileage = excluded.mileage,
                power = excluded.power, location = excluded.location, latitude = excluded.latitude,
                longitude = excluded.longitude, images = excluded.images, thumbnail = excluded.thumbnail,
                updated_at = excluded.updated_at, expires_at = excluded.expires_at, dedup_key = excluded.dedup_key,
                content_hash = excluded.content_hash, removed_at = NULL
              WHERE o.content_hash <> excluded.content_hash OR o.removed_at IS NOT NULL
              RETURNING o.id, o.dedup_key
            )
            SELECT up.dedup_key, old.dedup_key AS old_key FROM up LEFT JOIN old USING (id)`
          if (images.length > 0) {
            yield* sql`
              INSERT INTO listings.images (key, original_url, source_id)
              SELECT key, url, ${sourceId} FROM jsonb_to_recordset(${JSON.stringify(images)}::jsonb) AS r(key text, url text)
              ON CONFLICT (key) DO NOTHING`
          }
          const keys = new Set<string>()
          for (const row of changed) {
            keys.add(row.dedup_key)
            if (row.old_key !== null) keys.add(row.old_key)
          }
          yield* recomputeWinners([...keys])
          return changed.length
        }))
      })

      const expireVanished = Effect.fn("OfferStore.expireVanished")(function*(
        sourceId: string,
        seenIds: ReadonlyArray<string>
      ) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          const expired = yield* sql<{ readonly dedup_key: string }>`
            UPDATE listings.offers o
            SET removed_at = now(), dedup_winner = false,
                expires_at = CASE WHEN o.expires_at IS NULL OR o.expires_at > now() THEN now() ELSE o.expires_at END
            WHERE o.source_id = ${sourceId} AND o.removed_at IS NULL
              AND (
                (o.expires_at IS NOT NULL AND o.expires_at <= now())
                -- a hashed subplan: one pass over the seen ids
                OR o.id NOT IN (SELECT unnest(${seenIds}::text[]))
              )
            RETURNING o.dedup_key`
          yield* recomputeWinners([...new Set(expired.map((row) => row.dedup_key))])
          return expired.length
        }))
      })

      return OfferStore.of({ upsertBatch, expireVanished })
    })
  )
}
