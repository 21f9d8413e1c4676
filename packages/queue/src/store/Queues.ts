/**
 * FIFO queues (`queue.queues`): name, parallelism, paused, and what `GET /v2/queues` shows of each
 * (waiting and in-flight messages). Messages reach a queue through `POST /v2/enqueue/<queue>/...`
 * (`Enqueue.ts` creates an unknown queue with parallelism 1); the claim (`Messages.ts`) delivers
 * only a queue's first `parallelism` queued messages, in publish order.
 *
 * `layer` is Postgres; `layerMemory` keeps the same tables in memory (`MemoryTables`) for tests.
 */
import { atDatabaseBoundary } from "@svc/platform"
import { PgClient } from "@effect/sql-pg"
import type { FifoQueue } from "@svc/schema"
import { FifoQueueNotFound } from "@svc/schema"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlSchema } from "effect/sql"
import { type KeyPage, keyPageOf, keyPageSql } from "./KeyPage.ts"
import { queuedCountsSql } from "./QueuedCounts.ts"
import { Enqueue } from "./Enqueue.ts"
import { atNow, MemoryTables, type Tables } from "./MemoryTables.ts"

const QueueRow = Schema.Struct({
  name: Schema.String,
  parallelism: Schema.Number,
  paused: Schema.Boolean,
  created_at: Schema.Date,
  updated_at: Schema.Date,
  waiting: Schema.Number,
  in_flight: Schema.Number
})

const toQueue = (row: typeof QueueRow.Type): FifoQueue => ({
  name: row.name,
  parallelism: row.parallelism,
  paused: row.paused,
  waiting: row.waiting,
  inFlight: row.in_flight,
  createdAt: row.created_at.getTime(),
  updatedAt: row.updated_at.getTime()
})

export class Queues extends Context.Service<Queues, {
  /** Creates the queue, or sets its parallelism (kept when not given; 1 for a new queue). */
  readonly upsert: (name: string, parallelism: number | undefined) => Effect.Effect<FifoQueue>
  /** A page of queues by name (KeyPage.ts). */
  readonly list: (page: KeyPage) => Effect.Effect<ReadonlyArray<FifoQueue>>
  readonly get: (name: string) => Effect.Effect<FifoQueue, FifoQueueNotFound>
  /** The queue goes and its queued messages are cancelled (deliveries in flight finish). */
  readonly delete: (name: string) => Effect.Effect<void, FifoQueueNotFound>
  /** A paused queue keeps accepting; its messages wait. Resuming wakes the workers. */
  readonly setPaused: (name: string, paused: boolean) => Effect.Effect<FifoQueue, FifoQueueNotFound>
}>()("@svc/queue/store/Queues") {
  /** Postgres, with `Enqueue` (the wake-up) given by the caller. */
  static readonly layerNoDeps = Layer.effect(
    Queues,
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      const { wake } = yield* Enqueue

      // One queue by name, or a page by name (KeyPage.ts), cut before the counts are made.
      const select = SqlSchema.findAll({
        Request: Schema.Struct({ name: Schema.NullOr(Schema.String), after: Schema.UndefinedOr(Schema.String), limit: Schema.Number }),
        Result: QueueRow,
        execute: ({ name, ...page }) =>
          sql`
            SELECT q.name, q.parallelism, q.paused, q.created_at, q.updated_at, c.waiting, c.in_flight
            FROM (
              SELECT * FROM queue.queues q
              WHERE (${name}::text IS NULL OR q.name = ${name}::text) AND ${keyPageSql(sql, "q.name", page)}
            ) q
            CROSS JOIN LATERAL ${queuedCountsSql(sql, "queue_name", sql`q.name`)} c
            ORDER BY q.name COLLATE "C"`
      })

      const get = (name: string) =>
        Effect.flatMap(select({ name, after: undefined, limit: 1 }), ([row]) =>
          row === undefined ? Effect.fail(new FifoQueueNotFound({ name })) : Effect.succeed(toQueue(row)))

      const upsert = (name: string, parallelism: number | undefined) =>
        Effect.gen(function*() {
          yield* sql`
            INSERT INTO queue.queues (name, parallelism) VALUES (${name}, ${parallelism ?? 1}::int4)
            ON CONFLICT (name) DO UPDATE
              SET parallelism = coalesce(${parallelism ?? null}::int4, queue.queues.parallelism), updated_at = now()`
          yield* wake
          return yield* Effect.orDie(get(name))
        })

      const remove = (name: string) =>
        sql.withTransaction(Effect.gen(function*() {
          const deleted = yield* sql`DELETE FROM queue.queues WHERE name = ${name} RETURNING name`
          if (deleted.length === 0) return yield* new FifoQueueNotFound({ name })
          yield* sql`UPDATE queue.messages SET state = 'cancelled' WHERE queue_name = ${name} AND state = 'queued'`
        }))

      const setPaused = (name: string, paused: boolean) =>
        Effect.gen(function*() {
          yield* sql`UPDATE queue.queues SET paused = ${paused}, updated_at = now() WHERE name = ${name}`
          const queue = yield* get(name)
          if (!paused) yield* wake
          return queue
        })

      return Queues.of({
        upsert: (name, parallelism) => atDatabaseBoundary(upsert(name, parallelism)),
        list: (page) => atDatabaseBoundary(Effect.map(select({ name: null, ...page }), (rows) => rows.map(toQueue))),
        get: (name) => atDatabaseBoundary(get(name)),
        delete: (name) => atDatabaseBoundary(remove(name)),
        setPaused: (name, paused) => atDatabaseBoundary(setPaused(name, paused))
      })
    })
  )

  /** Postgres; needs `PgClient`. */
  static readonly layer = Queues.layerNoDeps.pipe(Layer.provide(Enqueue.layer))

  /** In memory, on the shared `MemoryTables` (tests only). */
  static readonly layerMemory = Layer.effect(
    Queues,
    Effect.gen(function*() {
      const tables = yield* MemoryTables
      const view = (tables: Tables, now: number, name: string): FifoQueue | undefined => {
        const queue = tables.queues.get(name)
        if (queue === undefined) return undefined
        let waiting = 0
        let inFlight = 0
        for (const message of tables.messages.values()) {
          if (message.queueName !== name || message.state !== "queued") continue
          if (message.claimId !== null && message.notBefore.getTime() > now) inFlight++
          else waiting++
        }
        return { ...queue, waiting, inFlight }
      }
      const get = (name: string) =>
        Effect.flatMap(atNow(tables, (now) => view(tables, now, name)), (queue) =>
          queue === undefined ? Effect.fail(new FifoQueueNotFound({ name })) : Effect.succeed(queue))
      return Queues.of({
        upsert: (name, parallelism) =>
          Effect.andThen(
            atNow(tables, (now) => {
              const old = tables.queues.get(name)
              tables.queues.set(name, {
                name,
                parallelism: parallelism ?? old?.parallelism ?? 1,
                paused: old?.paused ?? false,
                createdAt: old?.createdAt ?? now,
                updatedAt: now
              })
            }),
            Effect.orDie(get(name))
          ),
        list: (page) => atNow(tables, (now) => keyPageOf(tables.queues.keys(), (name) => name, page).map((name) => view(tables, now, name)!)),
        get,
        delete: (name) =>
          Effect.flatten(atNow(tables, (): Effect.Effect<void, FifoQueueNotFound> => {
            if (!tables.queues.delete(name)) return Effect.fail(new FifoQueueNotFound({ name }))
            for (const message of tables.messages.values()) {
              if (message.queueName === name && message.state === "queued") {
                tables.messages.set(message.id, { ...message, state: "cancelled" })
              }
            }
            return Effect.void
          })),
        setPaused: (name, paused) =>
          Effect.andThen(
            atNow(tables, (now) => {
              const queue = tables.queues.get(name)
              if (queue !== undefined) tables.queues.set(name, { ...queue, paused, updatedAt: now })
            }),
            get(name)
          )
      })
    })
  )
}
