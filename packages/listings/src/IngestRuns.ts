/**
 * The record of ingest runs (`listings.ingest_runs`): one row per started run, its counts brought up
 * to date after every written batch, finished with its outcome. GET /sources reads the last finished
 * run of each source (SourceHealth); a lease takeover closes the runs a dead holder left unfinished
 * (Leases), which so keep the counts of their last recorded batch instead of zeros.
 */
import { atDatabaseBoundary } from "@svc/platform"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { ListingsMemory } from "./memory/ListingsMemory.ts"
import { makeMemoryIngestRuns } from "./memory/ingestRuns.ts"

export type Trigger = "scheduled" | "manual"

/** A run's counts so far. */
export interface RunCounts {
  readonly offersFetched: number
  readonly offersUpserted: number
  readonly recordsRejected: number
}

/** How a run ended: its counts, and the failure's category (null when ok). */
export interface RunRecord extends RunCounts {
  readonly ok: boolean
  readonly offersExpired: number
  readonly failure: string | null
}

const RunId = Schema.Struct({ id: Schema.String })

export class IngestRuns extends Context.Service<IngestRuns, {
  /** Records a started run of `sourceId` by `holder` (a Leases holder id); returns its id. */
  readonly start: (sourceId: string, trigger: Trigger, holder: string) => Effect.Effect<string>
  /**
   * Records an unfinished run's counts so far. Counts only grow: of two batches written side by side,
   * the one recorded last may carry the smaller counts.
   */
  readonly recordProgress: (runId: string, counts: RunCounts) => Effect.Effect<void>
  /** Records how the run ended (the finish time is now). */
  readonly finish: (runId: string, record: RunRecord) => Effect.Effect<void>
}>()("@svc/listings/IngestRuns") {
  static readonly layer = Layer.effect(
    IngestRuns,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const insert = SqlSchema.findAll({
        Request: Schema.Struct({ sourceId: Schema.String, trigger: Schema.String, holder: Schema.String }),
        Result: RunId,
        execute: ({ holder, sourceId, trigger }) =>
          sql`
            INSERT INTO listings.ingest_runs (source_id, trigger, holder)
            VALUES (${sourceId}, ${trigger}, ${holder}) RETURNING id::text AS id`
      })
      const start = (sourceId: string, trigger: Trigger, holder: string) =>
        insert({ sourceId, trigger, holder }).pipe(
          Effect.flatMap((rows) =>
            rows[0] === undefined ? Effect.die(new Error("INSERT ... RETURNING gave no row")) : Effect.succeed(rows[0].id)
          )
        )
      const recordProgress = (runId: string, counts: RunCounts) =>
        sql`
          UPDATE listings.ingest_runs SET offers_fetched = greatest(offers_fetched, ${counts.offersFetched}),
            offers_upserted = greatest(offers_upserted, ${counts.offersUpserted}),
            records_rejected = greatest(records_rejected, ${counts.recordsRejected})
          WHERE id = ${runId}::bigint AND finished_at IS NULL`.pipe(Effect.asVoid)
      const finish = (runId: string, record: RunRecord) =>
        sql`
          UPDATE listings.ingest_runs SET finished_at = now(), ok = ${record.ok}, offers_fetched = ${record.offersFetched},
            offers_upserted = ${record.offersUpserted}, records_rejected = ${record.recordsRejected},
            offers_expired = ${record.offersExpired}, failure = ${record.failure}
          WHERE id = ${runId}::bigint`.pipe(Effect.asVoid)
      return IngestRuns.of({
        start: (sourceId, trigger, holder) => atDatabaseBoundary(start(sourceId, trigger, holder)),
        recordProgress: (runId, counts) => atDatabaseBoundary(recordProgress(runId, counts)),
        finish: (runId, record) => atDatabaseBoundary(finish(runId, record))
      })
    })
  )
  /** Over ListingsMemory (tests). */
  static readonly layerMemory = Layer.effect(
    IngestRuns,
    Effect.map(ListingsMemory, (tables) => IngestRuns.of(makeMemoryIngestRuns(tables)))
  )

}
