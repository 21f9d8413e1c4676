/**
 * OfferStore over ListingsMemory: what `write_offer_batch` and the expiry do, row by row. An offer is
 * written when it is new, its content hash changed, or it was removed (revived); a batch that wrote
 * anything bumps the version; the winner of every key a written or removed offer had or has is
 * decided again (Dedup.ts's order among the key's listed offers).
 */
import { Clock, Effect } from "effect"
import { compareWinners } from "../Dedup.ts"
import type { FeedImage, OfferRow } from "../Normalize.ts"
import type { MemoryOffer, MemoryTables } from "./ListingsMemory.ts"

/** Sets the winner flag of each key's listed offers. */
export const recomputeWinners = (tables: MemoryTables, keys: Iterable<string>) => {
  for (const key of keys) {
    const listed: Array<MemoryOffer> = []
    for (const id of tables.offersByKey.get(key) ?? []) {
      const offer = tables.offers.get(id)
      if (offer !== undefined && offer.removedAt === null) listed.push(offer)
    }
    let best: MemoryOffer | undefined
    for (const offer of listed) {
      if (best === undefined || compareWinners(rank(offer), rank(best)) < 0) best = offer
    }
    for (const offer of listed) {
      const winner = offer === best
      if (offer.winner !== winner) tables.offers.set(offer.row.id, { ...offer, winner })
    }
  }
}

const rank = (offer: MemoryOffer) => ({ updatedAt: offer.updatedAt, id: offer.row.id })

const index = (tables: MemoryTables, key: string, id: string) => {
  const ids = tables.offersByKey.get(key)
  if (ids === undefined) tables.offersByKey.set(key, new Set([id]))
  else ids.add(id)
}

export const makeMemoryOfferStore = (tables: MemoryTables) => {
  const upsertBatch = (sourceId: string, rows: ReadonlyArray<OfferRow>, images: ReadonlyArray<FeedImage>) =>
    Effect.map(Clock.currentTimeMillis, (now) => {
      if (rows.length === 0) return 0
      const unchanged = new Set(
        rows.filter((row) => {
          const stored = tables.offers.get(row.id)
          return stored !== undefined && stored.row.content_hash === row.content_hash && stored.removedAt === null
        }).map((row) => row.id)
      )
      for (const image of images) {
        if (!unchanged.has(image.offerId) && !tables.images.has(image.key)) {
          tables.images.set(image.key, { url: image.url, sourceId })
        }
      }
      const keys = new Set<string>()
      let written = 0
      for (const row of rows) {
        if (unchanged.has(row.id)) continue
        const stored = tables.offers.get(row.id)
        if (stored !== undefined) {
          keys.add(stored.row.dedup_key)
          tables.offersByKey.get(stored.row.dedup_key)?.delete(row.id)
        }
        tables.offers.set(row.id, {
          row: stored === undefined ? { ...row, source_id: sourceId } : { ...row, source_id: stored.row.source_id },
          updatedAt: row.updated_at ?? now,
          expiresAt: row.expires_at,
          removedAt: null,
          winner: false
        })
        index(tables, row.dedup_key, row.id)
        keys.add(row.dedup_key)
        written++
      }
      if (written > 0) tables.version++
      recomputeWinners(tables, keys)
      return written
    })

  const expireVanished = (sourceId: string, seenIds: ReadonlyArray<string>) =>
    Effect.map(Clock.currentTimeMillis, (now) => {
      const seen = new Set(seenIds)
      const keys = new Set<string>()
      let expiredCount = 0
      for (const offer of [...tables.offers.values()]) {
        if (offer.row.source_id !== sourceId || offer.removedAt !== null) continue
        const expired = offer.expiresAt !== null && offer.expiresAt <= now
        if (!expired && seen.has(offer.row.id)) continue
        tables.offers.set(offer.row.id, {
          ...offer,
          removedAt: now,
          winner: false,
          expiresAt: offer.expiresAt === null || offer.expiresAt > now ? now : offer.expiresAt
        })
        keys.add(offer.row.dedup_key)
        expiredCount++
      }
      recomputeWinners(tables, keys)
      if (expiredCount > 0) tables.version++
      return expiredCount
    })

  const removeSource = (sourceId: string) =>
    Effect.sync(() => {
      const keys = new Set<string>()
      let removed = 0
      for (const offer of [...tables.offers.values()]) {
        if (offer.row.source_id !== sourceId) continue
        tables.offers.delete(offer.row.id)
        tables.offersByKey.get(offer.row.dedup_key)?.delete(offer.row.id)
        keys.add(offer.row.dedup_key)
        removed++
      }
      for (const [key, image] of [...tables.images]) if (image.sourceId === sourceId) tables.images.delete(key)
      recomputeWinners(tables, keys)
      if (removed > 0) tables.version++
      return removed
    })

  return { upsertBatch, expireVanished, removeSource, refreshStatistics: Effect.void }
}
