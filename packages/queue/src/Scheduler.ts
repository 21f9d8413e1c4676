/**
 * The schedule firing loop. It runs beside the delivery worker (every process with
 * `QUEUE_WORKER` true), any number of them on one database:
 *
 * - it reads the active schedules whose next tick has come (`Schedules.due`, up to
 *   {@link BATCH} at a time) and fires each: the stored request goes through the publish path
 *   (`Operations.preparePublish`: a URL group's endpoints as they are at fire time, every check of a
 *   publish), its messages carry the schedule's id, and `Schedules.fireMany` writes them with the
 *   (schedule, tick) rows and the next ticks in one transaction per {@link FIRES_PER_TRANSACTION}
 *   fires — so of several schedulers racing for a tick exactly one fires it;
 * - a fire whose request is refused now (its URL group deleted, a destination no longer allowed)
 *   publishes nothing and records why as the schedule's last fire; the schedule carries on;
 * - the next tick follows the catch-up rule of `Cron.ts` (`QUEUE_SCHEDULE_CATCH_UP`, 10 minutes);
 * - idle, it sleeps until the earliest next tick or `QUEUE_POLL_INTERVAL`, whichever is sooner.
 *
 * Time is effect's `Clock`, so a `TestClock` walks it in tests.
 */
import { postgresReason, Settings } from "@svc/platform"
import { Clock, Config, Duration, Effect, Layer, Option } from "effect"
import { cronOf, tickAfterFire } from "./Cron.ts"
import * as Operations from "./Operations.ts"
import { unknownSettingProblem } from "./Publish.ts"
import { QueueConfig } from "./QueueConfig.ts"
import { type Fire, Schedules, type StoredSchedule } from "./store/Schedules.ts"

/** Schedules read per scan. */
export const BATCH = 100
/** Fires prepared at once per scheduler. */
export const FIRE_CONCURRENCY = 16
/** Fires written per transaction (several transactions at once). */
export const FIRES_PER_TRANSACTION = 25

/** `QUEUE_SCHEDULE_CATCH_UP`: a tick missed by at most this still fires (see `Cron.ts`). */
export const CatchUp = Settings.durationSetting("QUEUE_SCHEDULE_CATCH_UP", "10 minutes", { min: "0 seconds" })

/**
 * A stored schedule's headers without the `Svc-*` names a publish does not read: a schedule stored
 * before publishes refused them held them ignored, and must go on firing as it was stored.
 */
const withoutUnknownSettings = (headers: Readonly<Record<string, string>>): Record<string, string> =>
  Object.fromEntries(
    Object.entries(headers).filter(([name]) => !name.startsWith("svc-") || unknownSettingProblem(name, "header") === undefined)
  )

/** What firing one due schedule at `now` writes: its request through the publish path, as data. */
export const prepareFire = (schedule: StoredSchedule, now: number, catchUpMs: number) =>
  Effect.gen(function*() {
    const cron = cronOf(schedule.cron)
    const next = tickAfterFire(cron, schedule.nextTick, now, catchUpMs)
    const prepared = yield* Operations.preparePublish({
      destination: schedule.destination,
      headers: withoutUnknownSettings(schedule.headers),
      body: Effect.succeed(schedule.body),
      callerIp: schedule.callerIp ?? undefined
    }).pipe(Effect.result)
    const fire: Fire = prepared._tag === "Success"
      ? {
        id: schedule.id,
        tick: schedule.nextTick,
        next,
        now,
        messages: prepared.success.messages.map((message) => ({ ...message, dedupId: undefined, scheduleId: schedule.id })),
        error: undefined
      }
      : { id: schedule.id, tick: schedule.nextTick, next, now, messages: [], error: prepared.failure.message }
    return fire
  })

/**
 * One scan: prepares every due schedule (up to {@link BATCH}, {@link FIRE_CONCURRENCY} at a time)
 * and fires them {@link FIRES_PER_TRANSACTION} to a transaction; how many were due and how many
 * this scan fired.
 */
export const scan = (catchUpMs: number) =>
  Effect.gen(function*() {
    const store = yield* Schedules
    const now = yield* Clock.currentTimeMillis
    const due = yield* store.due(now, BATCH)
    const prepared = yield* Effect.forEach(
      due,
      (schedule) =>
        prepareFire(schedule, now, catchUpMs).pipe(
          Effect.catchDefect((defect) =>
            Effect.as(Effect.logWarning(`Scheduler: preparing ${schedule.id} failed: ${postgresReason(defect)}`), undefined)
          )
        ),
      { concurrency: FIRE_CONCURRENCY }
    )
    const fires = prepared.filter((fire): fire is Fire => fire !== undefined)
    const chunks: Array<Array<Fire>> = []
    for (let i = 0; i < fires.length; i += FIRES_PER_TRANSACTION) chunks.push(fires.slice(i, i + FIRES_PER_TRANSACTION))
    const fired = yield* Effect.forEach(
      chunks,
      (chunk) =>
        store.fireMany(chunk).pipe(
          Effect.tap((results) =>
            Effect.forEach(chunk, (fire, i) =>
              fire.error !== undefined && Option.isSome(results[i]!)
                ? Effect.logWarning(`Schedule ${fire.id} fired nothing at ${new Date(fire.tick).toISOString()}: ${fire.error}`)
                : Effect.void, { discard: true })
          ),
          Effect.map((results) => results.filter(Option.isSome).length),
          Effect.catchDefect((defect) =>
            Effect.as(Effect.logWarning(`Scheduler: firing ${chunk.length} schedules failed: ${postgresReason(defect)}`), 0)
          )
        ),
      { concurrency: 4 }
    )
    return { due: due.length, fired: fired.reduce((a, b) => a + b, 0) }
  })

/** The shortest sleep between scans that fired nothing (another scheduler holding the due rows, a failing database). */
const MIN_SLEEP_MS = 10

/** The scheduler as a layer (runs for the life of the layer); `catchUp` overrides the configuration. */
export const layerWith = (options: { readonly catchUp?: Duration.Duration } = {}) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const config = yield* QueueConfig
    const catchUpMs = Duration.toMillis(options.catchUp ?? (yield* CatchUp))
    const pollMs = Math.max(1, Duration.toMillis(config.pollInterval))
    yield* Effect.gen(function*() {
      while (true) {
        const { fired } = yield* scan(catchUpMs).pipe(
          Effect.catchDefect((defect) =>
            Effect.as(Effect.logWarning(`Scheduler: reading due schedules failed: ${postgresReason(defect)}`), { due: 0, fired: 0 })
          )
        )
        const due = yield* Schedules.use((store) => store.nextDue).pipe(Effect.catchDefect(() => Effect.succeed(Option.none<number>())))
        const now = yield* Clock.currentTimeMillis
        const wait = Option.match(due, { onNone: () => pollMs, onSome: (at) => Math.min(pollMs, at - now) })
        // More due (a full batch, a caught-up tick whose successor is due too): at once, unless nothing fired.
        if (wait <= 0 && fired > 0) continue
        yield* Effect.sleep(Math.max(fired > 0 ? 1 : MIN_SLEEP_MS, wait))
      }
    }).pipe(Effect.forkScoped)
    yield* Effect.logInfo(`Scheduler started (catch-up window ${Duration.format(Duration.millis(catchUpMs))})`)
  }))

export const layer = layerWith()
