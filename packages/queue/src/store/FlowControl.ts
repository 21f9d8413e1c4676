/**
 * Flow-control keys (`queue.flow_control`, `queue.flow_starts`): what `GET /v2/flow-control` shows
 * of each key (its limits, waiting and in-flight messages, starts in the current period, paused) and
 * pausing. A key's row is written by the publishes that name it (`Enqueue.ts`, with the rule for
 * differing limits) and enforced by the claim (`Messages.ts`), which holds the row's lock.
 *
 * `layer` is Postgres; `layerMemory` keeps the same tables in memory (`MemoryTables`) for tests.
 */
import { atDatabaseBoundary } from "@svc/platform"
import { PgClient } from "@effect/sql-pg"
import type { FlowControl } from "@svc/schema"
import { FlowControlNotFound } from "@svc/schema"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlSchema, type Statement } from "effect/sql"
import { type KeyPage, keyPageOf, keyPageSql } from "./KeyPage.ts"
import { queuedCountsSql } from "./QueuedCounts.ts"
import { Enqueue } from "./Enqueue.ts"
import { atNow, MemoryTables, type Tables } from "./MemoryTables.ts"

const FlowControlRow = Schema.Struct({
  key: Schema.String,
  parallelism: Schema.NullOr(Schema.Number),
  rate: Schema.NullOr(Schema.Number),
  period_ms: Schema.Number,
  paused: Schema.Boolean,
  waiting: Schema.Number,
  in_flight: Schema.Number,
  started: Schema.Number
})

const toFlowControl = (row: typeof FlowControlRow.Type): FlowControl => ({
  flowControlKey: row.key,
  ...(row.parallelism === null ? {} : { parallelism: row.parallelism }),
  ...(row.rate === null ? {} : { rate: row.rate }),
  periodMs: row.period_ms,
  waiting: row.waiting,
  inFlight: row.in_flight,
  startedInPeriod: row.started,
  paused: row.paused
})

export class FlowControls extends Context.Service<FlowControls, {
  /** A page of keys (KeyPage.ts). */
  readonly list: (page: KeyPage) => Effect.Effect<ReadonlyArray<FlowControl>>
  readonly get: (key: string) => Effect.Effect<FlowControl, FlowControlNotFound>
  /** A paused key's messages wait (deliveries in flight finish); resuming wakes the workers. */
  readonly setPaused: (key: string, paused: boolean) => Effect.Effect<FlowControl, FlowControlNotFound>
  /**
   * Deletes at most `limit` keys nobody uses (with their starts): not paused, no queued message, no
   * start in the current period, and neither published to nor paused or resumed for `idleMs`. Their
   * limits come back with the next publish naming them. The number deleted.
   */
  readonly pruneIdle: (idleMs: number, limit: number) => Effect.Effect<number>
}>()("@svc/queue/store/FlowControl") {
  /** Postgres, with `Enqueue` (the wake-up) given by the caller. */
  static readonly layerNoDeps = Layer.effect(
    FlowControls,
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      const { wake } = yield* Enqueue

      /** The keys `where` selects, with their counts. */
      const withCounts = (where: Statement.Fragment) =>
        sql`
          SELECT f.key, f.parallelism, f.rate, f.period_ms, f.paused,
            c.waiting, c.in_flight,
            (SELECT count(*) FROM queue.flow_starts s
              WHERE s.key = f.key AND s.started_at > now() - f.period_ms * interval '1 millisecond')::int4 AS started
          FROM (SELECT * FROM queue.flow_control f ${where}) f
          CROSS JOIN LATERAL ${queuedCountsSql(sql, "flow_key", sql`f.key`)} c
          ORDER BY f.key COLLATE "C"`
      const select = SqlSchema.findAll({
        Request: Schema.String,
        Result: FlowControlRow,
        execute: (key) => withCounts(sql`WHERE f.key = ${key}`)
      })
      // A page by key (KeyPage.ts), cut before the counts are made.
      const selectPage = SqlSchema.findAll({
        Request: Schema.Struct({ after: Schema.UndefinedOr(Schema.String), limit: Schema.Number }),
        Result: FlowControlRow,
        execute: (page) => withCounts(sql`WHERE ${keyPageSql(sql, "f.key", page)}`)
      })

      const get = (key: string) =>
        Effect.flatMap(select(key), ([row]) =>
          row === undefined ? Effect.fail(new FlowControlNotFound({ flowControlKey: key })) : Effect.succeed(toFlowControl(row)))

      const setPaused = (key: string, paused: boolean) =>
        Effect.gen(function*() {
          yield* sql`UPDATE queue.flow_control SET paused = ${paused}, updated_at = now() WHERE key = ${key}`
          const flow = yield* get(key)
          if (!paused) yield* wake
          return flow
        })

      // A publish naming the key sets `updated_at` under the row's lock (Enqueue.ts): one that commits
      // while this statement waits for the lock fails the re-checked `updated_at` test, so a key is
      // never deleted under a message that names it. Locked rows (a claim serving the key) are skipped.
      const pruneIdle = SqlSchema.findAll({
        Request: Schema.Struct({ idleMs: Schema.Number, limit: Schema.Number }),
        Result: Schema.Struct({ n: Schema.Number }),
        execute: ({ idleMs, limit }) =>
          sql`
            WITH idle AS (
              SELECT f.key FROM queue.flow_control f
              WHERE NOT f.paused
                AND f.updated_at < now() - ${idleMs}::float8 * interval '1 millisecond'
                AND NOT EXISTS (SELECT 1 FROM queue.messages m WHERE m.flow_key = f.key AND m.state = 'queued')
                AND NOT EXISTS (SELECT 1 FROM queue.flow_starts s
                  WHERE s.key = f.key AND s.started_at > now() - f.period_ms * interval '1 millisecond')
              LIMIT ${limit}
              FOR UPDATE SKIP LOCKED
            ),
            gone AS (DELETE FROM queue.flow_control f USING idle WHERE f.key = idle.key RETURNING f.key),
            starts AS (DELETE FROM queue.flow_starts s USING gone WHERE s.key = gone.key)
            SELECT count(*)::int4 AS n FROM gone`
      })

      return FlowControls.of({
        pruneIdle: (idleMs, limit) =>
          atDatabaseBoundary(Effect.map(pruneIdle({ idleMs, limit }), ([row]) => row?.n ?? 0)),
        list: (page) => atDatabaseBoundary(Effect.map(selectPage(page), (rows) => rows.map(toFlowControl))),
        get: (key) => atDatabaseBoundary(get(key)),
        setPaused: (key, paused) => atDatabaseBoundary(setPaused(key, paused))
      })
    })
  )

  /** Postgres; needs `PgClient`. */
  static readonly layer = FlowControls.layerNoDeps.pipe(Layer.provide(Enqueue.layer))

  /** In memory, on the shared `MemoryTables` (tests only). */
  static readonly layerMemory = Layer.effect(
    FlowControls,
    Effect.gen(function*() {
      const tables = yield* MemoryTables
      const view = (tables: Tables, now: number, key: string): FlowControl | undefined => {
        const flow = tables.flowControl.get(key)
        if (flow === undefined) return undefined
        let waiting = 0
        let inFlight = 0
        for (const message of tables.messages.values()) {
          if (message.flowKey !== key || message.state !== "queued") continue
          if (message.claimId !== null && message.notBefore.getTime() > now) inFlight++
          else waiting++
        }
        return toFlowControl({
          key,
          parallelism: flow.parallelism,
          rate: flow.rate,
          period_ms: flow.periodMs,
          paused: flow.paused,
          waiting,
          in_flight: inFlight,
          started: tables.flowStarts.filter((start) => start.key === key && start.at > now - flow.periodMs).length
        })
      }
      const get = (key: string) =>
        Effect.flatMap(atNow(tables, (now) => view(tables, now, key)), (flow) =>
          flow === undefined ? Effect.fail(new FlowControlNotFound({ flowControlKey: key })) : Effect.succeed(flow))
      return FlowControls.of({
        list: (page) => atNow(tables, (now) => keyPageOf(tables.flowControl.keys(), (key) => key, page).map((key) => view(tables, now, key)!)),
        get,
        setPaused: (key, paused) =>
          Effect.andThen(
            atNow(tables, (now) => {
              const flow = tables.flowControl.get(key)
              if (flow !== undefined) tables.flowControl.set(key, { ...flow, paused, updatedAt: now })
            }),
            get(key)
          ),
        pruneIdle: (idleMs, limit) =>
          atNow(tables, (now) => {
            const idle = [...tables.flowControl.values()].filter((flow) =>
              !flow.paused && flow.updatedAt < now - idleMs &&
              ![...tables.messages.values()].some((m) => m.flowKey === flow.key && m.state === "queued") &&
              !tables.flowStarts.some((start) => start.key === flow.key && start.at > now - flow.periodMs)
            ).slice(0, limit)
            for (const flow of idle) tables.flowControl.delete(flow.key)
            const gone = new Set(idle.map((flow) => flow.key))
            tables.flowStarts = tables.flowStarts.filter((start) => !gone.has(start.key))
            return idle.length
          })
      })
    })
  )
}
