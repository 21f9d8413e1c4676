/**
 * The `Schedules` contract, written once: `Schedules.layerMemory` (test/unit/Schedules.test.ts) and
 * `Schedules.layer` on Postgres (test/Schedules.contract.test.ts).
 *
 * Covers: upsert (create, replace keeping the paused state and creation time), get, list, delete;
 * due and nextDue (paused schedules are never due); a tick fires exactly once (a second fire of the
 * same tick, or of a tick that is no longer next, writes nothing); the fire's messages carry the
 * schedule's id; a refused fire records its error; pause and resume.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Layer } from "effect"
import { Effect, Option } from "effect"
import { Messages } from "../../src/store/Messages.ts"
import { type NewSchedule, Schedules } from "../../src/store/Schedules.ts"
import { newMessage } from "./fixtures.ts"

export type SchedulesLayer = Layer.Layer<Schedules | Messages, unknown>

const MINUTE = 60_000
/** A whole minute, far enough in the future that the stores' own clocks never matter. */
const T0 = Date.UTC(2030, 0, 1, 12, 0)

const schedule = (overrides: Partial<NewSchedule> = {}): NewSchedule => ({
  id: "nightly",
  cron: "* * * * *",
  destination: "https://example.com/hook",
  headers: { "svc-retries": "2", "content-type": "text/plain" },
  body: new TextEncoder().encode("tick"),
  callerIp: "203.0.113.7",
  nextTick: T0,
  ...overrides
})

export const schedulesContract = (name: string, layer: SchedulesLayer): void => {
  const test = (title: string, body: Effect.Effect<void, unknown, Schedules | Messages>) =>
    it.live(title, () => body.pipe(Effect.provide(layer)))

  describe(`Schedules contract (${name})`, () => {
    test(
      "upsert creates; get, list and count read it; a replace keeps the paused state and creation time",
      Effect.gen(function*() {
        const schedules = yield* Schedules
        assert.isTrue(Option.isNone(yield* schedules.get("nightly")))
        const created = yield* schedules.upsert(schedule())
        assert.strictEqual(created.id, "nightly")
        assert.strictEqual(created.cron, "* * * * *")
        assert.strictEqual(created.nextTick, T0)
        assert.deepStrictEqual(created.headers, { "svc-retries": "2", "content-type": "text/plain" })
        assert.strictEqual(new TextDecoder().decode(created.body), "tick")
        assert.strictEqual(created.callerIp, "203.0.113.7")
        assert.isFalse(created.paused)
        assert.isNull(created.lastFire)
        yield* schedules.upsert(schedule({ id: "hourly", cron: "0 * * * *" }))
        assert.deepStrictEqual((yield* schedules.list({ after: undefined, limit: 10 })).map((s) => s.id), ["hourly", "nightly"])
        assert.strictEqual(yield* schedules.count, 2)

        yield* schedules.setPaused("nightly", true, undefined)
        const replaced = yield* schedules.upsert(schedule({ cron: "*/5 * * * *", nextTick: T0 + 5 * MINUTE, body: new Uint8Array([1]) }))
        assert.strictEqual(replaced.cron, "*/5 * * * *")
        assert.strictEqual(replaced.nextTick, T0 + 5 * MINUTE)
        assert.deepStrictEqual([...replaced.body], [1])
        assert.isTrue(replaced.paused)
        assert.strictEqual(replaced.createdAt, created.createdAt)
        assert.strictEqual(yield* schedules.count, 2)
      })
    )

    test(
      "list pages by id in byte order (the memory layer's, and COLLATE \"C\" in Postgres): at most limit, after the given id",
      Effect.gen(function*() {
        const schedules = yield* Schedules
        // A locale collation would order these a-b, ab, aB, B, b (case and punctuation second); the
        // test clusters are created in the C locale, so only a database in another one shows the difference.
        const ids = ["b", "aB", "a-b", "B", "ab", "_z"]
        yield* Effect.forEach(ids, (id) => schedules.upsert(schedule({ id })), { discard: true })
        const byBytes = ["B", "_z", "a-b", "aB", "ab", "b"]
        const page = (after: string | undefined, limit: number) =>
          Effect.map(schedules.list({ after, limit }), (rows) => rows.map((row) => row.id))
        assert.deepStrictEqual(yield* page(undefined, 10), byBytes)
        assert.deepStrictEqual(yield* page(undefined, 2), ["B", "_z"])
        assert.deepStrictEqual(yield* page("_z", 2), ["a-b", "aB"])
        assert.deepStrictEqual(yield* page("aB", 10), ["ab", "b"])
        // An id that is not (or no longer) a schedule still marks the place.
        assert.deepStrictEqual(yield* page("a", 2), ["a-b", "aB"])
        assert.deepStrictEqual(yield* page("b", 10), [])
      })
    )

    test(
      "due lists active schedules whose tick has come, earliest first; nextDue is the earliest active tick",
      Effect.gen(function*() {
        const schedules = yield* Schedules
        assert.isTrue(Option.isNone(yield* schedules.nextDue))
        yield* schedules.upsert(schedule({ id: "a", nextTick: T0 + MINUTE }))
        yield* schedules.upsert(schedule({ id: "b", nextTick: T0 }))
        yield* schedules.upsert(schedule({ id: "c", nextTick: T0 - MINUTE }))
        yield* schedules.setPaused("c", true, undefined)
        assert.deepStrictEqual((yield* schedules.due(T0 - 1, 10)).map((s) => s.id), [])
        assert.deepStrictEqual((yield* schedules.due(T0, 10)).map((s) => s.id), ["b"])
        assert.deepStrictEqual((yield* schedules.due(T0 + MINUTE, 10)).map((s) => s.id), ["b", "a"])
        assert.deepStrictEqual((yield* schedules.due(T0 + MINUTE, 1)).map((s) => s.id), ["b"])
        assert.deepStrictEqual(yield* schedules.nextDue, Option.some(T0))
      })
    )

    test(
      "a tick fires once: its messages carry the schedule id; a repeat, a stale tick or a paused schedule writes nothing",
      Effect.gen(function*() {
        const schedules = yield* Schedules
        const messages = yield* Messages
        yield* schedules.upsert(schedule())
        const fire = {
          id: "nightly",
          tick: T0,
          next: T0 + MINUTE,
          now: T0 + 5,
          messages: [{ ...newMessage({ url: "http://127.0.0.1:9/a" }), scheduleId: "nightly" }],
          error: undefined
        }
        const fired = yield* schedules.fire(fire)
        assert.strictEqual(Option.getOrThrow(fired).length, 1)
        // The same tick again (a second scheduler that read the schedule before the first fired).
        assert.isTrue(Option.isNone(yield* schedules.fire(fire)))
        // A tick that is not the schedule's next one.
        assert.isTrue(Option.isNone(yield* schedules.fire({ ...fire, tick: T0 + 2 * MINUTE, next: T0 + 3 * MINUTE })))
        const after = Option.getOrThrow(yield* schedules.get("nightly"))
        assert.strictEqual(after.nextTick, T0 + MINUTE)
        assert.deepStrictEqual(after.lastFire, { tick: T0, firedAt: T0 + 5, messageIds: Option.getOrThrow(fired), error: null })

        const claimed = yield* messages.claim(10)
        assert.deepStrictEqual(claimed.map((m) => [m.id, m.scheduleId]), [[Option.getOrThrow(fired)[0]!, "nightly"]])

        yield* schedules.setPaused("nightly", true, undefined)
        assert.isTrue(Option.isNone(yield* schedules.fire({ ...fire, tick: T0 + MINUTE, next: T0 + 2 * MINUTE })))
        assert.strictEqual((yield* messages.claim(10)).length, 0)
      })
    )

    test(
      "fireMany writes several fires at once, each as fire would: a stale one is skipped, the others fire",
      Effect.gen(function*() {
        const schedules = yield* Schedules
        const messages = yield* Messages
        for (const id of ["a", "b", "c"]) yield* schedules.upsert(schedule({ id }))
        const fire = (id: string, tick: number) => ({
          id,
          tick,
          next: tick + MINUTE,
          now: T0 + 1,
          messages: [{ ...newMessage({ url: `http://127.0.0.1:9/${id}` }), scheduleId: id }],
          error: undefined
        })
        const results = yield* schedules.fireMany([fire("a", T0), fire("b", T0 + MINUTE), fire("c", T0)])
        assert.deepStrictEqual(results.map(Option.isSome), [true, false, true])
        assert.deepStrictEqual((yield* schedules.due(T0, 10)).map((s) => s.id), ["b"])
        const claimed = yield* messages.claim(10)
        assert.deepStrictEqual(claimed.map((m) => m.scheduleId).sort(), ["a", "c"])
        assert.deepStrictEqual(
          claimed.map((m) => m.id).sort(),
          [...Option.getOrThrow(results[0]!), ...Option.getOrThrow(results[2]!)].sort()
        )
        assert.deepStrictEqual(yield* schedules.fireMany([]), [])
      })
    )

    test(
      "a refused fire records its error and publishes nothing; the schedule moves on",
      Effect.gen(function*() {
        const schedules = yield* Schedules
        yield* schedules.upsert(schedule({ destination: "orders" }))
        const fired = yield* schedules.fire({
          id: "nightly",
          tick: T0,
          next: T0 + MINUTE,
          now: T0,
          messages: [],
          error: "no URL group is named \"orders\""
        })
        assert.deepStrictEqual(Option.getOrThrow(fired), [])
        const after = Option.getOrThrow(yield* schedules.get("nightly"))
        assert.strictEqual(after.nextTick, T0 + MINUTE)
        assert.strictEqual(after.lastFire?.error, "no URL group is named \"orders\"")
        assert.deepStrictEqual(after.lastFire?.messageIds, [])
      })
    )

    test(
      "pause and resume (with a new next tick); delete removes the schedule and its fires",
      Effect.gen(function*() {
        const schedules = yield* Schedules
        yield* schedules.upsert(schedule())
        assert.isTrue(Option.getOrThrow(yield* schedules.setPaused("nightly", true, undefined)).paused)
        assert.deepStrictEqual(yield* schedules.due(T0 + MINUTE, 10), [])
        const resumed = Option.getOrThrow(yield* schedules.setPaused("nightly", false, T0 + 10 * MINUTE))
        assert.isFalse(resumed.paused)
        assert.strictEqual(resumed.nextTick, T0 + 10 * MINUTE)
        assert.isTrue(Option.isNone(yield* schedules.setPaused("missing", true, undefined)))

        yield* schedules.fire({ id: "nightly", tick: T0 + 10 * MINUTE, next: T0 + 11 * MINUTE, now: T0, messages: [], error: "x" })
        assert.isTrue(yield* schedules.delete("nightly"))
        assert.isFalse(yield* schedules.delete("nightly"))
        assert.isTrue(Option.isNone(yield* schedules.get("nightly")))
        // Created again under the same id: no history, and its ticks fire.
        yield* schedules.upsert(schedule({ nextTick: T0 + 10 * MINUTE }))
        assert.isNull(Option.getOrThrow(yield* schedules.get("nightly")).lastFire)
        const fired = yield* schedules.fire({ id: "nightly", tick: T0 + 10 * MINUTE, next: T0 + 11 * MINUTE, now: T0, messages: [], error: undefined })
        assert.isTrue(Option.isSome(fired))
      })
    )

    test(
      "a fire whose next tick is none pauses the schedule",
      Effect.gen(function*() {
        const schedules = yield* Schedules
        yield* schedules.upsert(schedule())
        yield* schedules.fire({ id: "nightly", tick: T0, next: undefined, now: T0, messages: [], error: undefined })
        assert.isTrue(Option.getOrThrow(yield* schedules.get("nightly")).paused)
      })
    )
  })
}
