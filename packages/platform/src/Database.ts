/**
 * The suite's one Postgres database: `DATABASE_URL` when set, otherwise the embedded cluster in
 * `EMBEDDED_POSTGRES_DIR`. Provides `PgClient` / `SqlClient` (a pool) and `Database`, which says
 * where the pool points (for a second connection, e.g. LISTEN, or for messages to the operator).
 */
import { PgClient } from "@effect/sql-pg"
import { Config, Context, Effect, Layer, Option, Redacted } from "effect"
import * as EmbeddedPostgres from "./EmbeddedPostgres.ts"
import { awaitReady } from "./PostgresReady.ts"

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
        // A server that is still starting (a container brought up with us) refuses sessions with
        // 57P03 for a while: wait for it, bounded. Any other failure is left to the first real
        // use, which reports it in its own words.
        yield* awaitReady(external.value).pipe(Effect.ignore)
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

export { postgresReason } from "./PostgresReady.ts"

/**
 * A database failure is a defect at a service's boundary: the caller cannot act on it, the HTTP
 * layer answers 500 `internal_error` and logs it in full, and no public signature carries `SqlError`.
 * Every real (Postgres) layer applies this once to each method it exposes.
 */
export const dieOnSqlError = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, { readonly _tag: "SqlError" }>, R> =>
  Effect.catchIf(
    effect,
    (error): error is Extract<E, { readonly _tag: "SqlError" }> =>
      typeof error === "object" && error !== null && (error as { readonly _tag?: unknown })._tag === "SqlError",
    Effect.die
  ) as Effect.Effect<A, Exclude<E, { readonly _tag: "SqlError" }>, R>
