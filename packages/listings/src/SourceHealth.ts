/**
 * GET /sources: the configured sources with their health from the database. When the lookup fails,
 * the static list with the enabled flags is still returned, every health field null; the cause goes
 * to the log only.
 */
import { postgresReason } from "@svc/platform"
import type { SourcesResponse } from "@svc/schema"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { Sources } from "./Sources.ts"
import { ListingsMemory } from "./memory/ListingsMemory.ts"
import { makeMemorySourceHealth } from "./memory/sourceHealth.ts"

const HealthRow = Schema.Struct({
  id: Schema.String,
  offer_count: Schema.Number,
  finished_ms: Schema.NullOr(Schema.Number),
  ok: Schema.NullOr(Schema.Boolean),
  offers_upserted: Schema.NullOr(Schema.Number)
})

export class SourceHealthLookup extends Context.Service<SourceHealthLookup, {
  readonly list: Effect.Effect<SourcesResponse>
}>()("@svc/listings/SourceHealthLookup") {
  static readonly layer = Layer.effect(
    SourceHealthLookup,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const sources = yield* Sources
      const ids = sources.all.map((source) => source.id)

      const fallback: SourcesResponse = {
        sources: sources.all.map((source) => ({
          id: source.id,
          enabled: source.enabled,
          offerCount: null,
          lastCompletedAtEpochMs: null,
          lastCompletedOk: null,
          lastOffersUpserted: null
        }))
      }

      const list = Effect.gen(function*() {
        const rows = yield* SqlSchema.findAll({ Request: Schema.Void, Result: HealthRow, execute: () => sql`
          SELECT s.id,
            (SELECT count(*)::int FROM listings.offers o WHERE o.source_id = s.id AND o.removed_at IS NULL) AS offer_count,
            (extract(epoch FROM r.finished_at) * 1000)::float8 AS finished_ms, r.ok, r.offers_upserted
          FROM unnest(${ids}::text[]) AS s(id)
          LEFT JOIN LATERAL (
            SELECT finished_at, ok, offers_upserted FROM listings.ingest_runs
            WHERE source_id = s.id AND finished_at IS NOT NULL ORDER BY finished_at DESC LIMIT 1
          ) r ON true` })()
        const byId = new Map(rows.map((row) => [row.id, row]))
        return {
          sources: sources.all.map((source) => {
            const row = byId.get(source.id)
            return {
              id: source.id,
              enabled: source.enabled,
              offerCount: row?.offer_count ?? null,
              lastCompletedAtEpochMs: row?.finished_ms == null ? null : Math.round(row.finished_ms),
              lastCompletedOk: row?.ok ?? null,
              lastOffersUpserted: row?.offers_upserted ?? null
            }
          })
        }
      }).pipe(
        Effect.catch((error) =>
          Effect.as(
            Effect.logWarning(`Source health lookup failed, answering the static list: ${postgresReason(error)}`),
            fallback
          )
        )
      )
      return SourceHealthLookup.of({ list })
    })
  )
  /** Over ListingsMemory (tests). */
  static readonly layerMemory = Layer.effect(
    SourceHealthLookup,
    Effect.gen(function*() {
      const tables = yield* ListingsMemory
      const sources = yield* Sources
      return SourceHealthLookup.of(makeMemorySourceHealth(tables, sources.all))
    })
  )

}
