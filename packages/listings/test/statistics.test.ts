/**
 * Planner statistics after a large ingest: a run that wrote at least 1,000 offers analyzes
 * listings.offers right after it is recorded (a first load must not leave the planner blind until
 * autovacuum comes by); a small run leaves that to autovacuum.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { Ingest } from "../src/Ingest.ts"
import { services, TestDatabase } from "./support.ts"

const stack = services({
  sources: [{ id: "small", adapter: "mock", count: 10 }, { id: "large", adapter: "mock", count: 1_200 }]
}).pipe(Layer.provideMerge(TestDatabase.layer())) as Layer.Layer<Ingest | SqlClient.SqlClient, unknown>

layer(stack, { excludeTestServices: true, timeout: 60_000 })("statistics", (it) => {
  it.effect("a run that writes 1,000 offers or more analyzes the table; a small one does not", () =>
    Effect.gen(function*() {
      const ingest = yield* Ingest
      const sql = yield* SqlClient.SqlClient
      // the planner's row estimate: -1 until the table is first analyzed (or vacuumed)
      const estimate = sql<{ readonly rows: number }>`
        SELECT reltuples::int AS rows FROM pg_class WHERE oid = 'listings.offers'::regclass`.pipe(
        Effect.map((rows) => rows[0]!.rows)
      )
      const run = (source: string) =>
        ingest.trigger({ sources: [source], trigger: "manual" }).pipe(
          Effect.flatMap(([handle]) => Option.getOrThrow(handle!.outcome))
        )
      // (the statistics are refreshed after the outcome is told; awaitIdle waits for that too)
      assert.strictEqual((yield* run("small")).offersUpserted, 10)
      yield* ingest.awaitIdle
      assert.strictEqual(yield* estimate, -1)
      assert.strictEqual((yield* run("large")).offersUpserted, 1_200)
      yield* ingest.awaitIdle
      assert.strictEqual(yield* estimate, 1_210)
    }))
})
