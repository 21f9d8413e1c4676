/**
 * Schedules without a database: the store contract on the memory store, the cron rules (`Cron.ts`:
 * 5 fields, CRON_TZ, daylight saving, the catch-up rule), the scheduler walked minute by minute
 * with a `TestClock` over the memory stores, and the schedule routes over the memory stores.
 */
import { assert, describe, it } from "@effect/vitest"
import type { OutboundGuard } from "@svc/platform"
import { toWebHandler } from "@svc/platform"
import { Duration, Effect, Layer, Option, Redacted } from "effect"
import type { HttpRouter } from "effect/http"
import { TestClock } from "effect/testing"
import { cronOf, nextTicks, parseCron, tickAfterFire } from "../../src/Cron.ts"
import { Resolver } from "../../src/Destinations.ts"
import { routes } from "../../src/http.ts"
import { QueueConfig } from "../../src/QueueConfig.ts"
import * as ScheduleOperations from "../../src/ScheduleOperations.ts"
import * as Scheduler from "../../src/Scheduler.ts"
import { MemoryTables } from "../../src/store/MemoryTables.ts"
import { Groups } from "../../src/store/Groups.ts"
import { type Tables } from "../../src/store/MemoryTables.ts"
import { Schedules } from "../../src/store/Schedules.ts"
import * as Stores from "../../src/store/Stores.ts"
import { schedulesContract } from "../contracts/Schedules.ts"
import { memoryStores } from "../contracts/StoreTime.ts"

schedulesContract("memory", memoryStores)

const MINUTE = 60_000
const iso = (ms: number) => new Date(ms).toISOString()
const parsed = (text: string) => {
  const result = parseCron(text)
  if ("problem" in result) throw new Error(result.problem)
  return result.cron
}

describe("Cron", () => {
  it("refuses what is not 5 fields, an invalid field, an unknown zone, a pattern that never fires; names the problem", () => {
    const problem = (text: string) => {
      const result = parseCron(text)
      return "problem" in result ? result.problem : undefined
    }
    assert.match(problem("* * * *")!, /expected 5 cron fields .* got 4/)
    assert.match(problem("* * * * * *")!, /expected 5 cron fields .* got 6/)
    assert.match(problem("61 * * * *")!, /invalid cron pattern "61 \* \* \* \*"/)
    assert.match(problem("every minute please")!, /expected 5 cron fields/)
    assert.match(problem("CRON_TZ=Mars/Olympus * * * * *")!, /unknown time zone "Mars\/Olympus"/)
    assert.match(problem("CRON_TZ=Europe/Berlin")!, /zone without a pattern/)
    assert.match(problem("0 0 30 2 *")!, /never fires/)
    assert.match(problem("")!, /empty/)
    assert.match(problem("* ".repeat(150))!, /at most 200 characters/)
    // a field out of range names the value written and the range (croner's own message said "day: 31" for 32)
    assert.match(problem("* * 32 * *")!, /the day-of-month 32 is out of range \(1-31\)$/)
    assert.match(problem("* * * 0 *")!, /the month 0 is out of range \(1-12\)$/)
    assert.match(problem("* 24 * * *")!, /the hour 24 is out of range \(0-23\)$/)
    // a control character is refused (a line break split the fields and was stored), fields are separated by spaces
    assert.strictEqual(problem("0\n0 1 1 *"), "must not contain control characters (found U+000A at position 2): separate the fields with spaces")
    assert.match(problem("CRON_TZ=UTC\t* * * * *")!, /found U\+0009 at position 12/)
    // a value stored before that rule still fires (its white space read as spaces)
    assert.strictEqual(cronOf("0\t0 1 1 *").pattern, "0 0 1 1 *")
    assert.isUndefined(problem("*/5 * * * *"))
    assert.isUndefined(problem("CRON_TZ=America/New_York 0 9 * * 1-5"))
  })

  it("walks UTC by default and the CRON_TZ zone otherwise", () => {
    assert.deepStrictEqual(parsed("0 9 * * *").cron.nextRuns(1, new Date("2026-01-15T00:00:00Z")).map((d) => d.toISOString()), [
      "2026-01-15T09:00:00.000Z"
    ])
    assert.deepStrictEqual(
      parsed("CRON_TZ=America/New_York 0 9 * * *").cron.nextRuns(1, new Date("2026-01-15T00:00:00Z")).map((d) => d.toISOString()),
      ["2026-01-15T14:00:00.000Z"]
    )
  })

  it("spring-forward day (Europe/Berlin, 29 March 2026, 02:00 → 03:00): 02:30 does not exist and fires once, at 03:00 local", () => {
    const cron = parsed("CRON_TZ=Europe/Berlin 30 2 * * *")
    assert.deepStrictEqual(cron.cron.nextRuns(3, new Date("2026-03-28T00:00:00Z")).map((d) => d.toISOString()), [
      "2026-03-28T01:30:00.000Z", // 02:30 CET
      "2026-03-29T01:00:00.000Z", // the gap: 03:00 CEST, once
      "2026-03-30T00:30:00.000Z" //  02:30 CEST
    ])
    // An interval pattern keeps real time through the gap: every 30 minutes of elapsed time.
    const every = parsed("CRON_TZ=Europe/Berlin */30 * * * *")
    assert.deepStrictEqual(every.cron.nextRuns(4, new Date("2026-03-29T00:00:00Z")).map((d) => d.toISOString()), [
      "2026-03-29T00:30:00.000Z",
      "2026-03-29T01:00:00.000Z",
      "2026-03-29T01:30:00.000Z",
      "2026-03-29T02:00:00.000Z"
    ])
  })

  it("fall-back day (Europe/Berlin, 25 October 2026, 03:00 → 02:00): 02:30 happens twice and fires once, at the first", () => {
    const cron = parsed("CRON_TZ=Europe/Berlin 30 2 * * *")
    assert.deepStrictEqual(cron.cron.nextRuns(3, new Date("2026-10-24T00:00:00Z")).map((d) => d.toISOString()), [
      "2026-10-24T00:30:00.000Z", // 02:30 CEST
      "2026-10-25T00:30:00.000Z", // 02:30 CEST, the first of the two; not again at 01:30Z (02:30 CET)
      "2026-10-26T01:30:00.000Z" //  02:30 CET
    ])
  })

  it("fall-back day: a fixed time given as a list or range fires once too (croner fired it twice); a wildcard hour or minute keeps elapsed time", () => {
    const ticks = (text: string, from: string, count: number) =>
      nextTicks(parsed(text), Date.parse(from), count).map((ms) => new Date(ms).toISOString())
    assert.deepStrictEqual(ticks("CRON_TZ=Europe/Berlin 0,30 2 * * *", "2026-10-24T23:00:00Z", 4), [
      "2026-10-25T00:00:00.000Z", // 02:00 CEST
      "2026-10-25T00:30:00.000Z", // 02:30 CEST; not 02:00 / 02:30 CET again
      "2026-10-26T01:00:00.000Z", // 02:00 CET, the next day
      "2026-10-26T01:30:00.000Z"
    ])
    assert.deepStrictEqual(ticks("CRON_TZ=Europe/Berlin 30 1,2 * * *", "2026-10-24T22:00:00Z", 3), [
      "2026-10-24T23:30:00.000Z", // 01:30 CEST
      "2026-10-25T00:30:00.000Z", // 02:30 CEST
      "2026-10-26T00:30:00.000Z" //  01:30 CET, the next day
    ])
    assert.deepStrictEqual(ticks("CRON_TZ=Europe/Berlin 10-11 2 * * *", "2026-10-24T23:00:00Z", 3), [
      "2026-10-25T00:10:00.000Z",
      "2026-10-25T00:11:00.000Z",
      "2026-10-26T01:10:00.000Z"
    ])
    // the scheduler's own step (nextTick, through tickAfterFire) skips it as the fire times shown do
    assert.strictEqual(iso(tickAfterFire(parsed("CRON_TZ=Europe/Berlin 0,30 2 * * *"), Date.parse("2026-10-25T00:30:00Z"), Date.parse("2026-10-25T00:30:01Z"), 10 * MINUTE)!), "2026-10-26T01:00:00.000Z")
    // a wildcard minute is not a fixed time: every minute of both 02:xx hours, on elapsed time
    assert.deepStrictEqual(ticks("CRON_TZ=Europe/Berlin */30 2 * * *", "2026-10-24T23:59:00Z", 4), [
      "2026-10-25T00:00:00.000Z",
      "2026-10-25T00:30:00.000Z",
      "2026-10-25T01:00:00.000Z",
      "2026-10-25T01:30:00.000Z"
    ])
  })

  it("catch-up rule: a tick missed within the window is followed by the next tick; one missed by longer skips to the first tick within the window", () => {
    const cron = parsed("* * * * *")
    const tick = Date.UTC(2026, 0, 1, 12, 0)
    const window = 10 * MINUTE
    // On time, or 5 minutes late (a restart): the next minute, so every missed minute still fires.
    assert.strictEqual(iso(tickAfterFire(cron, tick, tick + 20, window)!), "2026-01-01T12:01:00.000Z")
    assert.strictEqual(iso(tickAfterFire(cron, tick, tick + 5 * MINUTE, window)!), "2026-01-01T12:01:00.000Z")
    // Two hours late: this was the one catch-up fire for every tick older than the window; the next is
    // the first tick within it (13:51, missed by 9.5 minutes), and each later one fires in turn
    const now = tick + 120 * MINUTE + 30_000
    assert.strictEqual(iso(tickAfterFire(cron, tick, now, window)!), "2026-01-01T13:51:00.000Z")
    assert.strictEqual(iso(tickAfterFire(cron, Date.UTC(2026, 0, 1, 13, 51), now, window)!), "2026-01-01T13:52:00.000Z")
    // the sweep's case: a 90 s window, down from 12:01:58 to 12:04:20: 12:02 (the catch-up), then 12:03 and 12:04
    const short = 90_000
    const back = Date.UTC(2026, 0, 1, 12, 4, 20)
    assert.strictEqual(iso(tickAfterFire(cron, Date.UTC(2026, 0, 1, 12, 2), back, short)!), "2026-01-01T12:03:00.000Z")
    assert.strictEqual(iso(tickAfterFire(cron, Date.UTC(2026, 0, 1, 12, 3), back, short)!), "2026-01-01T12:04:00.000Z")
    assert.strictEqual(iso(tickAfterFire(cron, Date.UTC(2026, 0, 1, 12, 4), back, short)!), "2026-01-01T12:05:00.000Z")
    // an hourly schedule two days and 30 s down: one catch-up fire, then the tick 30 s late (within the window)
    const hourly = parsed("0 * * * *")
    assert.strictEqual(iso(tickAfterFire(hourly, tick, tick + 48 * 60 * MINUTE + 30_000, window)!), "2026-01-03T12:00:00.000Z")
  })
})

// -----------------------------------------------------------------------------
// The scheduler, walked with a TestClock
// -----------------------------------------------------------------------------

/** The stores the scheduler and the schedule operations use, with their tables exposed. */
const stores = Layer.mergeAll(Groups.layerMemory, Schedules.layerMemory).pipe(
  Layer.provideMerge(MemoryTables.layer),
  Layer.provideMerge(QueueConfig.layerWith({ allowPrivate: true, pollInterval: Duration.seconds(1) }))
)
/** `effect` with a scheduler running (built when it starts, stopped when it ends: a process's life). */
const running = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(Effect.provide(Scheduler.layerWith({ catchUp: Duration.minutes(10) })))

/** The messages the schedule produced, as the minute of their tick's fire (from their creation time). */
const firedMinutes = Effect.map(MemoryTables, (tables: Tables) =>
  [...tables.messages.values()]
    .filter((message) => message.scheduleId === "every-minute")
    .map((message) => iso(message.createdAt.getTime()))
    .sort())

/** Lets the scheduler's fibers run to their next sleep (the clock does not move). */
const settle = Effect.repeat(Effect.yieldNow, { times: 200 })

const create = (cron: string) =>
  ScheduleOperations.createSchedule({
    destination: "http://127.0.0.1:9/hook",
    headers: { "svc-cron": cron, "svc-schedule-id": "every-minute", "content-type": "text/plain" },
    body: Effect.succeed(new TextEncoder().encode("tick"))
  })

describe("Scheduler (TestClock)", () => {
  // The clock is set before a scheduler starts: a TestClock jump runs every sleep on the way.
  it.effect("fires each minute once, at the minute", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.UTC(2026, 0, 1, 12, 0, 30))
      yield* create("* * * * *")
      const schedule = yield* ScheduleOperations.getSchedule("every-minute")
      assert.deepStrictEqual(schedule.nextFireTimes.slice(0, 2).map(iso), ["2026-01-01T12:01:00.000Z", "2026-01-01T12:02:00.000Z"])

      // Three minutes, walked one second at a time: a fire at each minute, exactly.
      yield* running(Effect.gen(function*() {
        for (let second = 0; second < 180; second++) yield* TestClock.adjust("1 second")
      }))
      assert.deepStrictEqual(yield* firedMinutes, [
        "2026-01-01T12:01:00.000Z",
        "2026-01-01T12:02:00.000Z",
        "2026-01-01T12:03:00.000Z"
      ])
      const last = yield* ScheduleOperations.getSchedule("every-minute")
      assert.strictEqual(last.lastFire?.tick, Date.UTC(2026, 0, 1, 12, 3))
      assert.strictEqual(last.lastFire?.messageIds.length, 1)
      assert.isUndefined(last.lastFire?.error)
    }).pipe(Effect.provide(stores)))

  it.effect("after a restart: ticks missed within the catch-up window each fire once; beyond it one catch-up fire, then on time", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.UTC(2026, 0, 1, 12, 0, 30))
      yield* create("* * * * *")
      // No scheduler for 4.5 minutes; then one starts: 12:01 .. 12:05, each once.
      yield* TestClock.setTime(Date.UTC(2026, 0, 1, 12, 5, 0))
      yield* running(settle)
      assert.deepStrictEqual(yield* firedMinutes, [
        "2026-01-01T12:05:00.000Z",
        "2026-01-01T12:05:00.000Z",
        "2026-01-01T12:05:00.000Z",
        "2026-01-01T12:05:00.000Z",
        "2026-01-01T12:05:00.000Z"
      ])
      const caughtUp = yield* ScheduleOperations.getSchedule("every-minute")
      assert.strictEqual(caughtUp.lastFire?.tick, Date.UTC(2026, 0, 1, 12, 5))

      // No scheduler for two hours: one catch-up fire for the ticks older than the window (12:06 to
      // 13:55), then each tick within it (13:56 to 14:05), then on time.
      yield* TestClock.setTime(Date.UTC(2026, 0, 1, 14, 5, 30))
      yield* running(Effect.gen(function*() {
        yield* settle
        assert.strictEqual((yield* firedMinutes).length, 5 + 1 + 10, "one catch-up fire for the 110 ticks past the window, one each for the 10 within it")
        const ticks = [...(yield* MemoryTables).schedules.fires.get("every-minute")!.keys()].sort((a, b) => a - b).map(iso)
        assert.deepStrictEqual(ticks.slice(5, 8), ["2026-01-01T12:06:00.000Z", "2026-01-01T13:56:00.000Z", "2026-01-01T13:57:00.000Z"])
        assert.strictEqual(ticks.at(-1), "2026-01-01T14:05:00.000Z")
        const schedule = yield* ScheduleOperations.getSchedule("every-minute")
        assert.strictEqual(schedule.lastFire?.tick, Date.UTC(2026, 0, 1, 14, 5))
        assert.strictEqual(iso(schedule.nextFireTimes[0]!), "2026-01-01T14:06:00.000Z")
        yield* TestClock.adjust("30 seconds")
        assert.strictEqual((yield* firedMinutes).at(-1), "2026-01-01T14:06:00.000Z")
        assert.strictEqual((yield* firedMinutes).length, 17)
      }))
    }).pipe(Effect.provide(stores)))

  it.effect("a paused schedule does not fire; resumed, it fires from the next tick after now (no catch-up of the pause)", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.UTC(2026, 0, 1, 12, 0, 30))
      yield* create("* * * * *")
      yield* ScheduleOperations.pauseSchedule("every-minute")
      yield* running(Effect.gen(function*() {
        yield* TestClock.adjust("5 minutes")
        assert.deepStrictEqual(yield* firedMinutes, [])
        const resumed = yield* ScheduleOperations.resumeSchedule("every-minute")
        assert.strictEqual(iso(resumed.nextFireTimes[0]!), "2026-01-01T12:06:00.000Z")
        yield* TestClock.adjust("1 minute")
        assert.deepStrictEqual(yield* firedMinutes, ["2026-01-01T12:06:00.000Z"])
      }))
    }).pipe(Effect.provide(stores)))

  it.effect("a schedule stored with a Svc- name a publish does not read (before publishes refused them) fires as stored, the name dropped", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.UTC(2026, 0, 1, 12, 0, 30))
      yield* (yield* Schedules).upsert({
        id: "every-minute",
        cron: "* * * * *",
        destination: "http://127.0.0.1:9/hook",
        headers: { "svc-retrys": "5", "svc-retries": "2", "content-type": "text/plain" },
        body: new TextEncoder().encode("tick"),
        callerIp: undefined,
        nextTick: Date.UTC(2026, 0, 1, 12, 1)
      })
      yield* running(TestClock.adjust("1 minute"))
      const fired = yield* ScheduleOperations.getSchedule("every-minute")
      assert.isUndefined(fired.lastFire?.error)
      const messages = [...(yield* MemoryTables).messages.values()].filter((message) => message.scheduleId === "every-minute")
      assert.deepStrictEqual(messages.map((message) => message.maxRetries), [2])
    }).pipe(Effect.provide(stores)))

  it.effect("a fire whose request is refused at fire time (the URL group was deleted) records why and carries on", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.UTC(2026, 0, 1, 12, 0, 30))
      const groups = yield* Groups
      yield* groups.upsertEndpoints("orders", [{ url: "http://127.0.0.1:9/a" }, { url: "http://127.0.0.1:9/b" }], 100)
      yield* ScheduleOperations.createSchedule({
        destination: "orders",
        headers: { "svc-cron": "* * * * *", "svc-schedule-id": "group" },
        body: Effect.succeed(new Uint8Array())
      })
      yield* running(Effect.gen(function*() {
        yield* TestClock.adjust("1 minute")
        const first = yield* ScheduleOperations.getSchedule("group")
        assert.strictEqual(first.lastFire?.messageIds.length, 2, "one message per endpoint")
        yield* groups.delete("orders")
        yield* TestClock.adjust("1 minute")
        const second = yield* ScheduleOperations.getSchedule("group")
        assert.deepStrictEqual(second.lastFire?.messageIds, [])
        assert.match(second.lastFire?.error ?? "", /no URL group is named "orders"/)
        assert.strictEqual(iso(second.nextFireTimes[0]!), "2026-01-01T12:03:00.000Z")
      }))
    }).pipe(Effect.provide(stores)))
})

// -----------------------------------------------------------------------------
// The schedule routes over the memory stores (no socket, database or scheduler)
// -----------------------------------------------------------------------------

const TOKEN = "unit-token-0123456789"

/** No DNS: names under example.com resolve to a public address, others do not resolve. */
const resolveName: OutboundGuard.Resolve = async (hostname) => {
  if (/(^|\.)example\.com$/i.test(hostname)) return [{ address: "93.184.215.14", family: 4 }]
  throw Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: "ENOTFOUND" })
}

/** A fresh queue on the memory stores, the private-address guard on, behind a web handler. */
const withRoutes = <A, E>(test: (call: (path: string, init?: RequestInit) => Effect.Effect<{ status: number; body: any }>) => Effect.Effect<A, E>) =>
  Effect.scoped(Effect.gen(function*() {
    const memory = Stores.layerMemory.pipe(
      Layer.provideMerge(QueueConfig.layerWith({ token: Option.some(Redacted.make(TOKEN)), allowPrivate: false })),
      Layer.merge(Layer.succeed(Resolver, resolveName))
    )
    const context = yield* Layer.build(memory)
    const app = routes.pipe(Layer.provideMerge(Layer.succeedContext(context)))
    const { dispose, handler } = toWebHandler(app as Layer.Layer<Layer.Success<typeof app>, never, HttpRouter.HttpRouter>, { name: "queue" })
    yield* Effect.addFinalizer(() => Effect.promise(dispose))
    const call = (path: string, init: RequestInit = {}) =>
      Effect.promise(async () => {
        const headers = new Headers(init.headers)
        headers.set("authorization", `Bearer ${TOKEN}`)
        const response = await handler(new Request(`http://queue.test${path}`, { ...init, headers }))
        const text = await response.text()
        return { status: response.status, body: text === "" ? undefined : JSON.parse(text) }
      })
    return yield* test(call)
  }))

describe("schedule routes (memory)", () => {
  it.live("create, read, pause, resume, delete; a private destination or callback is refused like a publish's, nothing stored", () =>
    withRoutes((call) =>
      Effect.gen(function*() {
        for (const [destination, headers, named] of [
          ["http://127.0.0.1:8080/hook", {}, "destination"],
          ["https://example.com/hook", { "Svc-Callback": "http://169.254.169.254/latest" }, "Svc-Callback"],
          ["https://unknown.invalid/hook", {}, "destination"]
        ] as const) {
          const refused = yield* call(`/v2/schedules/${destination}`, { method: "POST", headers: { "Svc-Cron": "* * * * *", ...headers } })
          assert.strictEqual(refused.status, 400, destination)
          assert.include(refused.body.issues.map((issue: any) => issue.parameter), named)
        }
        // an id of "." or "..": the refusal says why ('.' alone is among the characters it lists)
        for (const id of [".", ".."]) {
          const dotted = yield* call("/v2/schedules/https://example.com/hook", { method: "POST", headers: { "Svc-Cron": "* * * * *", "Svc-Schedule-Id": id } })
          assert.strictEqual(dotted.status, 400)
          assert.include(JSON.stringify(dotted.body.issues), "(not '.' or '..')")
        }
        assert.deepStrictEqual((yield* call("/v2/schedules")).body, { schedules: [] })

        const created = yield* call("/v2/schedules/https%3A%2F%2Fexample.com%2Fhook", {
          method: "POST",
          headers: { "Svc-Cron": "*/15 * * * *", "Svc-Schedule-Id": "quarter", "Svc-Delay": "10s" },
          body: "x"
        })
        assert.strictEqual(created.status, 201)
        assert.deepStrictEqual(created.body, { scheduleId: "quarter" })
        const got = (yield* call("/v2/schedules/quarter")).body
        assert.strictEqual(got.destination, "https://example.com/hook")
        assert.strictEqual(got.settings.delayMs, 10_000)
        assert.isTrue(got.nextFireTimes.every((at: number) => at % (15 * MINUTE) === 0))
        assert.isTrue((yield* call("/v2/schedules/quarter/pause", { method: "POST" })).body.paused)
        assert.isFalse((yield* call("/v2/schedules/quarter/resume", { method: "POST" })).body.paused)
        assert.strictEqual((yield* call("/v2/schedules/quarter", { method: "DELETE" })).status, 204)
        assert.strictEqual((yield* call("/v2/schedules/quarter", { method: "DELETE" })).status, 404)
        assert.strictEqual((yield* call("/v2/schedules/not%20an%20id")).status, 400)
      })
    ))

  it.live("the list comes in pages by id (100 by default, limit 1-100) with a cursor for the next; a bad cursor or limit is a 400 naming it", () =>
    withRoutes((call) =>
      Effect.gen(function*() {
        const ids = Array.from({ length: 103 }, (_, i) => `s-${String(i).padStart(3, "0")}`)
        for (const id of ids) {
          const created = yield* call("/v2/schedules/https%3A%2F%2Fexample.com%2Fhook", {
            method: "POST",
            headers: { "Svc-Cron": "0 * * * *", "Svc-Schedule-Id": id },
            body: id
          })
          assert.strictEqual(created.status, 201)
        }
        const first = (yield* call("/v2/schedules")).body
        assert.deepStrictEqual(first.schedules.map((s: any) => s.scheduleId), ids.slice(0, 100))
        assert.strictEqual(first.cursor, "s-099")
        const last = (yield* call(`/v2/schedules?cursor=${first.cursor}`)).body
        assert.deepStrictEqual(last, { schedules: last.schedules })
        assert.deepStrictEqual(last.schedules.map((s: any) => s.scheduleId), ["s-100", "s-101", "s-102"])
        // A page exactly full is not followed by an empty one.
        assert.deepStrictEqual((yield* call("/v2/schedules?cursor=s-099&limit=3")).body.cursor, undefined)
        assert.deepStrictEqual((yield* call("/v2/schedules?cursor=s-050&limit=2")).body.schedules.map((s: any) => s.scheduleId), ["s-051", "s-052"])

        for (const [query, parameter] of [["cursor=not%20an%20id", "cursor"], ["limit=0", "limit"], ["limit=101", "limit"], ["limit=ten", "limit"]]) {
          const refused = yield* call(`/v2/schedules?${query}`)
          assert.strictEqual(refused.status, 400, query)
          assert.deepStrictEqual(refused.body.issues.map((issue: any) => issue.parameter), [parameter], query)
        }
      })
    ))
})
