/** SourceHealthLookup over ListingsMemory: listed offers per source and its last finished run. */
import type { SourcesResponse } from "@svc/schema"
import { Effect } from "effect"
import type { Source } from "../Sources.ts"
import type { MemoryRun, MemoryTables } from "./ListingsMemory.ts"

export const makeMemorySourceHealth = (tables: MemoryTables, sources: ReadonlyArray<Source>) => ({
  list: Effect.sync((): SourcesResponse => ({
    sources: sources.map((source) => {
      let offerCount = 0
      for (const offer of tables.offers.values()) {
        if (offer.row.source_id === source.id && offer.removedAt === null) offerCount++
      }
      let last: MemoryRun | undefined
      for (const run of tables.runs) {
        if (run.sourceId === source.id && run.finishedAt !== null && (last === undefined || run.finishedAt >= (last.finishedAt ?? 0))) {
          last = run
        }
      }
      return {
        id: source.id,
        enabled: source.enabled,
        offerCount,
        lastCompletedAtEpochMs: last?.finishedAt ?? null,
        lastCompletedOk: last?.ok ?? null,
        lastOffersUpserted: last?.offersUpserted ?? null
      }
    })
  }))
})
