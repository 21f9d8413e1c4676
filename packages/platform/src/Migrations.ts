/**
 * Schema migrations: `migrations/<service>/NNNN_name.ts`, each default-exporting an Effect that
 * needs `SqlClient`. Each service owns the Postgres schema of its name and keeps its own
 * `<service>.svc_migrations` table.
 *
 * One run for a service is one transaction (Postgres DDL is transactional): the schema, the
 * migrations table and every pending migration commit together or not at all, so a failing
 * migration leaves the schema exactly as it was. An advisory lock per service makes concurrent
 * starts of several instances wait for each other instead of racing.
 */
import { NodeServices } from "@effect/platform-node"
import { Effect, Layer, Schema } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import * as MigratorFileSystem from "effect/sql/MigratorFileSystem"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { postgresReason } from "./Database.ts"

/** The repository's `migrations/` folder. */
export const migrationsRoot = fileURLToPath(new URL("../../../migrations/", import.meta.url))

export class MigrationFailed extends Schema.TaggedError<MigrationFailed>()("MigrationFailed", {
  service: Schema.String,
  message: Schema.String
}) {}

const SERVICE_NAME = /^[a-z][a-z0-9_]*$/

/** Every service that has a migrations folder, in name order. */
export const services = (root = migrationsRoot): ReadonlyArray<string> =>
  fs.readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && SERVICE_NAME.test(entry.name))
    .map((entry) => entry.name)
    .sort()

/** A migration as its file is named: `0009_delivered_after_cancel`. */
const label = (id: number, name: string) => `${String(id).padStart(4, "0")}_${name}`

// effect's generic Migrator; PgMigrator adds only a pg_dump of the schema, which we don't want.
const runMigrator = Migrator.make({})

/**
 * Apply the pending migrations of one service; returns the `NNNN_name`s applied.
 * `directory` defaults to `migrations/<service>`.
 */
export const migrate = Effect.fn("Migrations.migrate")(function*(service: string, directory?: string) {
  if (!SERVICE_NAME.test(service)) {
    return yield* new MigrationFailed({ service, message: `"${service}" is not a valid service schema name` })
  }
  const sql = yield* SqlClient.SqlClient
  const loader = MigratorFileSystem.fromFileSystem(directory ?? path.join(migrationsRoot, service))
  const applied = yield* sql.withTransaction(Effect.gen(function*() {
    yield* sql`SELECT pg_advisory_xact_lock(hashtext(${`svc.migrate.${service}`}))`
    yield* sql`CREATE SCHEMA IF NOT EXISTS ${sql(service)}`
    // Unqualified names in a migration land in the service's schema; `public` keeps extensions visible.
    yield* sql`SET LOCAL search_path TO ${sql(service)}, public`
    const applied = yield* runMigrator({ loader, table: `${service}.svc_migrations` })
    yield* refuseNewerSchema(service, yield* loader)
    return applied
  })).pipe(
    Effect.provide(NodeServices.layer),
    Effect.mapError((error) =>
      error instanceof MigrationFailed ? error : new MigrationFailed({
        service,
        message: error._tag === "MigrationError" && error.kind === "Failed"
          ? `${error.message.replace(/"/g, "")} in ${service}: ${postgresReason(error.cause)}. ` +
            `Nothing was applied; the ${service} schema is as it was.`
          : `Migrations of ${service} could not run: ${postgresReason(error)}`
      })
    )
  )
  const names = applied.map(([id, name]) => label(id, name))
  yield* names.length === 0
    ? Effect.logDebug(`Migrations of ${service}: up to date`)
    : Effect.logInfo(`Migrations of ${service}: applied ${names.join(", ")}`)
  return names
})

/**
 * Fails when the service's schema holds a migration this build does not know: an older svc started
 * on a database a newer one has migrated. Its statements may call what those migrations replaced or
 * dropped, so it would fail at run time, request by request (an outside sweep found an older build
 * starting silently, its `svc migrate` saying "up to date").
 */
const refuseNewerSchema = Effect.fnUntraced(function*(service: string, known: ReadonlyArray<Migrator.ResolvedMigration>) {
  const sql = yield* SqlClient.SqlClient
  const [latest] = yield* sql<{ readonly migration_id: number; readonly name: string }>`
    SELECT migration_id, name FROM ${sql(service)}.svc_migrations ORDER BY migration_id DESC LIMIT 1`.withoutTransform
  const newest = known.reduce((max, [id]) => Math.max(max, id), 0)
  if (latest === undefined || latest.migration_id <= newest) return
  return yield* new MigrationFailed({
    service,
    message: `The ${service} schema is at migration ${label(latest.migration_id, latest.name)}, newer than this build of svc knows ` +
      `(its newest is ${newest === 0 ? "none" : label(newest, known.find(([id]) => id === newest)![1])}): ` +
      "a newer svc has run on this database. Start that version, or point this one at another database."
  })
})

/** Migrate the given services (default: every folder under `migrations/`) in order. */
export const migrateAll = (only?: ReadonlyArray<string>) =>
  Effect.forEach(only ?? services(), (service) => migrate(service))

/** A layer that migrates the given services when built: services depend on it so they start migrated. */
export const layer = (...only: ReadonlyArray<string>) => Layer.effectDiscard(migrateAll(only))
