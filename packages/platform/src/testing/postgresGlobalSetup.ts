/**
 * vitest globalSetup: one embedded Postgres cluster for the whole test run, with a template
 * database that holds every service's migrations. Test files clone it (see TestDatabase.ts).
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Exit, Redacted, Scope } from "effect"
import { SqlClient } from "effect/sql"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import type { TestProject } from "vitest/node"
import * as EmbeddedPostgres from "../EmbeddedPostgres.ts"
import { withDatabaseName } from "../Database.ts"
import * as Migrations from "../Migrations.ts"

export const TEMPLATE_DATABASE = "svc_template"

declare module "vitest" {
  export interface ProvidedContext {
    /** Admin URL of the run's cluster (database `postgres`) and the migrated template's name. */
    svcPostgres: { readonly url: string; readonly template: string }
  }
}

const buildTemplate = (adminUrl: Redacted.Redacted<string>) =>
  Effect.gen(function*() {
    const admin = yield* SqlClient.SqlClient
    yield* admin`CREATE DATABASE ${admin(TEMPLATE_DATABASE)}`
    yield* Migrations.migrateAll().pipe(
      Effect.provide(PgClient.layer({ url: withDatabaseName(adminUrl, TEMPLATE_DATABASE), maxConnections: 1 }))
    )
    yield* admin`ALTER DATABASE ${admin(TEMPLATE_DATABASE)} WITH is_template = true`
  }).pipe(Effect.provide(PgClient.layer({ url: adminUrl, maxConnections: 1 })))

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
    const cluster = await Effect.runPromise(
      EmbeddedPostgres.start({ dataDir: path.join(dir, "data"), ephemeral: true }).pipe(Scope.provide(scope))
    )
    const url = cluster.url("postgres")
    await Effect.runPromise(buildTemplate(url))
    project.provide("svcPostgres", { url: Redacted.value(url), template: TEMPLATE_DATABASE })
  } catch (error) {
    await cleanup()
    throw error
  }
  return cleanup
}
