/**
 * Writing a batch of offers in one call: `write_offer_batch` registers the batch's images, takes the
 * writers' lock, inserts the new offers and updates the changed ones, and recomputes the winners of the
 * keys that need it; the call's own transaction commits it. OfferStore makes one call per batch.
 *
 * Why a function: the writers' lock is held from the moment it is granted until the commit, and when
 * the batch was a transaction of four statements from the service, the lock stayed held through three
 * round trips to a process that was busy validating the next batch. Measured from the statement log,
 * 100,000 offers: the lock was held for 6.7 s, of which 2.1 s the database waited for the service. In
 * one call the lock is held only while the database works. (In a VOLATILE function every statement
 * takes a new snapshot, so what follows the lock sees every earlier writer's commit, as before.)
 *
 * Why no `ON CONFLICT`: every writer of offers holds the writers' lock, so under it the batch can tell
 * exactly which of its offers are stored, and insert the others plainly. A speculative insertion (what
 * `INSERT ... ON CONFLICT` does for every row) cost 10 % of a first load. Images are still registered
 * with `ON CONFLICT DO NOTHING`: they are written before the lock, and two sources may share an image.
 *
 * The winners (see OfferStore): a key with no listed offer outside the batch gets its winner among the
 * batch's rows as they are written; keys other listed offers share ("contested"), and keys a changed
 * offer left, are recomputed by `recompute_dedup_winners` after the write, still under the lock.
 *
 * The functions as they are now: packages/listings/src/sql/ (applied by migration 0014). This file is
 * history: what a fresh database runs before 0014 replaces them.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { lockWritersSql, winnerOrderSql } from "../../packages/listings/src/Dedup.ts"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // Sets each key's winner among its listed offers: the most recently updated, then the lowest id.
  yield* sql`
    CREATE FUNCTION recompute_dedup_winners(keys text[]) RETURNS void LANGUAGE sql AS $$
      WITH k AS (SELECT DISTINCT unnest(keys) AS dedup_key),
      ranked AS (
        SELECT o.id, row_number() OVER (PARTITION BY o.dedup_key ORDER BY ${sql.literal(winnerOrderSql("o.updated_at", "o.id"))}) = 1 AS winner
        FROM listings.offers o JOIN k ON k.dedup_key = o.dedup_key
        WHERE o.removed_at IS NULL
      )
      UPDATE listings.offers o SET dedup_winner = r.winner
      FROM ranked r WHERE o.id = r.id AND o.dedup_winner <> r.winner
    $$`
  // One array per column (the rows of the batch, ids unique within it); returns how many offers were
  // inserted or changed.
  yield* sql`
    CREATE FUNCTION write_offer_batch(
      source text, image_keys text[], image_urls text[],
      ids text[], native_ids text[], titles text[], makes text[], models text[], prices float8[],
      currencies text[], fuels text[], transmissions text[], regions text[], original_urls text[],
      years integer[], mileages integer[], powers integer[], locations text[], latitudes float8[],
      longitudes float8[], image_lists jsonb[], thumbnails text[], update_times timestamptz[],
      expiry_times timestamptz[], dedup_keys text[], search_documents text[], content_hashes text[]
    ) RETURNS integer LANGUAGE plpgsql AS $$
    DECLARE
      written integer;
      keys_to_recompute text[];
    BEGIN
      -- Before the lock, which they need not wait for: a listed offer's image keys are always known to
      -- GET /images, and a failed batch leaves none behind. In key order into the primary key.
      INSERT INTO listings.images (key, original_url, source_id)
      SELECT i.key, i.url, source FROM unnest(image_keys, image_urls) AS i(key, url)
      ORDER BY i.key
      ON CONFLICT (key) DO NOTHING;

      PERFORM ${sql.literal(lockWritersSql)};

      WITH candidate AS (
        SELECT input.*,
          row_number() OVER (
            PARTITION BY input.dedup_key ORDER BY ${sql.literal(winnerOrderSql("coalesce(input.updated_at, now())", "input.id"))}
          ) = 1 AS batch_best,
          EXISTS (
            SELECT 1 FROM listings.offers o
            WHERE o.dedup_key = input.dedup_key AND o.removed_at IS NULL AND o.id <> input.id
          ) AS contested,
          stored.id IS NOT NULL AS is_stored,
          stored.dedup_key AS stored_key,
          stored.id IS NULL OR stored.content_hash <> input.content_hash OR stored.removed_at IS NOT NULL AS changed
        FROM unnest(ids, native_ids, titles, makes, models, prices, currencies, fuels, transmissions, regions,
          original_urls, years, mileages, powers, locations, latitudes, longitudes, image_lists, thumbnails,
          update_times, expiry_times, dedup_keys, search_documents, content_hashes)
          AS input(id, native_id, title, make, model, price, currency, fuel, transmission, region,
            original_url, year, mileage, power, location, latitude, longitude, images, thumbnail,
            updated_at, expires_at, dedup_key, search, content_hash)
        -- one primary-key probe per row (LIMIT 1 keeps it so, whatever the planner thinks of the batch)
        LEFT JOIN LATERAL (
          SELECT o.id, o.dedup_key, o.content_hash, o.removed_at FROM listings.offers o WHERE o.id = input.id LIMIT 1
        ) stored ON true
      ),
      updated AS (
        UPDATE listings.offers o SET
          native_id = c.native_id, title = c.title, make = c.make, model = c.model, price = c.price,
          currency = c.currency, fuel = c.fuel, transmission = c.transmission, region = c.region,
          original_url = c.original_url, year = c.year, mileage = c.mileage, power = c.power,
          location = c.location, latitude = c.latitude, longitude = c.longitude, images = c.images,
          thumbnail = c.thumbnail, updated_at = coalesce(c.updated_at, now()), expires_at = c.expires_at,
          dedup_key = c.dedup_key, search = c.search::tsvector, content_hash = c.content_hash,
          dedup_winner = c.batch_best AND NOT c.contested, removed_at = NULL
        FROM candidate c
        WHERE c.is_stored AND c.changed AND o.id = c.id
      ),
      inserted AS (
        INSERT INTO listings.offers (id, source_id, native_id, title, make, model, price, currency, fuel,
          transmission, region, original_url, year, mileage, power, location, latitude, longitude, images,
          thumbnail, updated_at, expires_at, dedup_key, search, content_hash, dedup_winner)
        SELECT c.id, source, c.native_id, c.title, c.make, c.model, c.price, c.currency, c.fuel,
          c.transmission, c.region, c.original_url, c.year, c.mileage, c.power, c.location, c.latitude,
          c.longitude, c.images, c.thumbnail, coalesce(c.updated_at, now()), c.expires_at, c.dedup_key,
          c.search::tsvector, c.content_hash, c.batch_best AND NOT c.contested
        FROM candidate c
        WHERE NOT c.is_stored
      )
      SELECT count(*)::integer,
        coalesce(array_agg(DISTINCT c.dedup_key) FILTER (WHERE c.contested), '{}')
          || coalesce(array_agg(DISTINCT c.stored_key) FILTER (WHERE c.stored_key <> c.dedup_key), '{}')
      INTO written, keys_to_recompute
      FROM candidate c
      WHERE c.changed;

      IF written > 0 THEN
        -- tells readers' remembered counts that the listed offers changed (see Offers)
        UPDATE listings.offers_version SET version = version + 1;
      END IF;
      IF cardinality(keys_to_recompute) > 0 THEN
        PERFORM listings.recompute_dedup_winners(keys_to_recompute);
      END IF;
      RETURN written;
    END
    $$`
})
