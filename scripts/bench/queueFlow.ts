/**
 * The flow-control and FIFO section of `npm run bench:queue` (issue 17), on svc only. Each scenario
 * gets its own database: BENCH_FLOW_MESSAGES (default 20,000) messages are published (64 concurrent
 * publishers, to an API-only process) with no worker running, then one worker process (the defaults:
 * concurrency 100, batch 100) drains them to a local destination that answers at once.
 *
 * - delivery rate without flow control vs with 100 flow-control keys at parallelism 5 (message i
 *   gets key `k<i % 100>`): the ratio is the cost of enforcing the limits (target >= 0.8); the limits
 *   (500 in flight) do not bind a worker of concurrency 100.
 * - FIFO throughput: BENCH_FIFO_MESSAGES (default 2,000) messages enqueued to one queue of
 *   parallelism 1, then 10.
 */
import * as Http from "node:http"
import type * as Net from "node:net"
import { healthy, startQueue, stop, TOKEN, waitUntil } from "./queueProcess.ts"

const N = Number(process.env.BENCH_FLOW_MESSAGES ?? 20_000)
const FIFO_N = Number(process.env.BENCH_FIFO_MESSAGES ?? 2_000)
const PUBLISHERS = 64

/**
 * Publishes `count` messages (`route(i)` names the path and headers of message i) to an API-only
 * process, then drains them with one worker: deliveries per second from the first to the last.
 */
const drain = async (
  databaseUrl: string,
  count: number,
  route: (i: number, sink: string) => { readonly path: string; readonly headers: Record<string, string> },
  before: (base: string) => Promise<unknown> = async () => {}
) => {
  let seen = new Set<number>()
  let first = 0
  let last = 0
  const server = Http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const i = Number(Buffer.concat(chunks).toString())
      if (!seen.has(i)) {
        seen.add(i)
        if (first === 0) first = Date.now()
        last = Date.now()
      }
      res.end("ok")
    })
  })
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const sink = `http://127.0.0.1:${(server.address() as Net.AddressInfo).port}/sink`
  const port = 19_500 + Math.floor(Math.random() * 400)
  const api = startQueue(databaseUrl, port, false)
  await waitUntil(healthy(port), 60_000, "the queue")
  await before(`http://127.0.0.1:${port}`)
  const agent = new Http.Agent({ keepAlive: true, maxSockets: PUBLISHERS })
  let next = 0
  await Promise.all(Array.from({ length: PUBLISHERS }, async () => {
    while (next < count) {
      const i = next++
      const { path: target, headers } = route(i, sink)
      await new Promise<void>((resolve, reject) => {
        const req = Http.request(`http://127.0.0.1:${port}${target}`, {
          method: "POST",
          agent,
          headers: { authorization: `Bearer ${TOKEN}`, "content-type": "text/plain", ...headers }
        }, (res) => {
          res.resume()
          res.on("end", () => res.statusCode === 201 ? resolve() : reject(new Error(`publish answered ${res.statusCode}`)))
        })
        req.on("error", reject)
        req.end(String(i))
      })
    }
  }))
  agent.destroy()
  await stop(api)
  const worker = startQueue(databaseUrl, port + 1, true)
  await waitUntil(() => seen.size >= count, 900_000, `${count} deliveries`)
  await stop(worker)
  server.closeAllConnections()
  server.close()
  const rate = count / (Math.max(1, last - first) / 1000)
  seen = new Set()
  return rate
}

/** Runs the section; `freshDatabase` creates an empty database and answers its URL. */
export const benchFlow = async (freshDatabase: () => Promise<string>) => {
  console.log(`bench:queue flow control and FIFO: ${N} messages per flow-control run, ${FIFO_N} per FIFO run`)
  const plain = await drain(await freshDatabase(), N, (_, sink) => ({ path: `/v2/publish/${sink}`, headers: {} }))
  const keyed = await drain(await freshDatabase(), N, (i, sink) => ({
    path: `/v2/publish/${sink}`,
    headers: { "Svc-Flow-Control-Key": `k${i % 100}`, "Svc-Flow-Control-Value": "parallelism=5" }
  }))
  console.log(
    `flow control: drain ${plain.toFixed(0)} msg/s without, ${keyed.toFixed(0)} msg/s with 100 keys at parallelism 5: ratio ${
      (keyed / plain).toFixed(2)
    } (target >= 0.8)`
  )
  for (const parallelism of [1, 10]) {
    const rate = await drain(await freshDatabase(),
      FIFO_N,
      (_, sink) => ({ path: `/v2/enqueue/fifo/${sink}`, headers: {} }),
      (base) =>
        fetch(`${base}/v2/queues`, {
          method: "POST",
          headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
          body: JSON.stringify({ queueName: "fifo", parallelism })
        })
    )
    console.log(`FIFO: parallelism ${parallelism}: ${rate.toFixed(0)} msg/s`)
  }
}
