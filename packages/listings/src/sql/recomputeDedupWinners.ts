/**
 * The live definition of `listings.recompute_dedup_winners(keys)`: sets each key's winner among its
 * listed offers (see Dedup.ts for the order). `write_offer_batch` and OfferStore's expiry call it,
 * under the writers' lock.
 *
 * Migration 0014 applies this text (`CREATE OR REPLACE`); a change here needs a new migration that
 * applies it again (see the README, "SQL functions").
 */
import { winnerOrderSql } from "../Dedup.ts"

export const recomputeDedupWinners = `
    CREATE OR REPLACE FUNCTION listings.recompute_dedup_winners(keys text[]) RETURNS void LANGUAGE sql AS $$
      WITH k AS (SELECT DISTINCT unnest(keys) AS dedup_key),
      ranked AS (
        SELECT o.id, row_number() OVER (PARTITION BY o.dedup_key ORDER BY ${winnerOrderSql("o.updated_at", "o.id")}) = 1 AS winner
        FROM listings.offers o JOIN k ON k.dedup_key = o.dedup_key
        WHERE o.removed_at IS NULL
      )
      UPDATE listings.offers o SET dedup_winner = r.winner
      FROM ranked r WHERE o.id = r.id AND o.dedup_winner <> r.winner
    $$`
