/**
 * Deployment migration: a database of an older deployment (offers without the later columns, mock
 * rows among real ones) is migrated; the mock rows are gone, real rows survive with their dedup key
 * and their filter keys (0015: "Škoda" is found as "skoda").
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
        yield* sql`INSERT INTO listings.offers (id, source_id, native_id, title, make, model, price, currency, fuel,
                transmission, region, original_url, year, mileage)
              VALUES ('alpha:2', 'alpha', '2', 'Škoda Octavia', 'Škoda', 'Octavia Combi', 40000, 'PLN', 'Benzyna',
                'Manualna', 'Śląskie', 'https://m.example/2', 2016, 150000)`

        const applied = yield* Migrations.migrate("listings")
        assert.include(applied, "0007_remove_mock_rows")
        assert.notInclude(applied, "0001_create_offers")

        const rows = yield* sql<{ id: string; dedup_key: string; dedup_winner: boolean }>`
          SELECT id, dedup_key, dedup_winner FROM listings.offers ORDER BY id`
        assert.deepStrictEqual(rows.map((row) => row.id), ["alpha:1", "alpha:2", "beta:7"])
        // both BMW rows describe the same car: one key, one winner
        assert.strictEqual(rows[0]!.dedup_key, "bmw|320d|2018|100000|50000|PLN")
        assert.strictEqual(rows[2]!.dedup_key, rows[0]!.dedup_key)
        assert.deepStrictEqual([rows[0]!.dedup_winner, rows[2]!.dedup_winner].filter(Boolean).length, 1)
        // 0015: the rows stored before have their filter keys (made by SearchWords.filterKey), the
        // make's index reads the key, and the batch function has one signature, the new one
        const keys = yield* sql<Record<string, string>>`
          SELECT make_key, model_key, fuel_key, transmission_key, region_key FROM listings.offers WHERE id = 'alpha:2'`
        assert.deepStrictEqual(keys[0], {
          make_key: "skoda",
          model_key: "octavia combi",
          fuel_key: "benzyna",
          transmission_key: "manualna",
          region_key: "slaskie"
        })
        const [index] = yield* sql<{ indexdef: string }>`
          SELECT indexdef FROM pg_indexes WHERE schemaname = 'listings' AND indexname = 'offers_make_newest'`
        assert.include(index!.indexdef, "(make_key, updated_at DESC, id)")
        const functions = yield* sql<{ arguments: string }>`
          SELECT pg_get_function_identity_arguments(p.oid) AS arguments FROM pg_proc p
          JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'listings' AND p.proname = 'write_offer_batch'`
        assert.strictEqual(functions.length, 1)
        assert.include(functions[0]!.arguments, "region_keys text[]")
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
