/**
 * Deployment migration: a database of an older deployment (offers without the later columns, mock
 * rows among real ones) is migrated; the mock rows are gone, real rows survive with their dedup key.
 */
import { assert, describe, it } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { Migrations } from "@svc/platform"
import { TestDatabase } from "@svc/platform/testing"
import { Effect } from "effect"
import { Migrator, SqlClient } from "effect/sql"

describe("migrations", () => {
  it.effect("remove mock rows left by an older deployment and keep real ones", () =>
    Effect.gen(function*() {
      const url = yield* TestDatabase.freshDatabase("template0")
      const firstMigration = "../../../migrations/listings/0001_create_offers.ts"
      const m0001 = (yield* Effect.promise(() => import(firstMigration))).default
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // the older deployment: only the first migration (no dedup or coordinate columns yet)
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`CREATE SCHEMA listings`
          yield* sql`SET LOCAL search_path TO listings, public`
          yield* Migrator.make({})({
            loader: Migrator.fromRecord({ "0001_create_offers": m0001 }),
            table: "listings.svc_migrations"
          })
        }))
        const insert = (id: string, source: string) =>
          sql`INSERT INTO listings.offers (id, source_id, native_id, title, make, model, price, currency, fuel,
                transmission, region, original_url, year, mileage)
              VALUES (${id}, ${source}, ${id.split(":")[1]!}, 'Title', 'BMW', '320d', 50000, 'PLN', 'diesel',
                'manual', 'mazowieckie', 'https://m.example/1', 2018, 100000)`
        yield* insert("mock:1", "mock")
        yield* insert("mock:2", "mock")
        yield* insert("alpha:1", "alpha")
        yield* insert("beta:7", "beta")

        const applied = yield* Migrations.migrate("listings")
        assert.include(applied, "0007_remove_mock_rows")
        assert.notInclude(applied, "0001_create_offers")

        const rows = yield* sql<{ id: string; dedup_key: string; dedup_winner: boolean }>`
          SELECT id, dedup_key, dedup_winner FROM listings.offers ORDER BY id`
        assert.deepStrictEqual(rows.map((row) => row.id), ["alpha:1", "beta:7"])
        // both real rows describe the same car: one key, one winner (the lowest id at equal times)
        assert.strictEqual(rows[0]!.dedup_key, "bmw|320d|2018|100000|50000|PLN")
        assert.strictEqual(rows[1]!.dedup_key, rows[0]!.dedup_key)
        assert.deepStrictEqual(rows.map((row) => row.dedup_winner).filter(Boolean).length, 1)
        // the documents the database made before 0010 still match the queries made now (SearchWords)
        const found = yield* sql<{ id: string }>`
          SELECT id FROM listings.offers WHERE search @@ 'titl:* & 320d:*'::tsquery ORDER BY id`
        assert.deepStrictEqual(found.map((row) => row.id), ["alpha:1", "beta:7"])
        const services = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM listings.import_services`
        assert.isAbove(services[0]!.n, 20)
        // idempotent
        assert.deepStrictEqual(yield* Migrations.migrate("listings"), [])
      }).pipe(Effect.provide(PgClient.layer({ url, maxConnections: 2 })))
    }))
})
