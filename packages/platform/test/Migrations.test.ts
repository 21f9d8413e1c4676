import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { SqlClient } from "effect/sql"
import { fileURLToPath } from "node:url"
import * as Migrations from "../src/Migrations.ts"
import * as TestDatabase from "../src/testing/TestDatabase.ts"

const fixtures = (set: string) => fileURLToPath(new URL(`./fixtures/migrations/${set}`, import.meta.url))

const tablesOf = (schema: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ table_name: string }>`
      SELECT table_name FROM information_schema.tables WHERE table_schema = ${schema} ORDER BY 1`
    return rows.map((row) => row.table_name)
  })

describe("Migrations", () => {
  // An empty database per test group: these tests create their own schemas.
  layer(TestDatabase.layer("template0"))("on an empty database", (it) => {
    it.effect("a failing migration reports which one and why, and leaves the schema as it was", () =>
      Effect.gen(function*() {
        const failed = yield* Effect.exit(Migrations.migrate("rollback_a", fixtures("failing")))
        assert.isTrue(Exit.isFailure(failed))
        const error = yield* Effect.flip(Migrations.migrate("rollback_a", fixtures("failing")))
        assert.strictEqual(error._tag, "MigrationFailed")
        assert.include(error.message, "3_broken")
        assert.include(error.message, "no_such_table")
        assert.include(error.message, "as it was")
        // Not even the schema or the migrations table: the whole run was one transaction.
        const sql = yield* SqlClient.SqlClient
        const schemas = yield* sql`SELECT 1 FROM information_schema.schemata WHERE schema_name = 'rollback_a'`
        assert.strictEqual(schemas.length, 0)
      }))

    it.effect("applies pending migrations once, in the service's own schema and table", () =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* Migrations.migrate("idem", fixtures("good")), ["0001_create_things", "0002_add_colour"])
        assert.deepStrictEqual(yield* Migrations.migrate("idem", fixtures("good")), [])
        assert.deepStrictEqual(yield* tablesOf("idem"), ["svc_migrations", "things"])
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO idem.things (name, colour) VALUES ('a', 'red')`
      }))

    it.effect("a later failing migration keeps the earlier ones and the data", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* Migrations.migrate("partial", fixtures("good"))
        yield* sql`INSERT INTO partial.things (name) VALUES ('kept')`
        const error = yield* Effect.flip(Migrations.migrate("partial", fixtures("failing")))
        assert.include(error.message, "3_broken")
        assert.deepStrictEqual(yield* tablesOf("partial"), ["svc_migrations", "things"])
        const rows = yield* sql<{ name: string }>`SELECT name FROM partial.things`
        assert.deepStrictEqual(rows.map((row) => row.name), ["kept"])
        const recorded = yield* sql<{ migration_id: number }>`SELECT migration_id FROM partial.svc_migrations ORDER BY 1`
        assert.strictEqual(recorded.length, 2)
      }))

    it.effect("an older build on a schema a newer one migrated is refused, naming both migrations, and changes nothing", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* Migrations.migrate("downgraded", fixtures("good"))
        yield* sql`INSERT INTO downgraded.things (name, colour) VALUES ('kept', 'red')`
        // "older": the same first migration (a link to good's), not the second
        const error = yield* Effect.flip(Migrations.migrate("downgraded", fixtures("older")))
        assert.strictEqual(error._tag, "MigrationFailed")
        assert.include(error.message, "is at migration 0002_add_colour, newer than this build of svc knows (its newest is 0001_create_things)")
        const rows = yield* sql<{ name: string; colour: string }>`SELECT name, colour FROM downgraded.things`
        assert.deepStrictEqual(rows.map((row) => [row.name, row.colour]), [["kept", "red"]])
        assert.deepStrictEqual(yield* Migrations.migrate("downgraded", fixtures("good")), [])
      }))

    it.effect("concurrent runs of one service's migrations apply each migration exactly once", () =>
      Effect.gen(function*() {
        const results = yield* Effect.all(
          Array.from({ length: 4 }, () => Migrations.migrate("racy", fixtures("good"))),
          { concurrency: "unbounded" }
        )
        assert.deepStrictEqual(results.flat().sort(), ["0001_create_things", "0002_add_colour"])
      }))

    it.effect("refuses a schema name that is not a plain identifier", () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(Migrations.migrate("Robert'); DROP", fixtures("good")))
        assert.include(error.message, "not a valid service schema name")
      }))
  })
})
