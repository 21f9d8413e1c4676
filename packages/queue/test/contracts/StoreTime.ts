/**
 * Time for the store contracts, without sleeping: `advance(ms)` moves the stores' clock forward.
 * In memory the stores read `Clock`, so it is `TestClock.adjust`; in Postgres they read `now()`, so
 * it moves every stored time back by `ms` instead (the same thing as seen by the next statement).
 */
import { PgClient } from "@effect/sql-pg"
import { Context, Duration, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import type { QueueSettings } from "../../src/QueueConfig.ts"
import { QueueConfig } from "../../src/QueueConfig.ts"
import * as Stores from "../../src/store/Stores.ts"

export class StoreTime extends Context.Service<StoreTime, {
  readonly advance: (ms: number) => Effect.Effect<void>
}>()("test/StoreTime") {
  /** With the `TestClock` the memory stores read (provide with the stores). */
  static readonly memory = Layer.merge(
    Layer.succeed(StoreTime, StoreTime.of({ advance: (ms) => TestClock.adjust(Duration.millis(ms)) })),
    TestClock.layer()
  )

  static readonly postgres = Layer.effect(
    StoreTime,
    Effect.map(PgClient.PgClient, (sql) =>
      StoreTime.of({
        advance: (ms) =>
          Effect.gen(function*() {
            const by = sql`${ms}::float8 * interval '1 millisecond'`
            yield* sql`UPDATE queue.messages SET not_before = not_before - ${by}, scheduled_at = scheduled_at - ${by},
              created_at = created_at - ${by}, delivered_at = delivered_at - ${by}`
            yield* sql`UPDATE queue.dlq SET failed_at = failed_at - ${by}`
            yield* sql`UPDATE queue.dedup SET expires_at = expires_at - ${by}`
            yield* sql`UPDATE queue.flow_starts SET started_at = started_at - ${by}`
            yield* sql`UPDATE queue.flow_control SET updated_at = updated_at - ${by}`
            yield* sql`UPDATE queue.events SET time = time - ${by}, next_delivery_time = next_delivery_time - ${by}`
          }).pipe(Effect.orDie)
      }))
  )
}

/** The settings both layers of the contracts are built with. */
export const contractSettings: Partial<QueueSettings> = {
  leaseMargin: Duration.seconds(2),
  dedupWindow: Duration.minutes(10)
}
export const LEASE_MARGIN_MS = 2000
export const DEDUP_WINDOW_MS = 10 * 60 * 1000

/** Every store in memory, on fresh tables, with a `TestClock`, built with `overrides` of the contract settings. */
export const memoryStoresWith = (overrides: Partial<QueueSettings>) =>
  Layer.mergeAll(
    Stores.layerMemory.pipe(Layer.provide(QueueConfig.layerWith({ ...contractSettings, ...overrides }))),
    StoreTime.memory
  )

/** Every store in memory, on fresh tables, with a `TestClock` (what the unit runs of the contracts get). */
export const memoryStores = memoryStoresWith({})
