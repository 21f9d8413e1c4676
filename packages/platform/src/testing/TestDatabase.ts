/**
 * A fresh database per test file on the run's one embedded cluster (see postgresGlobalSetup.ts),
 * cloned from the migrated template with `CREATE DATABASE … TEMPLATE …`: cheap, isolated, and
 * dropped when the layer's scope closes.
 */
import { PgClient } from "@effect/sql-pg"
import { type Duration, Effect, Layer, Option, Redacted, Schedule } from "effect"
import { Reactivity } from "effect/reactivity"
import { randomUUID } from "node:crypto"
import { inject } from "vitest"
import { Database, withDatabaseName } from "../Database.ts"

const adminUrl = () => Redacted.make(inject("svcPostgres").url)

/**
 * Create a database cloned from `template` (default: the migrated template; `"template0"` for an
 * empty one) and drop it when the scope closes. Returns its URL.
 */
export const freshDatabase = (template: string = inject("svcPostgres").template) =>
  Effect.gen(function*() {
    const name = `test_${randomUUID().replaceAll("-", "").slice(0, 16)}`
    yield* Effect.acquireRelease(
      // Two files cloning the template at the same instant can collide ("being accessed by other users").
      asAdmin((sql) => sql`CREATE DATABASE ${sql(name)} TEMPLATE ${sql(template)}`).pipe(
        Effect.retry({ schedule: Schedule.exponential("50 millis"), times: 8 })
      ),
      () => asAdmin((sql) => sql`DROP DATABASE IF EXISTS ${sql(name)} WITH (FORCE)`).pipe(Effect.ignore)
    )
    return withDatabaseName(adminUrl(), name)
  })

/**
 * One statement on a connection of its own. Not a client kept for the scope's life: a pool whose
 * connection idled out (a minute) never answered the DROP at the scope's close, and the test that
 * closed it hung until its timeout.
 */
const asAdmin = <A>(statement: (sql: PgClient.PgClient) => Effect.Effect<A, unknown>) =>
  Effect.scoped(Effect.flatMap(PgClient.make({ url: adminUrl(), maxConnections: 1 }), statement)).pipe(
    Effect.provide(Reactivity.layer)
  )

/**
 * An outage of the database `url` names, as its clients see one: for `duration` it refuses new
 * connections, and the open ones are closed at its start.
 */
export const outage = (url: Redacted.Redacted<string>, duration: Duration.Input) =>
  Effect.gen(function*() {
    const name = decodeURIComponent(new URL(Redacted.value(url)).pathname.slice(1))
    yield* asAdmin((sql) => sql`ALTER DATABASE ${sql(name)} ALLOW_CONNECTIONS false`)
    yield* asAdmin((sql) => sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ${name}`).pipe(
      Effect.andThen(Effect.sleep(duration)),
      // back whatever happens meanwhile: a test interrupted here must not leave its database refusing everyone
      Effect.ensuring(asAdmin((sql) => sql`ALTER DATABASE ${sql(name)} ALLOW_CONNECTIONS true`).pipe(Effect.ignore))
    )
  })

/** `Database` pointing at a fresh migrated database. */
export const layerConnection = (template?: string) =>
  Layer.effect(
    Database,
    Effect.map(freshDatabase(template), (url) => Database.of({ url, embedded: Option.none() }))
  )

/** What a service's tests need: a fresh migrated database, `Database`, `PgClient` and `SqlClient`. */
export const layer = (template?: string) => Database.layerPool.pipe(Layer.provideMerge(layerConnection(template)))
