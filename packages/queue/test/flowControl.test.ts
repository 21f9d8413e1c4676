/**
 * Flow control with real processes (an API process and worker processes on one database, as
 * crash.test.ts spawns them) and a real destination on 127.0.0.1 that counts what it receives:
 * parallelism across three workers, a rate held on the starts the database records, and a SIGKILLed worker's
 * slots coming back when its claims expire.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import type { ChildProcess } from "node:child_process"
import { type Cluster, kill, request, startCluster, startDestination, waitUntil } from "./processes.ts"

let cluster: Cluster
let workers: Array<ChildProcess> = []
let destination: Awaited<ReturnType<typeof startDestination>>

beforeAll(async () => {
  // `/hang`: the first attempt of each `first*` message never answers (the worker holding it dies).
  destination = await startDestination((arrival) =>
    arrival.path === "/hang" && arrival.body.startsWith("first") &&
      destination.arrivals.filter((a) => a.body === arrival.body).length === 1
      ? "hang"
      : { status: 200, delayMs: arrival.path === "/slow" ? 150 : 5 }
  )
  cluster = await startCluster()
  workers = await Promise.all([cluster.startWorker(), cluster.startWorker(), cluster.startWorker()])
}, 120_000)

afterAll(async () => {
  await cluster?.close()
  await destination?.close()
})

const publish = (path: string, body: string, headers: Record<string, string>, query = "") =>
  request(cluster.api, `/v2/publish/${destination.base}${path}${query}`, { method: "POST", body, headers })

const bodiesAt = (path: string) => new Set(destination.arrivals.filter((a) => a.path === path).map((a) => a.body))

describe("flow control across worker processes", () => {
  it("parallelism=3 over 3 workers: never more than 3 in flight at the destination; none retried", async () => {
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) =>
      publish("/slow", `s${i}`, { "Svc-Flow-Control-Key": "slow", "Svc-Flow-Control-Value": "parallelism=3" })
    ))
    for (const answer of answers) assert.strictEqual(answer.status, 201, JSON.stringify(answer.body))
    // Meanwhile the key shows its limit and what waits.
    const seen = await request(cluster.api, "/v2/flow-control/slow")
    assert.strictEqual(seen.status, 200)
    assert.strictEqual(seen.body.parallelism, 3)
    assert.isAtMost(seen.body.inFlight, 3)
    await waitUntil(() => bodiesAt("/slow").size === 30, 60_000, () => `30 deliveries, got ${bodiesAt("/slow").size}`)
    assert.strictEqual(destination.maxInFlight("/slow"), 3)
    // Waiting for a slot is not a retry.
    for (const arrival of destination.arrivals.filter((a) => a.path === "/slow")) {
      assert.strictEqual(arrival.headers["svc-retried"], "0")
    }
    // Three workers took part (each one's claims are its own deliveries): not asserted, the key's row is the limit.
  }, 90_000)

  it("rate=10, period=1s (webhook query form): at most 10 started per second, every message delivered", async () => {
    const started = Date.now()
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) =>
      publish("/rated", `r${i}`, {}, "?svc-flow-control-key=rated&svc-flow-control-value=rate%3D10%2Cperiod%3D1s")
    ))
    for (const answer of answers) assert.strictEqual(answer.status, 201, JSON.stringify(answer.body))
    await waitUntil(() => bodiesAt("/rated").size === 30, 60_000, () => `30 deliveries, got ${bodiesAt("/rated").size}`)
    // The limit governs starts, which the database stamps at each claim (its `delivering` events):
    // no 11 of them within one period, exactly, whatever the machine's load. Arrivals at the
    // destination add the worker's jitter from claim to request, so they are not the measure.
    const events = await request(cluster.api, `/v2/events?url=${encodeURIComponent(`${destination.base}/rated`)}&state=delivering&count=1000`)
    assert.strictEqual(events.status, 200, JSON.stringify(events.body))
    const starts = (events.body.events as Array<{ time: number }>).map((event) => event.time).sort((a, b) => a - b)
    assert.strictEqual(starts.length, 30, "one start per message: waiting for the rate is not a retry")
    // Each start with the tenth before it a whole period apart (1 ms for the driver's rounding of µs).
    const closest = Math.min(...starts.slice(10).map((time, i) => time - starts[i]!))
    console.log(`flow control: starts at ${starts.map((t) => t - starts[0]!).join(",")} ms; closest 11 span ${closest} ms`)
    assert.isAtLeast(closest, 999, "11 starts within one period")
    // 30 at 10 per period: the 21st start at least two periods after the first.
    assert.isAtLeast(starts[20]! - starts[0]!, 1999)
    console.log(`flow control: rate=10/s over ${Date.now() - started} ms from the first publish to the last arrival`)
  }, 90_000)

  it("a SIGKILLed worker's slots come back when its claims expire", async () => {
    // Only one worker runs: it takes both slots of the key with requests that never answer.
    await Promise.all(workers.slice(1).map(kill))
    const first = await Promise.all([0, 1].map((i) =>
      publish("/hang", `first${i}`, {
        "Svc-Flow-Control-Key": "hang",
        "Svc-Flow-Control-Value": "parallelism=2",
        "Svc-Timeout": "5s"
      })
    ))
    for (const answer of first) assert.strictEqual(answer.status, 201)
    await waitUntil(() => destination.inFlight("/hang") === 2, 30_000, () => "both slots taken")
    const later = await Promise.all(Array.from({ length: 4 }, (_, i) =>
      publish("/hang", `later${i}`, { "Svc-Flow-Control-Key": "hang", "Svc-Flow-Control-Value": "parallelism=2", "Svc-Timeout": "2s" })
    ))
    for (const answer of later) assert.strictEqual(answer.status, 201)
    // Both slots held: nothing else of the key starts.
    await new Promise((resolve) => setTimeout(resolve, 500))
    assert.strictEqual(bodiesAt("/hang").size, 2)
    const held = await request(cluster.api, "/v2/flow-control/hang")
    assert.strictEqual(held.body.inFlight, 2)
    assert.strictEqual(held.body.waiting, 4)
    // The worker dies holding both slots (its claims last 5 s + the 1 s margin); a new one takes over.
    await kill(workers[0]!)
    const killedAt = Date.now()
    workers = [await cluster.startWorker()]
    await waitUntil(() => destination.inFlight("/hang") === 0, 10_000, () => "the dead worker's connections closed")
    const all = ["first0", "first1", "later0", "later1", "later2", "later3"]
    await waitUntil(
      () => all.every((b) => bodiesAt("/hang").has(b)) && destination.arrivals.filter((a) => a.path === "/hang").length >= 8,
      60_000,
      () => `every message of the key delivered, got ${[...bodiesAt("/hang")].join(",")}`
    )
    // Nothing of the key started before the dead worker's claims expired; then everything did.
    const claimedAt = Math.max(...destination.arrivals.filter((a) => a.path === "/hang" && a.at <= killedAt).map((a) => a.at))
    const after = destination.arrivals.filter((a) => a.path === "/hang" && a.at > killedAt)
    // Claims last the 5 s timeout + the 1 s margin from their claim (just before their arrival).
    assert.isAtLeast(Math.min(...after.map((a) => a.at)) - claimedAt, 5800)
    assert.isAtMost(destination.maxInFlight("/hang"), 2)
    const drained = await request(cluster.api, "/v2/flow-control/hang")
    await waitUntil(async () => (await request(cluster.api, "/v2/flow-control/hang")).body.waiting === 0, 10_000, () =>
      `the key drained: ${JSON.stringify(drained.body)}`)
  }, 150_000)
})
