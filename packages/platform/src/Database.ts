/**
 * The suite's one Postgres database: `DATABASE_URL` when set, otherwise the embedded cluster in
 * `EMBEDDED_POSTGRES_DIR`. Provides `PgClient` / `SqlClient` (a pool) and `Database`, which says
 * where the pool points (for a second connection, e.g. LISTEN, or for messages to the operator).
 */
import { PgClient } from "@effect/sql-pg"
import { Config, Context, Effect, Layer, Option, Redacted } from "effect"
import * as EmbeddedPostgres from "./EmbeddedPostgres.ts"

export class Database extends Context.Service<Database, {
  readonly url: Redacted.Redacted<string>
  /** Set when the suite started (or shares) its own embedded cluster. */
  readonly embedded: Option.Option<EmbeddedPostgres.RunningPostgres>
}>()("@svc/platform/Database") {
  /** Resolves the connection: an external URL, or a running embedded cluster (scoped). */
  static readonly layerConnection = Layer.effect(
    Database,
    Effect.gen(function*() {
      const external = yield* Config.option(Config.Redacted("DATABASE_URL"))
      if (Option.isSome(external)) {
        return Database.of({ url: external.value, embedded: Option.none() })
      }
      const dataDir = yield* Config.String("EMBEDDED_POSTGRES_DIR").pipe(Config.withDefault(".data/postgres"))
      const port = yield* Config.Port("EMBEDDED_POSTGRES_PORT").pipe(Config.withDefault(0))
      const cluster = yield* EmbeddedPostgres.start({ dataDir, port })
      yield* Effect.annotateCurrentSpan("database.embedded", true)
      return Database.of({ url: cluster.url("postgres"), embedded: Option.some(cluster) })
    })
  )

  /** A pool for a known URL; `DATABASE_POOL_SIZE` bounds it. */
  static readonly layerPool = Layer.unwrap(
    Effect.gen(function*() {
      const { url } = yield* Database
      const maxConnections = yield* Config.Int("DATABASE_POOL_SIZE").pipe(Config.withDefault(10))
      return PgClient.layer({ url, maxConnections, applicationName: "svc" })
    })
  )

  /** What a service needs: the connection and a pool on it. */
  static readonly layer = Database.layerPool.pipe(Layer.provideMerge(Database.layerConnection))
}

/** A URL with its database name replaced (same server and credentials). */
export const withDatabaseName = (url: Redacted.Redacted<string>, database: string): Redacted.Redacted<string> => {
  const parsed = new URL(Redacted.value(url))
  parsed.pathname = `/${encodeURIComponent(database)}`
  return Redacted.make(parsed.toString())
}

/**
 * The server's own words for a failed statement ("relation "x" does not exist"), without the
 * statement text: `SqlError.message` only says "Query failed", the Postgres error sits below it.
 */
export const postgresReason = (error: unknown): string => {
  for (let cause = error, depth = 0; cause !== null && typeof cause === "object" && depth < 5; depth++) {
    if ("severity" in cause && "message" in cause) return String(cause.message)
    cause = "reason" in cause ? cause.reason : "cause" in cause ? cause.cause : undefined
  }
  return error instanceof Error ? error.message : String(error)
}
