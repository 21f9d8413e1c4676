/**
 * FIFO queues with real processes (an API process and worker processes on one database, as
 * crash.test.ts spawns them) and a real destination on 127.0.0.1: publish order kept one at a time
 * through retries and a move to the DLQ, a paused queue accepting and then delivering in order, and
 * order kept across a SIGKILL of the worker holding the head of the queue.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import type { ChildProcess } from "node:child_process"
import { type Cluster, kill, request, startCluster, startDestination, waitUntil } from "./processes.ts"

let cluster: Cluster
let workers: Array<ChildProcess> = []
let destination: Awaited<ReturnType<typeof startDestination>>

const attemptsOf = (body: string) => destination.arrivals.filter((a) => a.body === body).length

beforeAll(async () => {
  destination = await startDestination((arrival) => {
    // m3 fails twice then succeeds; m5 always fails (its one retry used, it moves to the DLQ).
    if (arrival.body === "m3" && attemptsOf("m3") <= 2) return { status: 500, delayMs: 5 }
    if (arrival.body === "m5") return { status: 500, delayMs: 5 }
    // k2's first attempt never answers: the worker holding it is killed.
    if (arrival.body === "k2" && attemptsOf("k2") === 1) return "hang"
    return { status: 200, delayMs: 20 }
  })
  cluster = await startCluster()
  workers = await Promise.all([cluster.startWorker(), cluster.startWorker()])
}, 120_000)

afterAll(async () => {
  await cluster?.close()
  await destination?.close()
})

const enqueue = (queue: string, path: string, body: string, headers: Record<string, string> = {}) =>
  request(cluster.api, `/v2/enqueue/${queue}/${destination.base}${path}`, { method: "POST", body, headers })

/** Each message's attempts all come after every attempt of the one before it. */
const assertInOrder = (path: string, bodies: ReadonlyArray<string>) => {
  const arrivals = destination.arrivals.filter((a) => a.path === path)
  const sequence = arrivals.map((a) => a.body).filter((body, i, all) => i === 0 || all[i - 1] !== body)
  assert.deepStrictEqual(sequence, bodies)
}

describe("FIFO queues across worker processes", () => {
  it("parallelism 1: publish order, one at a time, through retries and a move to the DLQ", async () => {
    const bodies = Array.from({ length: 8 }, (_, i) => `m${i}`)
    for (const body of bodies) {
      const answer = await enqueue("orders", "/fifo", body, body === "m5" ? { "Svc-Retries": "1" } : {})
      assert.strictEqual(answer.status, 201, JSON.stringify(answer.body))
    }
    await waitUntil(() => destination.arrivals.some((a) => a.body === "m7"), 60_000, () => "m7 delivered")
    assertInOrder("/fifo", bodies)
    assert.strictEqual(attemptsOf("m3"), 3)
    assert.strictEqual(attemptsOf("m5"), 2)
    assert.strictEqual(destination.maxInFlight("/fifo"), 1)
    const queue = await request(cluster.api, "/v2/queues/orders")
    assert.strictEqual(queue.status, 200)
    assert.strictEqual(queue.body.parallelism, 1)
    const dlq = await request(cluster.api, "/v2/dlq")
    assert.deepStrictEqual(dlq.body.messages.map((m: any) => Buffer.from(m.body, "base64").toString()), ["m5"])
  }, 90_000)

  it("a paused queue keeps accepting; resumed, it delivers in order", async () => {
    const created = await request(cluster.api, "/v2/queues", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ queueName: "held", parallelism: 1 })
    })
    assert.strictEqual(created.status, 200, JSON.stringify(created.body))
    assert.strictEqual((await request(cluster.api, "/v2/queues/held/pause", { method: "POST" })).body.paused, true)
    const bodies = ["p0", "p1", "p2"]
    for (const body of bodies) assert.strictEqual((await enqueue("held", "/held", body)).status, 201)
    await new Promise((resolve) => setTimeout(resolve, 600))
    assert.strictEqual(destination.arrivals.filter((a) => a.path === "/held").length, 0)
    const paused = await request(cluster.api, "/v2/queues/held")
    assert.strictEqual(paused.body.waiting, 3)
    await request(cluster.api, "/v2/queues/held/resume", { method: "POST" })
    await waitUntil(() => destination.arrivals.some((a) => a.body === "p2"), 30_000, () => "p2 delivered")
    assertInOrder("/held", bodies)
  }, 60_000)

  it("the worker holding the head is SIGKILLed: the head is delivered again before the next one", async () => {
    await Promise.all(workers.slice(1).map(kill))
    const bodies = ["k0", "k1", "k2", "k3", "k4"]
    for (const body of bodies) assert.strictEqual((await enqueue("crashq", "/crash", body, { "Svc-Timeout": "4s" })).status, 201)
    await waitUntil(() => destination.inFlight("/crash") === 1 && attemptsOf("k2") === 1, 30_000, () => "k2 in flight")
    await kill(workers[0]!)
    workers = [await cluster.startWorker()]
    await waitUntil(() => attemptsOf("k4") >= 1, 60_000, () => "k4 delivered")
    assertInOrder("/crash", bodies)
    assert.strictEqual(attemptsOf("k2"), 2)
    assert.strictEqual(destination.maxInFlight("/crash"), 1)
  }, 120_000)
})
