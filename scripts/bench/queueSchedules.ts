/**
 * The schedules section of `npm run bench:queue` (issue 17), on svc only: BENCH_SCHEDULES (default
 * 1,000) schedules `* * * * *` created over HTTP, all due at the same next whole minute, fired by two
 * queue processes (worker and scheduler each, on one database, racing for every tick) and delivered
 * to a local destination that answers at once.
 *
 * Figures for that one tick: fire lateness (the fire's message `createdAt`, the database's clock at
 * the INSERT, minus the tick) p50/p99/max, delivery lateness (arrival at the destination minus the
 * tick) p50/p99, and duplicates (a schedule delivered twice for the tick). It waits for the next
 * whole minute (up to a minute); BENCH_SCHEDULES=0 skips the section.
 */
import * as Http from "node:http"
import type * as Net from "node:net"
import { percentile } from "./support.ts"
import { healthy, sleep, startQueue, stop, TOKEN, waitUntil } from "./queueProcess.ts"

const SCHEDULES = Number(process.env.BENCH_SCHEDULES ?? 1_000)
const CREATORS = 32

const api = (port: number, route: string, init: RequestInit = {}) =>
  fetch(`http://127.0.0.1:${port}${route}`, {
    ...init,
    headers: { authorization: `Bearer ${TOKEN}`, ...(init.headers as Record<string, string> | undefined) }
  })

export const benchSchedules = async (newDatabase: () => Promise<string>) => {
  if (SCHEDULES <= 0) return
  // The destination: the first arrival per schedule (its path), and repeats.
  const arrivals = new Map<string, number>()
  let duplicates = 0
  const server = Http.createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      const id = String(req.headers["svc-schedule-id"])
      if (arrivals.has(id)) duplicates++
      else arrivals.set(id, Date.now())
      res.end("ok")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const sink = `http://127.0.0.1:${(server.address() as Net.AddressInfo).port}/tick`

  const databaseUrl = await newDatabase()
  const port = 19_600 + Math.floor(Math.random() * 300)
  const processes = [startQueue(databaseUrl, port, true)]
  await waitUntil(healthy(port), 60_000, "the queue")
  // The second process only once the first has migrated the database.
  processes.push(startQueue(databaseUrl, port + 1, true))
  await waitUntil(healthy(port + 1), 60_000, "the second queue process")
  try {
    // Created well before the tick: wait for the next minute when less than 20 s are left.
    if (60_000 - (Date.now() % 60_000) < 20_000) await sleep(60_000 - (Date.now() % 60_000) + 200)
    let next = 0
    await Promise.all(Array.from({ length: CREATORS }, async () => {
      while (next < SCHEDULES) {
        const i = next++
        const response = await api(port, `/v2/schedules/${sink}`, {
          method: "POST",
          headers: { "Svc-Cron": "* * * * *", "Svc-Schedule-Id": `s${i}` },
          body: "tick"
        })
        if (response.status !== 201) throw new Error(`creating a schedule answered ${response.status}: ${await response.text()}`)
      }
    }))
    const tick = Math.ceil(Date.now() / 60_000) * 60_000
    console.log(
      `schedules: ${SCHEDULES} created, all due at ${new Date(tick).toISOString()} (in ${((tick - Date.now()) / 1000).toFixed(0)} s), ` +
        "two queue processes"
    )
    await waitUntil(() => arrivals.size >= SCHEDULES, 120_000 + tick - Date.now(), "every schedule's delivery")
    await sleep(2_000) // both schedulers scan again: a duplicate fire would arrive now

    const { schedules } = await (await api(port, "/v2/schedules")).json() as {
      schedules: Array<{ lastFire?: { tick: number; messageIds: Array<string> } }>
    }
    const fired: Array<number> = []
    let next2 = 0
    await Promise.all(Array.from({ length: CREATORS }, async () => {
      while (next2 < schedules.length) {
        const lastFire = schedules[next2++]!.lastFire
        if (lastFire === undefined || lastFire.tick !== tick) continue
        const message = await (await api(port, `/v2/messages/${lastFire.messageIds[0]}`)).json() as { createdAt: number }
        fired.push(message.createdAt - tick)
      }
    }))
    fired.sort((a, b) => a - b)
    const delivered = [...arrivals.values()].map((at) => at - tick).sort((a, b) => a - b)
    console.log(
      `schedules: fire lateness p50 ${percentile(fired, 0.5)} ms p99 ${percentile(fired, 0.99)} ms max ${fired.at(-1)} ms ` +
        `(${fired.length} fires) | delivery lateness p50 ${percentile(delivered, 0.5)} ms p99 ${percentile(delivered, 0.99)} ms | ` +
        `duplicates ${duplicates}`
    )
  } finally {
    await Promise.all(processes.map(stop))
    server.closeAllConnections()
    server.close()
  }
}
