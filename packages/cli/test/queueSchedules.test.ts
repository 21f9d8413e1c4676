/**
 * `svc queue schedules …` as an operator runs it: a real `svc start queue` (embedded Postgres in a
 * temporary folder), the commands over the queue's RPC, each failure one line and exit 1.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { startedQueue, svcRun } from "./svcProcess.ts"

describe("svc queue schedules", () => {
  it.live("add, list (by pages), get, pause, resume, delete; an invalid cron is one line naming it and exit 1", () =>
    Effect.gen(function*() {
      const { env } = yield* startedQueue("cli-schedules-token")

      const none = yield* svcRun(["queue", "schedules", "list"], env)
      assert.strictEqual(none.code, 0, none.output)
      assert.strictEqual(none.stdout, "No schedules.\n")

      const bad = yield* svcRun(["queue", "schedules", "add", "http://127.0.0.1:9/report", "* * * *"], env)
      assert.strictEqual(bad.code, 1)
      assert.match(bad.output, /^svc: Invalid request: body field "cron": expected 5 cron fields/)
      assert.strictEqual(bad.output.split("\n").filter(Boolean).length, 1)
      // a header the schedule would drop (not Svc-*, not Content-Type) or two in one flag: refused, nothing made
      for (const [line, message] of [
        ["X-Custom: v", /"X-Custom" would not reach the destination: name it Svc-Forward-X-Custom/],
        ["Authorization: Bearer t", /"Authorization" would not reach the destination/],
        ["Svc-Forward-X-A: b\r\nX-Evil: 1", /one header a flag, no line break/]
      ] as const) {
        const refused = yield* svcRun(["queue", "schedules", "add", "http://127.0.0.1:9/report", "0 9 * * *", "--header", line], env)
        assert.strictEqual(refused.code, 1, line)
        assert.match(refused.output, message)
      }
      assert.strictEqual((yield* svcRun(["queue", "schedules", "list"], env)).stdout, "No schedules.\n")

      const added = yield* svcRun([
        "queue",
        "schedules",
        "add",
        "http://127.0.0.1:9/report",
        "CRON_TZ=Europe/Berlin 0 9 * * 1-5",
        "--header",
        "Svc-Retries: 5",
        "--body",
        "{}",
        "--id",
        "weekday-report"
      ], env)
      assert.strictEqual(added.code, 0, added.output)
      assert.match(
        added.stdout,
        /^weekday-report  CRON_TZ=Europe\/Berlin 0 9 \* \* 1-5  http:\/\/127\.0\.0\.1:9\/report  next \d{4}-\d\d-\d\dT0[78]:00:00\.000Z, never fired\n$/
      )
      const list = yield* svcRun(["queue", "schedules", "list"], env)
      assert.strictEqual(list.stdout, added.stdout)
      const second = yield* svcRun(["queue", "schedules", "add", "http://127.0.0.1:9/other", "0 0 * * *", "--id", "nightly"], env)
      assert.strictEqual(second.code, 0, second.output)
      const firstPage = yield* svcRun(["queue", "schedules", "list", "--limit", "1"], env)
      assert.match(firstPage.stdout, /^nightly  0 0 \* \* \*  .*\nMore: repeat with --cursor=nightly\n$/)
      const nextPage = yield* svcRun(["queue", "schedules", "list", "--limit", "1", "--cursor=nightly"], env)
      assert.strictEqual(nextPage.stdout, added.stdout)
      assert.strictEqual((yield* svcRun(["queue", "schedules", "delete", "nightly"], env)).code, 0)
      const got = yield* svcRun(["queue", "schedules", "get", "weekday-report", "--json"], env)
      const schedule = JSON.parse(got.stdout)
      assert.strictEqual(schedule.settings.retries, 5)
      assert.strictEqual(schedule.nextFireTimes.length, 5)
      const text = yield* svcRun(["queue", "schedules", "get", "weekday-report"], env)
      assert.match(text.stdout, /\n  fires \d{4}-[^\n]*\n(  fires [^\n]*\n){4}  header svc-retries: 5\n/)

      const paused = yield* svcRun(["queue", "schedules", "pause", "weekday-report"], env)
      assert.match(paused.stdout, /^weekday-report  .*  paused, never fired\n$/)
      const resumed = yield* svcRun(["queue", "schedules", "resume", "weekday-report"], env)
      assert.match(resumed.stdout, /  next \d{4}-/)
      const deleted = yield* svcRun(["queue", "schedules", "delete", "weekday-report"], env)
      assert.strictEqual(deleted.stdout, "weekday-report: deleted\n")
      const gone = yield* svcRun(["queue", "schedules", "get", "weekday-report"], env)
      assert.strictEqual(gone.code, 1)
      assert.strictEqual(gone.output, "svc: No schedule with id weekday-report\n")
    }), { timeout: 240_000 })
})
