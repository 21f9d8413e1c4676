/**
 * The tables of listings, in memory: what the memory layers (`layerMemory` of OfferStore, Offers,
 * Leases, IngestRuns, SourceHealthLookup) share where the real layers share tables. Built fresh by
 * every build of `ListingsMemory.layer`; tests only. Every change is one synchronous step, so, like
 * a transaction, no reader sees half of it.
 */
import { Context, Layer } from "effect"
import type { OfferRow } from "../Normalize.ts"

/** A row of `listings.offers`. Times are epoch milliseconds. */
export interface MemoryOffer {
  readonly row: OfferRow
  readonly updatedAt: number
  readonly expiresAt: number | null
  readonly removedAt: number | null
  readonly winner: boolean
}

/** A row of `listings.ingest_leases`. */
export interface MemoryLease {
  readonly holder: string
  readonly expiresAt: number
}

/** A row of `listings.ingest_runs`. */
export interface MemoryRun {
  readonly id: string
  readonly sourceId: string
  readonly trigger: string
  readonly holder: string
  readonly startedAt: number
  readonly finishedAt: number | null
  readonly ok: boolean | null
  readonly offersUpserted: number
  readonly failure: string | null
}

export interface MemoryTables {
  readonly offers: Map<string, MemoryOffer>
  /** ids of the listed and removed offers of each dedup key (an index, like `offers_dedup`) */
  readonly offersByKey: Map<string, Set<string>>
  /** `listings.offers_version` */
  version: number
  /** `listings.images`: key -> original URL and source */
  readonly images: Map<string, { readonly url: string; readonly sourceId: string }>
  readonly leases: Map<string, MemoryLease>
  readonly runs: Array<MemoryRun>
}

export class ListingsMemory extends Context.Service<ListingsMemory, MemoryTables>()("@svc/listings/ListingsMemory") {
  /** Empty tables (fresh for every build). */
  static readonly layer = Layer.sync(ListingsMemory, () =>
    ListingsMemory.of({
      offers: new Map(),
      offersByKey: new Map(),
      version: 1,
      images: new Map(),
      leases: new Map(),
      runs: []
    }))
}
