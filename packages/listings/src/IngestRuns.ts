/**
 * The record of ingest runs (`listings.ingest_runs`): one row per started run, finished with its
 * outcome. GET /sources reads the last finished run of each source (SourceHealth); a lease takeover
 * closes the runs a dead holder left unfinished (Leases).
 */
import { atDatabaseBoundary } from "@svc/platform"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { ListingsMemory } from "./memory/ListingsMemory.ts"
import { makeMemoryIngestRuns } from "./memory/ingestRuns.ts"

export type Trigger = "scheduled" | "manual"

/** How a run ended: its counts, and the failure's category (null when ok). */
export interface RunRecord {
  readonly ok: boolean
  readonly offersFetched: number
  readonly offersUpserted: number
  readonly recordsRejected: number
  readonly offersExpired: number
  readonly failure: string | null
}

const RunId = Schema.Struct({ id: Schema.String })

export class IngestRuns extends Context.Service<IngestRuns, {
  /** Records a started run of `sourceId` by `holder` (a Leases holder id); returns its id. */
  readonly start: (sourceId: string, trigger: Trigger, holder: string) => Effect.Effect<string>
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
      const finish = (runId: string, record: RunRecord) =>
        sql`
          UPDATE listings.ingest_runs SET finished_at = now(), ok = ${record.ok}, offers_fetched = ${record.offersFetched},
            offers_upserted = ${record.offersUpserted}, records_rejected = ${record.recordsRejected},
            offers_expired = ${record.offersExpired}, failure = ${record.failure}
          WHERE id = ${runId}::bigint`.pipe(Effect.asVoid)
      return IngestRuns.of({
        start: (sourceId, trigger, holder) => atDatabaseBoundary(start(sourceId, trigger, holder)),
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
