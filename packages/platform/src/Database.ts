/**
 * The suite's one Postgres database: `DATABASE_URL` when set, otherwise the embedded cluster in
 * `EMBEDDED_POSTGRES_DIR`. Provides `PgClient` / `SqlClient` (a pool) and `Database`, which says
 * where the pool points (for a second connection, e.g. LISTEN, or for messages to the operator).
 */
import { PgClient } from "@effect/sql-pg"
import { Cause, Config, Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import * as EmbeddedPostgres from "./EmbeddedPostgres.ts"
import { awaitReady } from "./PostgresReady.ts"
import { DatabaseUrl, EmbeddedPostgresDir, EmbeddedPostgresPort, intSetting } from "./Settings.ts"

export class Database extends Context.Service<Database, {
  readonly url: Redacted.Redacted<string>
  /** Set when the suite started (or shares) its own embedded cluster. */
  readonly embedded: Option.Option<EmbeddedPostgres.RunningPostgres>
}>()("@svc/platform/Database") {
  /** Resolves the connection: an external URL, or a running embedded cluster (scoped). */
  static readonly layerConnection = Layer.effect(
    Database,
    Effect.gen(function*() {
      const external = yield* DatabaseUrl
      if (Option.isSome(external)) {
        // A server that is still starting (a container brought up with us) refuses sessions with
        // 57P03 for a while: wait for it, bounded. Any other failure is left to the first real
        // use, which reports it in its own words.
        yield* awaitReady(external.value).pipe(Effect.ignore)
        return Database.of({ url: external.value, embedded: Option.none() })
      }
      const dataDir = yield* EmbeddedPostgresDir
      const port = Option.getOrElse(yield* EmbeddedPostgresPort, () => 0)
      const cluster = yield* EmbeddedPostgres.start({ dataDir, port })
      yield* Effect.annotateCurrentSpan("database.embedded", true)
      return Database.of({ url: cluster.url("postgres"), embedded: Option.some(cluster) })
    })
  )

  /** A pool for a known URL; `DATABASE_POOL_SIZE` bounds it. */
  static readonly layerPool = Layer.unwrap(
    Effect.gen(function*() {
      const { url } = yield* Database
      const maxConnections = yield* intSetting("DATABASE_POOL_SIZE", 10, { max: 1000 })
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

/** What a real layer's caller cannot act on: a database failure, a row that does not decode, a row that is missing where one is certain. */
type Unexpected = { readonly _tag: "SqlError" } | Schema.SchemaError | Cause.NoSuchElementError

const isUnexpected = (error: unknown): boolean =>
  Schema.isSchemaError(error) || Cause.isNoSuchElementError(error) ||
  (typeof error === "object" && error !== null && (error as { readonly _tag?: unknown })._tag === "SqlError")

/**
 * A real (Postgres) layer's boundary, applied once to each method it exposes: a database failure
 * (`SqlError`), a row that does not decode (`SchemaError`: a bug of this code) and a statement that
 * returned no row where one is certain (`NoSuchElementError`, e.g. an `INSERT … RETURNING`) are
 * defects from here on. The caller cannot act on any of them; the HTTP layer answers 500
 * `internal_error` and logs it in full, the RPC layer sends "internal error" (RpcDefects). So no
 * public service signature carries them.
 */
export const atDatabaseBoundary = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, Exclude<E, Unexpected>, R> =>
  // catchIf's result type cannot see that the refinement removes exactly `Unexpected`
  Effect.catchIf(effect, isUnexpected, Effect.die) as Effect.Effect<A, Exclude<E, Unexpected>, R>
