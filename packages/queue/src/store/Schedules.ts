/**
 * Schedules (`queue.schedules`, `queue.schedule_fires`): a stored publish request (destination,
 * configuration headers, body) and its cron, and the record of every fire.
 *
 * The store keeps the exactness of fires; the cron arithmetic is the caller's (`Cron.ts`,
 * `Scheduler.ts`), which passes the times in. {@link SchedulesShape.fireMany} (and `fire`, one of
 * them) is the one write of fires: in one transaction it takes each schedule's row (`FOR UPDATE
 * SKIP LOCKED`), checks that the tick is still the schedule's next one, inserts the (schedule, tick) rows (unique), inserts the fires'
 * messages and moves the next ticks on. Any number of schedulers may race for a tick: exactly one
 * fires it.
 *
 * `layer` is Postgres; `layerMemory` keeps the same tables in `MemoryTables` (tests only).
 */
import { PgClient } from "@effect/sql-pg"
import { atDatabaseBoundary } from "@svc/platform"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlSchema } from "effect/sql"
import { type KeyPage, keyPageOf, keyPageSql } from "./KeyPage.ts"
import { Enqueue } from "./Enqueue.ts"
import { atNow, insertMessages, MemoryTables } from "./MemoryTables.ts"
import type { NewMessage } from "./Model.ts"

/** A schedule to store (create, or replace under the same id). Times are Unix ms. */
export interface NewSchedule {
  readonly id: string
  /** `Svc-Cron` as given (checked by the caller). */
  readonly cron: string
  /** A URL (its pass-through query included) or a URL group name. */
  readonly destination: string
  /** The publish's configuration and forwarded headers, names lowercase. */
  readonly headers: Readonly<Record<string, string>>
  readonly body: Uint8Array
  readonly callerIp: string | undefined
  readonly nextTick: number
}

export interface ScheduleFire {
  readonly tick: number
  readonly firedAt: number
  readonly messageIds: ReadonlyArray<string>
  /** Why the fire published nothing (its request was refused, e.g. the URL group is gone). */
  readonly error: string | null
}

export interface StoredSchedule {
  readonly id: string
  readonly cron: string
  readonly destination: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: Uint8Array
  readonly callerIp: string | null
  readonly paused: boolean
  readonly nextTick: number
  readonly createdAt: number
  readonly updatedAt: number
  readonly lastFire: ScheduleFire | null
}

/** What a fire writes, computed before the transaction. */
export interface Fire {
  readonly id: string
  /** The tick fired: must still be the schedule's next one. */
  readonly tick: number
  /** The schedule's next tick after this fire (`undefined`: it never fires again; it is paused). */
  readonly next: number | undefined
  readonly now: number
  /** The messages of the fire (none when `error` is set). */
  readonly messages: ReadonlyArray<NewMessage>
  readonly error: string | undefined
}

export interface SchedulesShape {
  /** Creates, or replaces the request, cron and next tick of the schedule with this id (paused state kept). */
  readonly upsert: (schedule: NewSchedule) => Effect.Effect<StoredSchedule>
  readonly get: (id: string) => Effect.Effect<Option.Option<StoredSchedule>>
  /** A page of schedules by id (KeyPage.ts). */
  readonly list: (page: KeyPage) => Effect.Effect<ReadonlyArray<StoredSchedule>>
  readonly count: Effect.Effect<number>
  /** Removes the schedule and its fires; false when there was none. */
  readonly delete: (id: string) => Effect.Effect<boolean>
  /** Pauses, or resumes with the given next tick; none when there is no such schedule. */
  readonly setPaused: (id: string, paused: boolean, nextTick: number | undefined) => Effect.Effect<Option.Option<StoredSchedule>>
  /** Up to `limit` active schedules whose next tick is at or before `now`, earliest first. */
  readonly due: (now: number, limit: number) => Effect.Effect<ReadonlyArray<StoredSchedule>>
  /** The earliest next tick of an active schedule. */
  readonly nextDue: Effect.Effect<Option.Option<number>>
  /** Fires one tick (see the module comment): the message ids, or none when another fire took the tick. */
  readonly fire: (fire: Fire) => Effect.Effect<Option.Option<ReadonlyArray<string>>>
  /** Several fires (of distinct schedules) in one transaction: each one's result as {@link fire}'s. */
  readonly fireMany: (fires: ReadonlyArray<Fire>) => Effect.Effect<ReadonlyArray<Option.Option<ReadonlyArray<string>>>>
}

/** The memory tables of this store (a field of `MemoryTables`). */
export interface MemorySchedules {
  readonly rows: Map<string, Omit<StoredSchedule, "lastFire">>
  /** By schedule id, then tick. */
  readonly fires: Map<string, Map<number, ScheduleFire>>
}

const ScheduleRow = Schema.Struct({
  id: Schema.String,
  cron: Schema.String,
  destination: Schema.String,
  headers: Schema.Record(Schema.String, Schema.String),
  body: Schema.Uint8Array,
  caller_ip: Schema.NullOr(Schema.String),
  paused: Schema.Boolean,
  next_tick: Schema.Date,
  created_at: Schema.Date,
  updated_at: Schema.Date,
  last_tick: Schema.NullOr(Schema.Date),
  last_fired_at: Schema.NullOr(Schema.Date),
  last_message_ids: Schema.NullOr(Schema.Array(Schema.String)),
  last_error: Schema.NullOr(Schema.String)
})

const toStored = (row: typeof ScheduleRow.Type): StoredSchedule => ({
  id: row.id,
  cron: row.cron,
  destination: row.destination,
  headers: row.headers,
  body: row.body,
  callerIp: row.caller_ip,
  paused: row.paused,
  nextTick: row.next_tick.getTime(),
  createdAt: row.created_at.getTime(),
  updatedAt: row.updated_at.getTime(),
  lastFire: row.last_tick === null ? null : {
    tick: row.last_tick.getTime(),
    firedAt: row.last_fired_at!.getTime(),
    messageIds: row.last_message_ids ?? [],
    error: row.last_error
  }
})

/** A fire older than this is forgotten (its tick is long behind the schedule's next one). */
const FIRE_RETENTION_DAYS = 7

/** Far future: the next tick of a schedule that never fires again (it is paused as well). */
const NEVER = Date.UTC(9999, 0, 1)

export class Schedules extends Context.Service<Schedules, SchedulesShape>()("@svc/queue/store/Schedules") {
  /** Postgres, with `Enqueue` given by the caller (shared with the other stores that enqueue). */
  static readonly layerNoDeps = Layer.effect(
    Schedules,
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      const { insert, wake } = yield* Enqueue
      const at = (ms: number) => sql`to_timestamp(${ms}::float8 / 1000)`

      const columns = sql`
        s.id, s.cron, s.destination, s.headers, s.body, s.caller_ip, s.paused, s.next_tick, s.created_at, s.updated_at,
        f.tick AS last_tick, f.fired_at AS last_fired_at, f.message_ids AS last_message_ids, f.error AS last_error`
      const lastFire = sql`
        LEFT JOIN LATERAL (SELECT * FROM queue.schedule_fires WHERE schedule_id = s.id ORDER BY tick DESC LIMIT 1) f ON true`

      const select = SqlSchema.findAll({
        Request: Schema.String,
        Result: ScheduleRow,
        execute: (id) => sql`SELECT ${columns} FROM queue.schedules s ${lastFire} WHERE s.id = ${id}`
      })
      const get = (id: string) => Effect.map(select(id), (rows) => Option.fromUndefinedOr(rows[0]).pipe(Option.map(toStored)))

      // A page by id (KeyPage.ts).
      const selectPage = SqlSchema.findAll({
        Request: Schema.Struct({ after: Schema.UndefinedOr(Schema.String), limit: Schema.Number }),
        Result: ScheduleRow,
        execute: (page) => sql`SELECT ${columns} FROM queue.schedules s ${lastFire} WHERE ${keyPageSql(sql, "s.id", page)}`
      })

      const upsert = (schedule: NewSchedule) =>
        Effect.gen(function*() {
          yield* sql`
            INSERT INTO queue.schedules (id, cron, destination, headers, body, caller_ip, next_tick)
            VALUES (${schedule.id}, ${schedule.cron}, ${schedule.destination}, ${sql.json(schedule.headers)}::jsonb,
              ${schedule.body}::bytea, ${schedule.callerIp ?? null}, ${at(schedule.nextTick)})
            ON CONFLICT (id) DO UPDATE SET cron = EXCLUDED.cron, destination = EXCLUDED.destination,
              headers = EXCLUDED.headers, body = EXCLUDED.body, caller_ip = EXCLUDED.caller_ip,
              next_tick = EXCLUDED.next_tick, updated_at = now()`
          return Option.getOrThrow(yield* get(schedule.id))
        })

      const countRow = SqlSchema.findAll({
        Request: Schema.Void,
        Result: Schema.Struct({ count: Schema.Number }),
        execute: () => sql`SELECT count(*)::int4 AS count FROM queue.schedules`
      })

      const dueRows = SqlSchema.findAll({
        Request: Schema.Struct({ now: Schema.Number, limit: Schema.Number }),
        Result: ScheduleRow,
        execute: ({ limit, now }) =>
          sql`SELECT ${columns} FROM queue.schedules s ${lastFire}
              WHERE NOT s.paused AND s.next_tick <= ${at(now)}
              ORDER BY s.next_tick LIMIT ${limit}`
      })

      const nextDueRow = SqlSchema.findAll({
        Request: Schema.Void,
        Result: Schema.Struct({ due: Schema.NullOr(Schema.Date) }),
        execute: () => sql`SELECT min(next_tick) AS due FROM queue.schedules WHERE NOT paused`
      })

      const setPaused = (id: string, paused: boolean, nextTick: number | undefined) =>
        Effect.gen(function*() {
          const updated = yield* sql`
            UPDATE queue.schedules SET paused = ${paused}, updated_at = now(),
              next_tick = ${nextTick === undefined ? sql`next_tick` : at(nextTick)}
            WHERE id = ${id} RETURNING id`
          return updated.length === 0 ? Option.none<StoredSchedule>() : yield* get(id)
        })

      const FireRow = Schema.Struct({ id: Schema.String, tick: Schema.Date })
      /** The fires whose schedule is active, not held by another fire, and still at that tick: now held. */
      const holdRows = SqlSchema.findAll({
        Request: Schema.Struct({ ids: Schema.Array(Schema.String) }),
        Result: FireRow,
        execute: ({ ids }) =>
          sql`SELECT id, date_trunc('milliseconds', next_tick) AS tick FROM queue.schedules
              WHERE id = ANY(${ids}::text[]) AND NOT paused FOR UPDATE SKIP LOCKED`
      })

      /**
       * Several fires in one transaction: hold the schedules' rows, keep the fires whose tick is still
       * the schedule's next one, insert their messages (one INSERT), their (schedule, tick) rows and
       * the next ticks. A (schedule, tick) row that exists already aborts the whole transaction
       * (nothing is written): it cannot happen while the row is held and the tick checked.
       */
      const fireTicks = (fires: ReadonlyArray<Fire>) =>
        sql.withTransaction(Effect.gen(function*() {
          const held = yield* holdRows({ ids: fires.map((fire) => fire.id) })
          const current = new Map(held.map((row) => [row.id, row.tick.getTime()]))
          const taken = fires.filter((fire) => current.get(fire.id) === fire.tick)
          if (taken.length === 0) return { ids: new Map<string, ReadonlyArray<string>>(), due: false }
          const { due, ids } = yield* insert(taken.flatMap((fire) => fire.messages))
          const byFire = new Map<string, ReadonlyArray<string>>()
          let offset = 0
          for (const fire of taken) {
            byFire.set(fire.id, ids.slice(offset, offset + fire.messages.length))
            offset += fire.messages.length
          }
          const inserted = yield* sql`
            INSERT INTO queue.schedule_fires (schedule_id, tick, fired_at, message_ids, error)
            SELECT f.id, to_timestamp(f.tick / 1000), to_timestamp(f.now / 1000), f.ids::jsonb, nullif(f.error, '')
            FROM unnest(${taken.map((f) => f.id)}::text[], ${taken.map((f) => f.tick)}::float8[], ${taken.map((f) => f.now)}::float8[],
              ${taken.map((f) => JSON.stringify(byFire.get(f.id)))}::text[], ${taken.map((f) => f.error ?? "")}::text[])
              AS f(id, tick, now, ids, error)
            ON CONFLICT DO NOTHING RETURNING schedule_id`
          if (inserted.length !== taken.length) {
            return yield* Effect.die(new Error("a (schedule, tick) fired twice: the fire's transaction is rolled back"))
          }
          yield* sql`
            UPDATE queue.schedules s SET next_tick = to_timestamp(f.next / 1000), paused = s.paused OR f.never = 1
            FROM unnest(${taken.map((f) => f.id)}::text[], ${taken.map((f) => f.next ?? NEVER)}::float8[],
              ${taken.map((f) => f.next === undefined ? 1 : 0)}::int4[]) AS f(id, next, never)
            WHERE s.id = f.id`
          yield* sql`
            DELETE FROM queue.schedule_fires d USING unnest(${taken.map((f) => f.id)}::text[], ${taken.map((f) => f.tick)}::float8[]) AS f(id, tick)
            WHERE d.schedule_id = f.id AND d.tick < to_timestamp(f.tick / 1000) - ${FIRE_RETENTION_DAYS} * interval '1 day'`
          return { ids: byFire, due }
        })).pipe(
          Effect.tap(({ due }) => due ? wake : Effect.void),
          Effect.map(({ ids }) => fires.map((fire) => Option.fromUndefinedOr(ids.get(fire.id))))
        )

      return Schedules.of({
        upsert: (schedule) => atDatabaseBoundary(upsert(schedule)),
        get: (id) => atDatabaseBoundary(get(id)),
        list: (page) => atDatabaseBoundary(Effect.map(selectPage(page), (rows) => rows.map(toStored))),
        count: atDatabaseBoundary(Effect.map(countRow(undefined), (rows) => rows[0]?.count ?? 0)),
        delete: (id) =>
          atDatabaseBoundary(Effect.map(sql`DELETE FROM queue.schedules WHERE id = ${id} RETURNING id`, (rows) => rows.length > 0)),
        setPaused: (id, paused, nextTick) => atDatabaseBoundary(setPaused(id, paused, nextTick)),
        due: (now, limit) => atDatabaseBoundary(Effect.map(dueRows({ now, limit }), (rows) => rows.map(toStored))),
        nextDue: atDatabaseBoundary(
          Effect.map(nextDueRow(undefined), (rows) => Option.fromNullishOr(rows[0]?.due).pipe(Option.map((due) => due.getTime())))
        ),
        fire: (fire) => atDatabaseBoundary(Effect.map(fireTicks([fire]), (results) => results[0]!)),
        fireMany: (fires) => fires.length === 0 ? Effect.succeed([]) : atDatabaseBoundary(fireTicks(fires))
      })
    })
  )

  /** Postgres; needs `PgClient`. */
  static readonly layer = Schedules.layerNoDeps.pipe(Layer.provide(Enqueue.layer))

  /** In memory, on the shared `MemoryTables` (tests only). */
  static readonly layerMemory = Layer.effect(
    Schedules,
    Effect.gen(function*() {
      const tables = yield* MemoryTables
      const { rows, fires } = tables.schedules
      const withLastFire = (row: Omit<StoredSchedule, "lastFire">): StoredSchedule => {
        const history = [...(fires.get(row.id)?.values() ?? [])]
        const last = history.reduce<ScheduleFire | null>((a, b) => a === null || b.tick > a.tick ? b : a, null)
        return { ...row, lastFire: last }
      }
      const get = (id: string) => Option.fromUndefinedOr(rows.get(id)).pipe(Option.map(withLastFire))

      return Schedules.of({
        upsert: (schedule) =>
          atNow(tables, (now) => {
            const before = rows.get(schedule.id)
            rows.set(schedule.id, {
              id: schedule.id,
              cron: schedule.cron,
              destination: schedule.destination,
              headers: schedule.headers,
              body: schedule.body,
              callerIp: schedule.callerIp ?? null,
              paused: before?.paused ?? false,
              nextTick: schedule.nextTick,
              createdAt: before?.createdAt ?? now,
              updatedAt: now
            })
            return Option.getOrThrow(get(schedule.id))
          }),
        get: (id) => Effect.sync(() => get(id)),
        list: (page) => Effect.sync(() => keyPageOf(rows.values(), (row) => row.id, page).map(withLastFire)),
        count: Effect.sync(() => rows.size),
        delete: (id) =>
          Effect.sync(() => {
            fires.delete(id)
            return rows.delete(id)
          }),
        setPaused: (id, paused, nextTick) =>
          atNow(tables, (now) => {
            const row = rows.get(id)
            if (row === undefined) return Option.none()
            rows.set(id, { ...row, paused, nextTick: nextTick ?? row.nextTick, updatedAt: now })
            return get(id)
          }),
        due: (now, limit) =>
          Effect.sync(() =>
            [...rows.values()]
              .filter((row) => !row.paused && row.nextTick <= now)
              .sort((a, b) => a.nextTick - b.nextTick)
              .slice(0, limit)
              .map(withLastFire)
          ),
        nextDue: Effect.sync(() => {
          const active = [...rows.values()].filter((row) => !row.paused).map((row) => row.nextTick)
          return active.length === 0 ? Option.none() : Option.some(Math.min(...active))
        }),
        fire: (fire) => atNow(tables, (now) => fireNow(now, fire)),
        fireMany: (many) => atNow(tables, (now) => many.map((fire) => fireNow(now, fire)))
      })
      function fireNow(now: number, fire: Fire): Option.Option<ReadonlyArray<string>> {
        const row = rows.get(fire.id)
        if (row === undefined || row.paused || row.nextTick !== fire.tick) return Option.none()
        const history = fires.get(fire.id) ?? new Map<number, ScheduleFire>()
        fires.set(fire.id, history)
        const fresh = !history.has(fire.tick)
        const ids = fresh ? insertMessages(tables, now, fire.messages) : []
        if (fresh) history.set(fire.tick, { tick: fire.tick, firedAt: fire.now, messageIds: ids, error: fire.error ?? null })
        rows.set(fire.id, { ...row, nextTick: fire.next ?? NEVER, paused: row.paused || fire.next === undefined })
        for (const tick of history.keys()) {
          if (tick < fire.tick - FIRE_RETENTION_DAYS * 86_400_000) history.delete(tick)
        }
        return fresh ? Option.some(ids) : Option.none()
      }
    })
  )
}
