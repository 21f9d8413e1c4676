/**
 * Schedules on the real stack: a queue on a fresh database with real destinations on 127.0.0.1.
 *
 * - the routes: create (header and query forms), get, list, upsert under a chosen id, pause,
 *   resume, delete; an invalid cron, zone or publish header is a 400 naming it, nothing stored;
 * - a real-time fire: the schedule's next tick moved to one second from now (as the store contracts
 *   move stored times), the running scheduler fires it on time; the delivery carries
 *   `Svc-Schedule-Id`, the callback and the failure callback bodies `scheduleId`;
 * - two schedulers on one database, each with its own connection pool, racing for 200 schedules
 *   four hourly ticks behind: every (schedule, tick) fires exactly once.
 */
import { PgClient } from "@effect/sql-pg"
import { assert, layer } from "@effect/vitest"
import { Database } from "@svc/platform"
import { Duration, Effect, Layer } from "effect"
import * as Scheduler from "../src/Scheduler.ts"
import { Schedules } from "../src/store/Schedules.ts"
import * as Stores from "../src/store/Stores.ts"
import { call, Destination, poll, queueLayer } from "./support.ts"

const json = (buffer: Buffer) => JSON.parse(buffer.toString()) as Record<string, any>

/** POST /v2/schedules/<destination> with the token. */
const schedule = (destination: string, options: { readonly headers?: Record<string, string>; readonly query?: string; readonly body?: string } = {}) =>
  call(`/v2/schedules/${destination}${options.query === undefined ? "" : `?${options.query}`}`, {
    method: "POST",
    body: options.body ?? "tick",
    headers: options.headers ?? {}
  })

/** Moves a schedule's next tick to `ms` from the database's now (the store contracts' way of moving time). */
const dueIn = (scheduleId: string, ms: number) =>
  Effect.flatMap(PgClient.PgClient, (sql) =>
    sql`UPDATE queue.schedules SET next_tick = now() + ${ms}::float8 * interval '1 millisecond' WHERE id = ${scheduleId}`.pipe(
      Effect.orDie
    ))

layer(queueLayer(), { timeout: 120_000, excludeTestServices: true })("schedules", (it) => {
  it.effect("an invalid cron, zone or publish header is a 400 naming it, and nothing is stored", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const url = `${dest.baseUrl}/never`
      const cases: Array<[Record<string, string>, string | undefined, string]> = [
        [{}, undefined, "Svc-Cron"],
        [{ "Svc-Cron": "* * * *" }, undefined, "Svc-Cron"],
        [{ "Svc-Cron": "99 * * * *" }, undefined, "Svc-Cron"],
        [{ "Svc-Cron": "CRON_TZ=Mars/Olympus 0 9 * * *" }, undefined, "Svc-Cron"],
        [{}, "svc-cron=not%20a%20cron", "svc-cron"],
        [{ "Svc-Cron": "* * * * *", "Svc-Retries": "many" }, undefined, "Svc-Retries"],
        [{ "Svc-Cron": "* * * * *", "Svc-Callback": "ftp://example.com/cb" }, undefined, "Svc-Callback"],
        [{ "Svc-Cron": "* * * * *", "Svc-Deduplication-Id": "once" }, undefined, "Svc-Deduplication-Id"],
        [{ "Svc-Cron": "* * * * *", "Svc-Schedule-Id": "no spaces/here" }, undefined, "Svc-Schedule-Id"],
        [{ "Svc-Cron": "* * * * *", "Svc-Forward-Connection": "close" }, undefined, "Svc-Forward-Connection"]
      ]
      for (const [headers, query, named] of cases) {
        const answer = yield* schedule(url, { headers, ...(query === undefined ? {} : { query }) })
        assert.strictEqual(answer.status, 400, JSON.stringify(headers))
        assert.strictEqual(answer.body.code, "invalid_request")
        assert.include(answer.body.issues.map((issue: any) => issue.parameter), named, JSON.stringify(answer.body))
      }
      const zone = yield* schedule(url, { headers: { "Svc-Cron": "CRON_TZ=Mars/Olympus 0 9 * * *" } })
      assert.match(zone.body.message, /unknown time zone "Mars\/Olympus"/)
      // A destination that is neither a URL nor a group: also 400, also nothing stored.
      assert.strictEqual((yield* schedule("no-such-group", { headers: { "Svc-Cron": "* * * * *" } })).status, 400)
      assert.deepStrictEqual((yield* call("/v2/schedules")).body, { schedules: [] })
      // Without the token: 401, nothing stored.
      const anonymous = yield* call(`/v2/schedules/${url}`, { method: "POST", headers: { "Svc-Cron": "* * * * *" }, token: null })
      assert.strictEqual(anonymous.status, 401)
      assert.deepStrictEqual((yield* call("/v2/schedules")).body, { schedules: [] })
    }))

  it.effect("create, get, list, upsert under a chosen id, pause, resume, delete", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      // The schedule's own parameters (svc-*) leave the URL; the others stay in it, as on publish.
      const created = yield* schedule(`${dest.baseUrl}/report?id=7&svc-timeout=5s`, {
        headers: { "Svc-Cron": "CRON_TZ=Europe/Berlin 30 2 * * *", "Svc-Retries": "2", "Svc-Forward-X-Team": "ops", "content-type": "text/plain" }
      })
      assert.strictEqual(created.status, 201)
      const id = created.body.scheduleId as string
      assert.match(id, /^scd_[0-9a-f]{32}$/)
      const got = (yield* call(`/v2/schedules/${id}`)).body
      assert.strictEqual(got.cron, "CRON_TZ=Europe/Berlin 30 2 * * *")
      assert.strictEqual(got.destination, `${dest.baseUrl}/report?id=7`)
      assert.strictEqual(got.body, Buffer.from("tick").toString("base64"))
      assert.deepStrictEqual(
        { ...got.settings },
        { method: "POST", retries: 2, timeoutMs: 5000, delayMs: 0, headers: { "content-type": "text/plain", "x-team": "ops" } }
      )
      // Only the configuration and the content type are stored (no token, no other request header).
      assert.deepStrictEqual(got.header, {
        "svc-retries": "2",
        "svc-forward-x-team": "ops",
        "svc-timeout": "5s",
        "content-type": "text/plain"
      })
      assert.isFalse(got.paused)
      assert.strictEqual(got.nextFireTimes.length, 5)
      for (const at of got.nextFireTimes) {
        const local = new Date(at).toLocaleTimeString("en-GB", { timeZone: "Europe/Berlin", hour12: false })
        assert.include(["02:30:00", "03:00:00"], local)
      }
      assert.isUndefined(got.lastFire)

      // Upsert under a chosen id: created, then replaced (one schedule).
      const chosen = yield* schedule(`${dest.baseUrl}/a`, { headers: { "Svc-Cron": "0 * * * *", "Svc-Schedule-Id": "hourly" } })
      assert.deepStrictEqual(chosen.body, { scheduleId: "hourly" })
      const replaced = yield* schedule(`${dest.baseUrl}/b`, { headers: { "Svc-Cron": "*/5 * * * *" }, query: "svc-schedule-id=hourly" })
      assert.deepStrictEqual(replaced.body, { scheduleId: "hourly" })
      const hourly = (yield* call("/v2/schedules/hourly")).body
      assert.strictEqual(hourly.cron, "*/5 * * * *")
      assert.strictEqual(hourly.destination, `${dest.baseUrl}/b`)
      assert.deepStrictEqual((yield* call("/v2/schedules")).body.schedules.map((s: any) => s.scheduleId).sort(), ["hourly", id].sort())

      const paused = yield* call("/v2/schedules/hourly/pause", { method: "POST" })
      assert.strictEqual(paused.status, 200)
      assert.isTrue(paused.body.paused)
      assert.deepStrictEqual(paused.body.nextFireTimes, [])
      const resumed = yield* call("/v2/schedules/hourly/resume", { method: "POST" })
      assert.isFalse(resumed.body.paused)
      assert.isAbove(resumed.body.nextFireTimes[0], Date.now())

      assert.strictEqual((yield* call("/v2/schedules/hourly", { method: "DELETE" })).status, 204)
      const gone = yield* call("/v2/schedules/hourly")
      assert.strictEqual(gone.status, 404)
      assert.match(gone.body.message, /No schedule with id hourly/)
      assert.strictEqual((yield* call("/v2/schedules/hourly/pause", { method: "POST" })).status, 404)
      assert.strictEqual((yield* call(`/v2/schedules/${id}`, { method: "DELETE" })).status, 204)
    }))

  it.effect("a fire in real time: the delivery carries Svc-Schedule-Id, the callback and the failure callback scheduleId", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      dest.on("/nightly", () => ({ status: 200, body: "done" }))
      dest.on("/broken", () => ({ status: 500, body: "down" }))
      const ok = yield* schedule(`${dest.baseUrl}/nightly`, {
        headers: {
          "Svc-Cron": "* * * * *",
          "Svc-Schedule-Id": "nightly",
          "Svc-Callback": `${dest.baseUrl}/done`,
          "content-type": "application/json"
        },
        body: "{\"report\":true}"
      })
      assert.strictEqual(ok.status, 201)
      const failing = yield* schedule(`${dest.baseUrl}/broken`, {
        headers: { "Svc-Cron": "* * * * *", "Svc-Schedule-Id": "broken", "Svc-Retries": "0", "Svc-Failure-Callback": `${dest.baseUrl}/failed` }
      })
      assert.strictEqual(failing.status, 201)

      // Due one second from now: the running scheduler fires at that time, not before.
      yield* dueIn("nightly", 1000)
      yield* dueIn("broken", 1000)
      const dueAt = Date.now() + 1000
      const [delivery] = yield* dest.waitFor("/nightly", 1)
      assert.isAtLeast(delivery!.at, dueAt - 150)
      assert.isBelow(delivery!.at, dueAt + 2000)
      assert.strictEqual(delivery!.headers["svc-schedule-id"], "nightly")
      assert.strictEqual(delivery!.body.toString(), "{\"report\":true}")
      assert.strictEqual(delivery!.headers["content-type"], "application/json")

      const [callback] = yield* dest.waitFor("/done", 1)
      const callbackBody = json(callback!.body)
      assert.strictEqual(callbackBody.scheduleId, "nightly")
      assert.strictEqual(callbackBody.sourceMessageId, delivery!.headers["svc-message-id"])
      assert.strictEqual(callbackBody.status, 200)
      assert.isUndefined(callback!.headers["svc-schedule-id"], "the callback is the queue's own message")

      const [broken] = yield* dest.waitFor("/broken", 1)
      assert.strictEqual(broken!.headers["svc-schedule-id"], "broken")
      const [failed] = yield* dest.waitFor("/failed", 1)
      const failedBody = json(failed!.body)
      assert.strictEqual(failedBody.scheduleId, "broken")
      assert.strictEqual(failedBody.status, 500)
      assert.isString(failedBody.dlqId)

      // The schedule shows its last fire; the next tick is the next whole minute.
      const shown = (yield* call("/v2/schedules/nightly")).body
      assert.deepStrictEqual(shown.lastFire.messageIds, [delivery!.headers["svc-message-id"]])
      assert.strictEqual(shown.nextFireTimes[0] % 60_000, 0)
      assert.isAbove(shown.nextFireTimes[0], Date.now() - 1000)

      // Paused, a due tick does not fire; resumed, it fires at its next tick only.
      yield* call("/v2/schedules/nightly/pause", { method: "POST" })
      yield* dueIn("nightly", 0)
      const before = dest.requests("/nightly").length
      yield* Effect.sleep("600 millis") // three scheduler polls (200 ms)
      assert.strictEqual(dest.requests("/nightly").length, before)
      const resumed = (yield* call("/v2/schedules/nightly/resume", { method: "POST" })).body
      assert.isAbove(resumed.nextFireTimes[0], Date.now())
      assert.strictEqual(dest.requests("/nightly").length, before)
    }))
})

// -----------------------------------------------------------------------------
// Two schedulers on one database
// -----------------------------------------------------------------------------

/**
 * A scheduler with its own stores and connection pool on the test's database (another process's);
 * a catch-up window of a day, so that ticks hours behind each fire.
 */
const schedulerInstance = () =>
  Layer.fresh(
    Scheduler.layerWith({ catchUp: Duration.days(1) }).pipe(Layer.provide(Stores.layer), Layer.provide(Database.layerPool))
  )

const SCHEDULES = 200

layer(queueLayer({ worker: false }), { timeout: 120_000, excludeTestServices: true })("two schedulers", (it) => {
  it.effect("200 hourly schedules four ticks behind, two schedulers racing: each (schedule, tick) fires exactly once", () =>
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      const schedules = yield* Schedules
      const dest = yield* Destination
      const HOUR = 3_600_000
      // Not within 30 s of a whole hour: the test must not see a fifth tick come due.
      if (HOUR - (Date.now() % HOUR) < 30_000) yield* Effect.sleep(HOUR - (Date.now() % HOUR) + 100)
      const hour = Math.floor(Date.now() / HOUR) * HOUR
      for (let i = 0; i < SCHEDULES; i++) {
        yield* schedules.upsert({
          id: `s${i}`,
          cron: "0 * * * *",
          destination: `${dest.baseUrl}/tick`,
          headers: {},
          body: new Uint8Array(),
          callerIp: undefined,
          // The ticks of three hours ago, two, one and this hour's are due: four each.
          nextTick: hour - 3 * HOUR
        })
      }
      const expected = SCHEDULES * 4
      yield* Effect.gen(function*() {
        yield* poll(
          Effect.map(sql`SELECT count(*)::int4 AS n FROM queue.messages WHERE schedule_id IS NOT NULL`.pipe(Effect.orDie), (rows) =>
            rows[0]!.n as number),
          (n) => n >= expected,
          "60 seconds",
          () => `fewer than ${expected} scheduled messages`
        )
        // Both schedulers scan again (their poll is 200 ms): still one message per (schedule, tick).
        yield* Effect.sleep("500 millis")
      }).pipe(Effect.provide(Layer.merge(schedulerInstance(), schedulerInstance())))

      const perTick = yield* sql<{ schedule_id: string; tick: Date; n: number }>`
        SELECT f.schedule_id, f.tick, (SELECT count(*)::int4 FROM queue.messages m
          WHERE m.schedule_id = f.schedule_id AND m.id::text IN (SELECT jsonb_array_elements_text(f.message_ids))) AS n
        FROM queue.schedule_fires f`.pipe(Effect.orDie)
      assert.strictEqual(perTick.length, expected, "one fire row per (schedule, tick)")
      assert.isTrue(perTick.every((row) => row.n === 1), "one message per fire")
      const messages = yield* sql<{ n: number }>`SELECT count(*)::int4 AS n FROM queue.messages WHERE schedule_id IS NOT NULL`.pipe(Effect.orDie)
      assert.strictEqual(messages[0]!.n, expected, "no duplicates")
      const ticks = yield* sql<{ n: number }>`SELECT count(DISTINCT tick)::int4 AS n FROM queue.schedule_fires`.pipe(Effect.orDie)
      assert.strictEqual(ticks[0]!.n, 4)
      const next = yield* sql<{ n: number }>`
        SELECT count(*)::int4 AS n FROM queue.schedules WHERE next_tick = to_timestamp(${(hour + HOUR) / 1000})`.pipe(Effect.orDie)
      assert.strictEqual(next[0]!.n, SCHEDULES, "every schedule waits for the next hour")
    }))
})
