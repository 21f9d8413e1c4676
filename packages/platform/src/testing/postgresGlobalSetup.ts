/**
 * vitest globalSetup: one embedded Postgres cluster for the whole test run, with a template
 * database that holds every service's migrations. Test files clone it (see TestDatabase.ts).
 *
 * `TEST_DATABASE_URL=postgres://user:pw@host/db` runs the suite against that server instead (a role
 * that may create databases and roles; DatabaseUnavailable.test.ts logs in as a role it makes): the
 * same tests then prove the suite works on an external Postgres.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Exit, Redacted, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import type { TestProject } from "vitest/node"
import * as EmbeddedPostgres from "../EmbeddedPostgres.ts"
import { withDatabaseName } from "../Database.ts"
import * as Migrations from "../Migrations.ts"


declare module "vitest" {
  export interface ProvidedContext {
    /** Admin URL of the run's cluster (database `postgres`) and the migrated template's name. */
    svcPostgres: { readonly url: string; readonly template: string }
  }
}

const adminSql = <A, E>(url: Redacted.Redacted<string>, f: (sql: SqlClient.SqlClient) => Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    return yield* f(yield* SqlClient.SqlClient)
  }).pipe(Effect.provide(PgClient.layer({ url, maxConnections: 1 })))

const buildTemplate = (adminUrl: Redacted.Redacted<string>, template: string) =>
  adminSql(adminUrl, (admin) =>
    Effect.gen(function*() {
      yield* admin`CREATE DATABASE ${admin(template)}`
      yield* Migrations.migrateAll().pipe(
        Effect.provide(PgClient.layer({ url: withDatabaseName(adminUrl, template), maxConnections: 1 }))
      )
    }))

export default async function setup(project: TestProject) {
  const scope = Scope.makeUnsafe()
  // Postgres refuses to run as root, so as root it runs as `postgres`: the folder must be reachable.
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "svc-test-pg-"))
  await fs.chmod(dir, 0o755)
  const cleanup = async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await fs.rm(dir, { recursive: true, force: true })
  }
  try {
    const external = process.env["TEST_DATABASE_URL"]
    const url = external
      ? Redacted.make(external)
      : (await Effect.runPromise(
        EmbeddedPostgres.start({ dataDir: path.join(dir, "data"), ephemeral: true }).pipe(Scope.provide(scope))
      )).url("postgres")
    // On a shared server several runs may build templates at once: each run has its own.
    const template = `svc_template_${randomBytes(6).toString("hex")}`
    await Effect.runPromise(
      Scope.addFinalizer(scope, adminSql(url, (admin) => admin`DROP DATABASE IF EXISTS ${admin(template)} WITH (FORCE)`).pipe(Effect.ignore))
    )
    await Effect.runPromise(buildTemplate(url, template))
    project.provide("svcPostgres", { url: Redacted.value(url), template })
  } catch (error) {
    await cleanup()
    throw error
  }
  return cleanup
}
