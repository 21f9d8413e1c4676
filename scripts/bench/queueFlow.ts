/**
 * The flow-control and FIFO section of `npm run bench:queue` (issue 17), on svc only. Each scenario
 * gets its own database: BENCH_FLOW_MESSAGES (default 20,000) messages are published (64 concurrent
 * publishers, to an API-only process) with no worker running, then one worker process (the defaults:
 * concurrency 200, batch 200) drains them to a local destination that answers at once.
 *
 * - delivery rate without flow control vs with 100 flow-control keys at parallelism 5 (message i
 *   gets key `k<i % 100>`): the ratio is the cost of enforcing the limits (target >= 0.8); the limits
 *   (500 in flight) do not bind a worker of concurrency 200. The two alternate BENCH_FLOW_ROUNDS
 *   (default 3) times, each round printed with the worker's and Postgres' CPU during the drain
 *   (Postgres: embedded cluster only), and the ratio of the mean rates closes the section: on a
 *   2-core machine one drain of a few seconds moves by 20 % from run to run.
 * - FIFO throughput: BENCH_FIFO_MESSAGES (default 2,000) messages enqueued to one queue of
 *   parallelism 1, then 10.
 */
import * as Http from "node:http"
import type * as Net from "node:net"
import { cpuMs, healthy, sleep, startQueue, stop, TOKEN, treeCpuMs, waitUntil } from "./queueProcess.ts"

const N = Number(process.env.BENCH_FLOW_MESSAGES ?? 20_000)
const FIFO_N = Number(process.env.BENCH_FIFO_MESSAGES ?? 2_000)
const ROUNDS = Math.max(1, Number(process.env.BENCH_FLOW_ROUNDS ?? 3))
const PUBLISHERS = 64

interface Drained {
  /** Deliveries per second, first to last. */
  readonly rate: number
  readonly workerCpuMs: number
  /** Undefined without the postmaster's pid (DATABASE_URL). */
  readonly postgresCpuMs: number | undefined
}

/**
 * Publishes `count` messages (`route(i)` names the path and headers of message i) to an API-only
 * process, then drains them with one worker: deliveries per second from the first to the last, and
 * the CPU the worker and Postgres spent on the drain.
 */
const drain = async (
  databaseUrl: string,
  postmaster: number | undefined,
  count: number,
  route: (i: number, sink: string) => { readonly path: string; readonly headers: Record<string, string> },
  before: (base: string) => Promise<unknown> = async () => {}
): Promise<Drained> => {
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
  const postgresBefore = postmaster === undefined ? 0 : treeCpuMs(postmaster)
  const worker = startQueue(databaseUrl, port + 1, true)
  await waitUntil(() => seen.size >= count, 900_000, `${count} deliveries`)
  const workerCpuMs = cpuMs(worker.pid!)
  await stop(worker)
  await sleep(200) // the worker's backends exit and are reaped
  const postgresCpuMs = postmaster === undefined ? undefined : treeCpuMs(postmaster) - postgresBefore
  server.closeAllConnections()
  server.close()
  const rate = count / (Math.max(1, last - first) / 1000)
  seen = new Set()
  return { rate, workerCpuMs, postgresCpuMs }
}

const describe = ({ postgresCpuMs, rate, workerCpuMs }: Drained) =>
  `${rate.toFixed(0)} msg/s (CPU: worker ${(workerCpuMs / 1000).toFixed(2)} s${
    postgresCpuMs === undefined ? "" : `, Postgres ${(postgresCpuMs / 1000).toFixed(2)} s`
  })`

const mean = (values: ReadonlyArray<number>) => values.reduce((a, b) => a + b, 0) / values.length

/**
 * Runs the section; `freshDatabase` creates an empty database and answers its URL; `postmaster`
 * (the embedded cluster's pid) adds Postgres' CPU to each drain.
 */
export const benchFlow = async (postmaster: number | undefined, freshDatabase: () => Promise<string>) => {
  console.log(`bench:queue flow control and FIFO: ${N} messages per flow-control run, ${ROUNDS} rounds, ${FIFO_N} per FIFO run`)
  const plain: Array<Drained> = []
  const keyed: Array<Drained> = []
  for (let round = 1; round <= ROUNDS; round++) {
    plain.push(await drain(await freshDatabase(), postmaster, N, (_, sink) => ({ path: `/v2/publish/${sink}`, headers: {} })))
    keyed.push(
      await drain(await freshDatabase(), postmaster, N, (i, sink) => ({
        path: `/v2/publish/${sink}`,
        headers: { "Svc-Flow-Control-Key": `k${i % 100}`, "Svc-Flow-Control-Value": "parallelism=5" }
      }))
    )
    console.log(`flow control round ${round}: without ${describe(plain.at(-1)!)}, with 100 keys at parallelism 5 ${describe(keyed.at(-1)!)}`)
  }
  const ratios = keyed.map((k, i) => k.rate / plain[i]!.rate)
  console.log(
    `flow control: drain ${mean(plain.map((d) => d.rate)).toFixed(0)} msg/s without, ${
      mean(keyed.map((d) => d.rate)).toFixed(0)
    } msg/s with 100 keys at parallelism 5 (means of ${ROUNDS} rounds): ratio ${
      (mean(keyed.map((d) => d.rate)) / mean(plain.map((d) => d.rate))).toFixed(2)
    } (target >= 0.8; rounds ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)})`
  )
  for (const parallelism of [1, 10]) {
    const { rate } = await drain(await freshDatabase(),
      postmaster,
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
