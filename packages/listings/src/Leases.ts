/**
 * Ingest leases (`listings.ingest_leases`): at most one holder per source across every process on the
 * database. Times are the database's (`now()`), so instances with skewed clocks agree.
 *
 * - acquire: insert the row, or take it over when it has expired; a takeover closes the runs the dead
 *   holder left unfinished (`failure = 'abandoned'`).
 * - renew: push `expires_at` to now + TTL, only while we still hold it (false: the lease was lost).
 * - release: delete it, only if ours.
 */
import { atDatabaseBoundary } from "@svc/platform"
import { Context, Duration, Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { randomUUID } from "node:crypto"
import * as os from "node:os"
import { ListingsMemory } from "./memory/ListingsMemory.ts"
import { makeMemoryLeases } from "./memory/leases.ts"

const Taken = Schema.Struct({ previous: Schema.NullOr(Schema.String) })

export class Leases extends Context.Service<Leases, {
  /** This process's holder id (`host:pid:random`). */
  readonly holder: string
  readonly acquire: (sourceId: string, ttl: Duration.Duration) => Effect.Effect<boolean>
  readonly renew: (sourceId: string, ttl: Duration.Duration) => Effect.Effect<boolean>
  readonly release: (sourceId: string) => Effect.Effect<void>
}>()("@svc/listings/Leases") {
  static readonly layer = Layer.effect(
    Leases,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const holder = `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`
      const seconds = (ttl: Duration.Duration) => Duration.toMillis(ttl) / 1000

      const acquire = Effect.fn("Leases.acquire")(function*(sourceId: string, ttl: Duration.Duration) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          const taken = yield* SqlSchema.findAll({ Request: Schema.Void, Result: Taken, execute: () => sql`
            WITH previous AS (SELECT holder FROM listings.ingest_leases WHERE source_id = ${sourceId})
            INSERT INTO listings.ingest_leases AS l (source_id, holder, acquired_at, expires_at)
            VALUES (${sourceId}, ${holder}, now(), now() + make_interval(secs => ${seconds(ttl)}))
            ON CONFLICT (source_id) DO UPDATE
              SET holder = excluded.holder, acquired_at = excluded.acquired_at, expires_at = excluded.expires_at
              WHERE l.expires_at <= now()
            RETURNING (SELECT holder FROM previous) AS previous` })()
          if (taken.length === 0) return false
          if (taken[0]?.previous != null) {
            yield* sql`
              UPDATE listings.ingest_runs SET finished_at = now(), ok = false, failure = 'abandoned'
              WHERE source_id = ${sourceId} AND finished_at IS NULL`
            yield* Effect.logWarning(`Took over the expired ingest lease of ${sourceId}`)
          }
          return true
        }))
      })

      const renew = Effect.fn("Leases.renew")(function*(sourceId: string, ttl: Duration.Duration) {
        const rows = yield* sql`
          UPDATE listings.ingest_leases SET expires_at = now() + make_interval(secs => ${seconds(ttl)})
          WHERE source_id = ${sourceId} AND holder = ${holder} RETURNING 1 AS one`
        return rows.length > 0
      })

      const release = Effect.fn("Leases.release")(function*(sourceId: string) {
        yield* sql`DELETE FROM listings.ingest_leases WHERE source_id = ${sourceId} AND holder = ${holder}`
      })

      return Leases.of({
        holder,
        acquire: (sourceId, ttl) => atDatabaseBoundary(acquire(sourceId, ttl)),
        renew: (sourceId, ttl) => atDatabaseBoundary(renew(sourceId, ttl)),
        release: (sourceId) => atDatabaseBoundary(release(sourceId))
      })
    })
  )
  /** Over ListingsMemory (tests): each build is another holder of the same leases. */
  static readonly layerMemory = Layer.effect(
    Leases,
    Effect.map(ListingsMemory, (tables) => Leases.of(makeMemoryLeases(tables)))
  )

}
