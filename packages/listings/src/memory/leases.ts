/**
 * Leases over ListingsMemory, as the SQL does them: acquire inserts or takes over an expired lease
 * (a takeover closes the runs left unfinished as `abandoned`), renew extends only our own, release
 * deletes only our own. Times are the Effect clock's (a TestClock moves them).
 */
import { Clock, Duration, Effect } from "effect"
import { randomUUID } from "node:crypto"
import type { MemoryTables } from "./ListingsMemory.ts"

export const makeMemoryLeases = (tables: MemoryTables) => {
  const holder = `memory:${randomUUID().slice(0, 8)}`

  const acquire = (sourceId: string, ttl: Duration.Duration) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const previous = tables.leases.get(sourceId)
      if (previous !== undefined && previous.expiresAt > now) return false
      tables.leases.set(sourceId, { holder, expiresAt: now + Duration.toMillis(ttl) })
      if (previous !== undefined) {
        tables.runs.forEach((run, i) => {
          if (run.sourceId === sourceId && run.finishedAt === null) {
            tables.runs[i] = { ...run, finishedAt: now, ok: false, failure: "abandoned" }
          }
        })
        yield* Effect.logWarning(`Took over the expired ingest lease of ${sourceId}`)
      }
      return true
    })

  const renew = (sourceId: string, ttl: Duration.Duration) =>
    Effect.map(Clock.currentTimeMillis, (now) => {
      const lease = tables.leases.get(sourceId)
      if (lease === undefined || lease.holder !== holder) return false
      tables.leases.set(sourceId, { holder, expiresAt: now + Duration.toMillis(ttl) })
      return true
    })

  const release = (sourceId: string) =>
    Effect.sync(() => {
      if (tables.leases.get(sourceId)?.holder === holder) tables.leases.delete(sourceId)
    })

  return { holder, acquire, renew, release }
}
