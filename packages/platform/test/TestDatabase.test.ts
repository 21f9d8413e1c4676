import { assert, describe, it } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import * as Migrations from "../src/Migrations.ts"
import * as TestDatabase from "../src/testing/TestDatabase.ts"

const connect = (url: Parameters<typeof PgClient.layer>[0]["url"]) => PgClient.layer({ url, maxConnections: 1 })

describe("TestDatabase", () => {
  it.effect("each fresh database is a separate clone of the migrated template", () =>
    Effect.gen(function*() {
      const [a, b] = yield* Effect.all([TestDatabase.freshDatabase(), TestDatabase.freshDatabase()])
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE only_in_a (id int)`
      }).pipe(Effect.provide(connect(a)))
      const inB = yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        return yield* sql`SELECT 1 FROM information_schema.tables WHERE table_name = 'only_in_a'`
      }).pipe(Effect.provide(connect(b)))
      assert.strictEqual(inB.length, 0)
    }))

  it.effect("the template holds every service's migrations", () =>
    Effect.gen(function*() {
      const url = yield* TestDatabase.freshDatabase()
      const schemas = yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ schema_name: string }>`SELECT schema_name FROM information_schema.schemata`
        return rows.map((row) => row.schema_name)
      }).pipe(Effect.provide(connect(url)))
      for (const service of Migrations.services()) assert.include(schemas, service)
    }))
})
