/**
 * Deployment migration: a database of an older deployment (offers without the later columns, mock
 * rows among real ones) is migrated; the mock rows are gone, real rows survive with their dedup key
 * and their filter keys (0015: "Škoda" is found as "skoda"). A database at 0015 holding one car under
 * two spellings gets the dedup key that folds them (0016) and one winner per merged key.
 */
import { assert, describe, it } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { Migrations } from "@svc/platform"
import { TestDatabase } from "@svc/platform/testing"
import { Effect } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import * as fs from "node:fs"
import { fileURLToPath } from "node:url"
import { dedupKey, winnerOrderSql } from "../src/Dedup.ts"
import { filterKey } from "../src/SearchWords.ts"

/** The listings migrations up to `last` (a number), by `NNNN_name`, as `Migrator.fromRecord` takes them. */
const migrationsUpTo = (last: number) =>
  Effect.gen(function*() {
    const folder = "../../../migrations/listings/"
    const files = fs.readdirSync(fileURLToPath(new URL(folder, import.meta.url)))
      .filter((file) => /^\d{4}_\w+\.ts$/.test(file) && Number(file.slice(0, 4)) <= last)
      .sort()
    const record: Record<string, Effect.Effect<unknown, unknown, SqlClient.SqlClient>> = {}
    for (const file of files) {
      const path = folder + file
      record[file.slice(0, -3)] = (yield* Effect.promise(() => import(path))).default
    }
    return record
  })

/** Migrates the listings schema of the current database as `Migrations.migrate` does, up to `last`. */
const migrateUpTo = (last: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const migrations = yield* migrationsUpTo(last)
    yield* sql.withTransaction(Effect.gen(function*() {
      yield* sql`CREATE SCHEMA listings`
      yield* sql`SET LOCAL search_path TO listings, public`
      yield* Migrator.make({})({ loader: Migrator.fromRecord(migrations), table: "listings.svc_migrations" })
    }))
    return Object.keys(migrations)
  })

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

  it.effect("0016: keys of a database at 0015 fold make and model as the filters do, one winner per merged key", () =>
    Effect.gen(function*() {
      const url = yield* TestDatabase.freshDatabase("template0")
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const before = yield* migrateUpTo(15)
        assert.strictEqual(before[before.length - 1], "0015_filter_keys")

        // the offers as the ingest of 0015 wrote them: the key compared lower(make) | lower(model), so
        // every spelling was a key of its own with its own winner
        const insert = (o: {
          readonly id: string
          readonly make: string
          readonly model: string
          readonly price: number
          readonly minute: number
          readonly oldKey: string
          readonly winner: boolean
          readonly removed?: boolean
        }) =>
          sql`INSERT INTO listings.offers (id, source_id, native_id, title, make, model, price, currency, fuel,
                transmission, region, original_url, year, mileage, updated_at, removed_at, dedup_key, dedup_winner,
                make_key, model_key, fuel_key, transmission_key, region_key)
              VALUES (${o.id}, ${o.id.split(":")[0]!}, ${o.id.split(":")[1]!}, ${`${o.make} ${o.model}`}, ${o.make},
                ${o.model}, ${o.price}, 'PLN', 'diesel', 'manual', 'mazowieckie', 'https://m.example/1', 2019, 80000,
                ${new Date(Date.UTC(2025, 0, 1, 10, o.minute))}, ${o.removed === true ? new Date(Date.UTC(2025, 0, 2)) : null},
                ${o.oldKey}, ${o.winner}, ${filterKey(o.make)}, ${filterKey(o.model)}, 'diesel', 'manual', 'mazowieckie')`
        const offers = [
          { id: "alpha:1", make: "Škoda", model: "Octavia", price: 60_000, minute: 0, oldKey: "škoda|octavia|2019|80000|60000|PLN", winner: true },
          { id: "beta:1", make: "Skoda", model: "Octavia", price: 60_000, minute: 5, oldKey: "skoda|octavia|2019|80000|60000|PLN", winner: true },
          { id: "gamma:1", make: "SKODA", model: "OCTAVIA", price: 60_000, minute: 1, oldKey: "skoda|octavia|2019|80000|60000|PLN", winner: false },
          { id: "alpha:2", make: "Mercedes-Benz", model: "C 200", price: 100_000, minute: 10, oldKey: "mercedes-benz|c 200|2019|80000|100000|PLN", winner: true },
          { id: "beta:2", make: "Mercedes Benz", model: "C 200", price: 100_000, minute: 0, oldKey: "mercedes benz|c 200|2019|80000|100000|PLN", winner: true },
          { id: "alpha:3", make: "Citroen", model: "C4", price: 30_000, minute: 0, oldKey: "citroen|c4|2019|80000|30000|PLN", winner: true },
          { id: "beta:3", make: "Citroën", model: "C4", price: 30_000, minute: 20, oldKey: "citroën|c4|2019|80000|30000|PLN", winner: false, removed: true },
          { id: "alpha:4", make: "BMW", model: "320d", price: 50_000, minute: 0, oldKey: "bmw|320d|2019|80000|50000|PLN", winner: true }
        ]
        for (const offer of offers) yield* insert(offer)
        const [version] = yield* sql<{ readonly version: number }>`SELECT version::int AS version FROM listings.offers_version`

        assert.deepStrictEqual(yield* Migrations.migrate("listings"), ["0016_dedup_key_folds_names"])

        const rows = yield* sql<{ readonly id: string; readonly dedup_key: string; readonly dedup_winner: boolean }>`
          SELECT id, dedup_key, dedup_winner FROM listings.offers ORDER BY id`
        const byId = new Map(rows.map((row) => [row.id, row]))
        // every key (listed or removed offers) is the one the ingest computes now
        for (const offer of offers) {
          assert.strictEqual(byId.get(offer.id)!.dedup_key, dedupKey({ ...offer, year: 2019, mileage: 80_000, currency: "PLN" }), offer.id)
        }
        assert.strictEqual(byId.get("alpha:1")!.dedup_key, "skoda|octavia|2019|80000|60000|PLN")
        assert.strictEqual(byId.get("alpha:2")!.dedup_key, "mercedes benz|c 200|2019|80000|100000|PLN")
        assert.strictEqual(byId.get("beta:3")!.dedup_key, byId.get("alpha:3")!.dedup_key)
        assert.strictEqual(byId.get("alpha:4")!.dedup_key, "bmw|320d|2019|80000|50000|PLN")
        // one winner per merged key, the newest listed offer; a removed offer wins nothing
        assert.deepStrictEqual(rows.filter((row) => row.dedup_winner).map((row) => row.id), ["alpha:2", "alpha:3", "alpha:4", "beta:1"])
        const disagreeing = yield* sql<{ readonly id: string }>`
          SELECT o.id FROM listings.offers o
          LEFT JOIN (
            SELECT DISTINCT ON (dedup_key) id FROM listings.offers
            WHERE removed_at IS NULL ORDER BY dedup_key, ${sql.literal(winnerOrderSql())}
          ) w USING (id)
          WHERE o.dedup_winner <> (w.id IS NOT NULL)`
        assert.deepStrictEqual(disagreeing, [])
        // instances' remembered answers are read again
        const [after] = yield* sql<{ readonly version: number }>`SELECT version::int AS version FROM listings.offers_version`
        assert.isAbove(after!.version, version!.version)
        assert.deepStrictEqual(yield* Migrations.migrate("listings"), [])
      }).pipe(Effect.provide(PgClient.layer({ url, maxConnections: 2 })))
    }))

  it.effect("a fresh database migrates from zero (0002 computes the key it had, before 0015's columns exist)", () =>
    Effect.gen(function*() {
      const url = yield* TestDatabase.freshDatabase("template0")
      yield* Effect.gen(function*() {
        const applied = yield* Migrations.migrate("listings")
        assert.deepStrictEqual(applied, Object.keys(yield* migrationsUpTo(9_999)))
        assert.include(applied, "0016_dedup_key_folds_names")
      }).pipe(Effect.provide(PgClient.layer({ url, maxConnections: 2 })))
    }))
})
