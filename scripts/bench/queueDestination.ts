/**
 * The destination of the queue benchmarks' live, drain and batch runs: a local HTTP server that
 * answers 200 at once and records each bench message (`{"i", "t"}`) the first time it arrives, with
 * its latency from the publish time `t` it carries.
 */
import * as Http from "node:http"
import type * as Net from "node:net"

/** The destination: records each delivery (first time only) and its latency from the publish time in the body. */
export const destination = async () => {
  let seen = new Set<number>()
  let latencies: Array<number> = []
  let duplicates = 0
  let last = 0
  let first = 0
  const server = Http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const now = Date.now()
      try {
        const { i, t } = JSON.parse(Buffer.concat(chunks).toString()) as { i: number; t: number }
        if (seen.has(i)) duplicates++
        else {
          seen.add(i)
          latencies.push(now - t)
          if (first === 0) first = now
          last = now
        }
      } catch {
        // not a bench message
      }
      res.end("ok")
    })
  })
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as Net.AddressInfo).port}/sink`,
    count: () => seen.size,
    last: () => last,
    first: () => first,
    duplicates: () => duplicates,
    latencies: () => latencies,
    reset: () => {
      seen = new Set()
      latencies = []
      duplicates = 0
      last = 0
      first = 0
    },
    close: () => {
      server.closeAllConnections()
      server.close()
    }
  }
}

export type Destination = Awaited<ReturnType<typeof destination>>

/**
 * pg-boss's side of a delivery in the benches: `data` POSTed as JSON to `url` on `agent` (what a
 * pg-boss work handler does per job); rejects unless the answer is 2xx.
 */
export const postJson = (agent: Http.Agent, url: string) => (data: unknown) =>
  new Promise<void>((resolve, reject) => {
    const req = Http.request(url, { method: "POST", agent, headers: { "content-type": "application/json" } }, (res) => {
      res.resume()
      res.on("end", () => (res.statusCode ?? 500) < 300 ? resolve() : reject(new Error(String(res.statusCode))))
    })
    req.on("error", reject)
    req.end(JSON.stringify(data))
  })
