/** IngestRuns over ListingsMemory: a run row per start, its upserted count brought up to date, completed by its finish. */
import { Clock, Effect } from "effect"
import type { RunCounts, RunRecord, Trigger } from "../IngestRuns.ts"
import type { MemoryTables } from "./ListingsMemory.ts"

export const makeMemoryIngestRuns = (tables: MemoryTables) => ({
  start: (sourceId: string, trigger: Trigger, holder: string) =>
    Effect.map(Clock.currentTimeMillis, (now) => {
      const id = String(tables.runs.length + 1)
      tables.runs.push({
        id,
        sourceId,
        trigger,
        holder,
        startedAt: now,
        finishedAt: null,
        ok: null,
        offersUpserted: 0,
        failure: null
      })
      return id
    }),
  recordProgress: (runId: string, counts: RunCounts) =>
    Effect.sync(() => {
      const i = tables.runs.findIndex((run) => run.id === runId)
      const run = tables.runs[i]
      if (run !== undefined && run.finishedAt === null) {
        tables.runs[i] = { ...run, offersUpserted: Math.max(run.offersUpserted, counts.offersUpserted) }
      }
    }),
  finish: (runId: string, record: RunRecord) =>
    Effect.map(Clock.currentTimeMillis, (now) => {
      const i = tables.runs.findIndex((run) => run.id === runId)
      const run = tables.runs[i]
      if (run !== undefined) {
        tables.runs[i] = { ...run, finishedAt: now, ok: record.ok, offersUpserted: record.offersUpserted, failure: record.failure }
      }
    })
})
