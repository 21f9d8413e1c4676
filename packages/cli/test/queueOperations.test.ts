/**
 * `svc queue events`, `svc queue cancel` and `svc queue dlq retry-all|delete-all` as an operator runs
 * them: a real `svc start queue` (embedded Postgres in a temporary folder, a worker delivering to a
 * closed port on 127.0.0.1), messages published over HTTP, the commands over the queue's RPC.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import { startedQueue, svcRun } from "./svcProcess.ts"

const DEAD = "http://127.0.0.1:9/dead"
const LATER = "http://127.0.0.1:9/later"

describe("svc queue events, cancel, dlq retry-all / delete-all", () => {
  it.live("what happened to a message, cancellation by filter, the DLQ in bulk; bad selections are one line and exit 1", () =>
    Effect.gen(function*() {
      const token = "cli-queue-ops-token"
      const { env, port } = yield* startedQueue(token)
      const publish = (destination: string, headers: Record<string, string>) =>
        Effect.promise(async () => {
          const response = await fetch(`http://127.0.0.1:${port}/v2/publish/${destination}`, {
            method: "POST",
            headers: { authorization: `Bearer ${token}`, ...headers },
            body: "x"
          })
          assert.strictEqual(response.status, 201)
          return ((await response.json()) as { messageId: string }).messageId
        })
      const dlqSize = Effect.map(
        svcRun(["queue", "dlq", "list", "--json"], env),
        (run) => (JSON.parse(run.stdout) as { messages: ReadonlyArray<unknown> }).messages.length
      )
      const untilDlqHolds = (n: number) =>
        dlqSize.pipe(
          Effect.filterOrFail((size) => size === n, (size) => new Error(`DLQ holds ${size}, waiting for ${n}`)),
          Effect.retry({ schedule: Schedule.spaced("250 millis"), times: 160 })
        )

      // Three messages that fail at once (a closed port, no retries), two that wait an hour.
      const dead = yield* Effect.forEach([1, 2, 3], () => publish(DEAD, { "Svc-Retries": "0" }))
      yield* Effect.forEach([1, 2], () => publish(LATER, { "Svc-Delay": "1h" }))
      yield* untilDlqHolds(3)

      const history = yield* svcRun(["queue", "events", "--message", dead[0]!], env)
      assert.strictEqual(history.code, 0, history.output)
      const lines = history.stdout.trim().split("\n")
      // newest first: created, delivering, failed
      assert.deepStrictEqual(lines.map((line) => line.split("  ")[1]), ["failed", "delivering", "created"])
      for (const line of lines) assert.include(line, `  ${dead[0]}  ${DEAD}`)
      assert.match(lines[0]!, /^\d{4}-\d\d-\d\dT[\d:.]+Z  failed  .*error: /)

      const nothing = yield* svcRun(["queue", "cancel"], env)
      assert.strictEqual(nothing.code, 1)
      assert.strictEqual(nothing.output, "svc: name the messages to cancel: ids, a filter flag, or --all for every one (see: svc queue cancel --help)\n")
      const badTime = yield* svcRun(["queue", "events", "--from", "yesterday"], env)
      assert.strictEqual(badTime.code, 1)
      assert.match(badTime.output, /--from "yesterday": expected an ISO 8601 time or Unix milliseconds/)
      // beyond the largest date: named as the flag, not as the API's fromDate
      const tooLate = yield* svcRun(["queue", "events", "--from", "99999999999999999999"], env)
      assert.strictEqual(tooLate.code, 1)
      assert.match(tooLate.output, /--from "99999999999999999999": expected .* \(0 to 8640000000000000\)/)
      // Date.parse reads "-5" as May 2001: a bulk cancel from then matched every message; refused, nothing cancelled
      for (const loose of ["-5", "1 May", "2026/01/01"]) {
        const refused = yield* svcRun(["queue", "cancel", "--from", loose], env)
        assert.strictEqual(refused.code, 1, loose)
        assert.match(refused.output, /expected an ISO 8601 time or Unix milliseconds/)
      }

      const cancelled = yield* svcRun(["queue", "cancel", "--url", LATER], env)
      assert.strictEqual(cancelled.code, 0, cancelled.output)
      assert.strictEqual(cancelled.stdout, "cancelled 2 messages\n")
      assert.strictEqual((yield* svcRun(["queue", "cancel", "--url", LATER], env)).stdout, "cancelled 0 messages\n")
      const cancelEvents = yield* svcRun(["queue", "events", "--state", "cancelled", "--json"], env)
      const page = JSON.parse(cancelEvents.stdout) as { events: ReadonlyArray<{ url: string; state: string }> }
      assert.deepStrictEqual(page.events.map((event) => [event.state, event.url]), [["cancelled", LATER], ["cancelled", LATER]])

      // Retried, they fail again and come back, once each: the command does not retry them again.
      const retried = yield* svcRun(["queue", "dlq", "retry-all", "--url", DEAD], env)
      assert.strictEqual(retried.code, 0, retried.output)
      assert.strictEqual(retried.stdout, "retried 3 DLQ entries\n")
      yield* untilDlqHolds(3)
      const deleted = yield* svcRun(["queue", "dlq", "delete-all", "--all"], env)
      assert.strictEqual(deleted.stdout, "deleted 3 DLQ entries\n")
      assert.strictEqual(yield* dlqSize, 0)
    }), { timeout: 240_000 })
})
