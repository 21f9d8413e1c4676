/**
 * The live definition of `listings.write_offer_batch(...)`: one batch of offers in one call (see
 * OfferStore and migration 0013 for why). It registers the batch's images (before the lock, `ON
 * CONFLICT DO NOTHING`), takes the writers' lock (Dedup.ts), inserts the offers not stored yet and
 * updates the changed ones, deciding each key's winner in the write where the batch alone can tell
 * (Dedup.ts's order), then recomputes the contested keys and bumps `offers_version`.
 *
 * One array per column (the rows of the batch, ids unique within it); returns how many offers were
 * inserted or changed. A later change that adds or changes a column of offers changes this text.
 *
 * Migrations 0014 and 0015 apply this text (`CREATE OR REPLACE`); a change here needs a new migration
 * that applies it again (see the README, "SQL functions"). A change of its arguments drops the old
 * signature first (0015: `CREATE OR REPLACE` with other arguments makes a second function).
 */
import { lockWritersSql, winnerOrderSql } from "../Dedup.ts"

export const writeOfferBatch = `
    CREATE OR REPLACE FUNCTION listings.write_offer_batch(
      source text, image_keys text[], image_urls text[],
      ids text[], native_ids text[], titles text[], makes text[], models text[], prices float8[],
      currencies text[], fuels text[], transmissions text[], regions text[], original_urls text[],
      years integer[], mileages integer[], powers integer[], locations text[], latitudes float8[],
      longitudes float8[], image_lists jsonb[], thumbnails text[], update_times timestamptz[],
      expiry_times timestamptz[], dedup_keys text[], search_documents text[], content_hashes text[],
      make_keys text[], model_keys text[], fuel_keys text[], transmission_keys text[], region_keys text[]
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

      PERFORM ${lockWritersSql};

      WITH candidate AS (
        SELECT input.*,
          row_number() OVER (
            PARTITION BY input.dedup_key ORDER BY ${winnerOrderSql("coalesce(input.updated_at, now())", "input.id")}
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
          update_times, expiry_times, dedup_keys, search_documents, content_hashes, make_keys, model_keys,
          fuel_keys, transmission_keys, region_keys)
          AS input(id, native_id, title, make, model, price, currency, fuel, transmission, region,
            original_url, year, mileage, power, location, latitude, longitude, images, thumbnail,
            updated_at, expires_at, dedup_key, search, content_hash, make_key, model_key, fuel_key,
            transmission_key, region_key)
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
          make_key = c.make_key, model_key = c.model_key, fuel_key = c.fuel_key,
          transmission_key = c.transmission_key, region_key = c.region_key,
          dedup_winner = c.batch_best AND NOT c.contested, removed_at = NULL
        FROM candidate c
        WHERE c.is_stored AND c.changed AND o.id = c.id
      ),
      inserted AS (
        INSERT INTO listings.offers (id, source_id, native_id, title, make, model, price, currency, fuel,
          transmission, region, original_url, year, mileage, power, location, latitude, longitude, images,
          thumbnail, updated_at, expires_at, dedup_key, search, content_hash, make_key, model_key, fuel_key,
          transmission_key, region_key, dedup_winner)
        SELECT c.id, source, c.native_id, c.title, c.make, c.model, c.price, c.currency, c.fuel,
          c.transmission, c.region, c.original_url, c.year, c.mileage, c.power, c.location, c.latitude,
          c.longitude, c.images, c.thumbnail, coalesce(c.updated_at, now()), c.expires_at, c.dedup_key,
          c.search::tsvector, c.content_hash, c.make_key, c.model_key, c.fuel_key, c.transmission_key,
          c.region_key, c.batch_best AND NOT c.contested
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
