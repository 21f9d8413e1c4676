/**
 * Schedules with real queue processes on one database (test/processes.ts), at real cron ticks:
 *
 * - two worker processes (each also runs the scheduler) race for the first of two chosen whole
 *   minutes, 100 schedules `CRON_TZ=UTC <m1>,<m2> * * * *`: each schedule fires once, one delivery
 *   with `Svc-Schedule-Id`;
 * - both are SIGKILLed before the second minute and two new ones start after it (a restart within
 *   the catch-up window): that tick still fires, once per schedule.
 *
 * The two minutes are chosen once the workers are up, at least {@link LEAD_MS} ahead, and named in
 * the cron: creating the schedules may take any time up to the first tick without moving it (a
 * `* * * * *` schedule created across a minute boundary would fire at that boundary instead). It
 * waits for real minute boundaries, about two and a half minutes, plus the process starts, which
 * take tens of seconds each on a busy 2-core machine; the timeout leaves room for both.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { kill, request, startCluster, startDestination, waitUntil } from "./processes.ts"

const SCHEDULES = 100
/** The least time between choosing the first tick and that tick: room to create the schedules. */
const LEAD_MS = 45_000
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)))

describe("schedules across processes", () => {
  it.live("two schedulers fire each tick once; a tick passed while every scheduler was down fires once after the restart", () =>
    Effect.promise(async () => {
      // Leases long enough that a busy machine does not send a delivery twice (fires are counted by
      // message id anyway).
      const cluster = await startCluster({ QUEUE_DEFAULT_TIMEOUT: "30 seconds", QUEUE_LEASE_MARGIN: "30 seconds" })
      const dest = await startDestination(() => ({ status: 200, delayMs: 0 }))
      try {
        const first = await Promise.all([cluster.startWorker(), cluster.startWorker()])
        const tick1 = Math.ceil((Date.now() + LEAD_MS) / 60_000) * 60_000
        const tick2 = tick1 + 60_000
        const minute = (tick: number) => new Date(tick).getUTCMinutes()
        const cron = `CRON_TZ=UTC ${minute(tick1)},${minute(tick2)} * * * *`
        for (let i = 0; i < SCHEDULES; i += 10) {
          const created = await Promise.all(Array.from({ length: 10 }, (_, j) =>
            request(cluster.api, `/v2/schedules/${dest.base}/tick`, {
              method: "POST",
              headers: { "Svc-Cron": cron, "Svc-Schedule-Id": `s${i + j}` },
              body: String(i + j)
            })
          ))
          for (const answer of created) assert.strictEqual(answer.status, 201, JSON.stringify(answer.body))
        }
        assert.isBelow(Date.now(), tick1, "the schedules were all created before their first tick")
        // A fire is a message: its deliveries are at least once (a delivery whose record is late past
        // its lease goes again), so fires are counted as distinct message ids per schedule.
        const deliveries = () => dest.arrivals.filter((a) => a.path === "/tick")
        const fires = () => {
          const perSchedule = new Map<string, Set<string>>()
          for (const arrival of deliveries()) {
            const id = String(arrival.headers["svc-schedule-id"])
            perSchedule.set(id, (perSchedule.get(id) ?? new Set()).add(String(arrival.headers["svc-message-id"])))
          }
          return perSchedule
        }
        const fireCount = () => [...fires().values()].reduce((n, ids) => n + ids.size, 0)
        await waitUntil(() => fireCount() >= SCHEDULES, tick1 - Date.now() + 30_000, () => `${SCHEDULES} fires of the first tick`)
        assert.isAtLeast(Math.min(...deliveries().map((a) => a.at)), tick1 - 50, "not before the tick")

        // Every scheduler down across the next tick, then two new ones (a restart).
        await sleep(tick2 - 5_000 - Date.now())
        await Promise.all(first.map(kill))
        await sleep(tick2 + 3_000 - Date.now())
        assert.strictEqual(fireCount(), SCHEDULES, "nothing fired while every scheduler was down")
        await Promise.all([cluster.startWorker(), cluster.startWorker()])
        await waitUntil(() => fireCount() >= 2 * SCHEDULES, 60_000, () => `${SCHEDULES} fires of the second tick`)
        await sleep(1_000) // both new schedulers scan again (poll 200 ms): a duplicate fire would arrive now

        assert.strictEqual(fires().size, SCHEDULES)
        assert.isTrue([...fires().values()].every((ids) => ids.size === 2), JSON.stringify([...fires()].map(([id, ids]) => [id, ids.size])))
        const { body } = await request(cluster.api, "/v2/schedules")
        assert.isTrue(body.schedules.every((s: any) => s.lastFire.tick === tick2 && s.lastFire.messageIds.length === 1))
        assert.isTrue(body.schedules.every((s: any) => s.nextFireTimes[0] === tick1 + 3_600_000))
      } finally {
        await dest.close()
        await cluster.close()
      }
    }), { timeout: 600_000 })
})
