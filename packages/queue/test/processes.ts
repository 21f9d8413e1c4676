/**
 * Real queue processes for the flow-control and FIFO tests (as crash.test.ts spawns them): an
 * API-only process and worker processes on one fresh database, each SIGKILL-able; plus a
 * destination on 127.0.0.1 that counts requests in flight, and an HTTP helper.
 */
import { spawnablePort, TestDatabase } from "@svc/platform/testing"
import { Effect, Exit, Redacted, Scope } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as Http from "node:http"
import * as Net from "node:net"
import { fileURLToPath } from "node:url"

export const TOKEN = "flow-token"
const entry = fileURLToPath(new URL("../src/main.ts", import.meta.url))

/** Polls `condition` every 25 ms; throws naming `what` after `timeoutMs`. */
export const waitUntil = async (condition: () => boolean | Promise<boolean>, timeoutMs: number, what: () => string) => {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what()}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

export const kill = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill("SIGKILL")
  })

export interface Cluster {
  /** The API process's base URL. */
  readonly api: string
  /** Starts a worker process (healthy when resolved). */
  readonly startWorker: () => Promise<ChildProcess>
  readonly close: () => Promise<void>
}

/**
 * A queue process on `databaseUrl` at 127.0.0.1:`port` (API only unless `worker`), with short
 * timeouts, leases and polls so tests about crashes and limits run in seconds.
 */
export const startQueue = (databaseUrl: string, port: number, worker: boolean, env: Record<string, string> = {}) => {
  const child = spawn(process.execPath, [entry], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      QUEUE_TOKEN: TOKEN,
      QUEUE_ALLOW_PRIVATE: "true",
      QUEUE_PORT: String(port),
      HOST: "127.0.0.1",
      QUEUE_WORKER: String(worker),
      QUEUE_DEFAULT_TIMEOUT: "3 seconds",
      QUEUE_LEASE_MARGIN: "1 second",
      QUEUE_POLL_INTERVAL: "200 millis",
      QUEUE_RETRY_BASE: "200 millis",
      LOG_LEVEL: "warn",
      ...env
    },
    stdio: ["ignore", "ignore", "pipe"]
  })
  child.stderr?.on("data", () => {})
  return child
}

/** A fresh database, an API-only process on it, and worker processes on demand. */
export const startCluster = async (env: Record<string, string> = {}): Promise<Cluster> => {
  const scope = Effect.runSync(Scope.make())
  const url = Redacted.value(await Effect.runPromise(Scope.provide(TestDatabase.freshDatabase(), scope)))
  const children: Array<ChildProcess> = []
  const start = async (worker: boolean) => {
    const port = await Effect.runPromise(spawnablePort())
    const child = startQueue(url, port, worker, env)
    children.push(child)
    await waitUntil(
      () => fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false),
      60_000,
      () => "a queue process"
    )
    return { child, port }
  }
  const api = await start(false)
  return {
    api: `http://127.0.0.1:${api.port}`,
    startWorker: async () => (await start(true)).child,
    close: async () => {
      await Promise.all(children.map(kill))
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  }
}

export interface Arrival {
  readonly path: string
  readonly body: string
  readonly at: number
  readonly headers: Http.IncomingHttpHeaders
}

/**
 * A destination on 127.0.0.1 that counts requests in flight per path (the most at once is
 * `maxInFlight`); `answer` decides each reply (`"hang"`: never answer, until the caller's socket
 * closes).
 */
export const startDestination = async (
  answer: (arrival: Arrival, count: number) => { readonly status: number; readonly delayMs: number } | "hang"
) => {
  const arrivals: Array<Arrival> = []
  const inFlight = new Map<string, number>()
  const maxInFlight = new Map<string, number>()
  const server = Http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const path = (req.url ?? "/").split("?")[0]!
      const arrival = { path, body: Buffer.concat(chunks).toString(), at: Date.now(), headers: req.headers }
      arrivals.push(arrival)
      const now = (inFlight.get(path) ?? 0) + 1
      inFlight.set(path, now)
      maxInFlight.set(path, Math.max(maxInFlight.get(path) ?? 0, now))
      let done = false
      const finish = () => {
        if (done) return
        done = true
        inFlight.set(path, inFlight.get(path)! - 1)
      }
      res.on("close", finish)
      const reply = answer(arrival, arrivals.filter((a) => a.path === path).length)
      if (reply === "hang") return
      setTimeout(() => {
        finish()
        if (!res.destroyed) res.writeHead(reply.status).end("ok")
      }, reply.delayMs)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    base: `http://127.0.0.1:${(server.address() as Net.AddressInfo).port}`,
    arrivals,
    maxInFlight: (path: string) => maxInFlight.get(path) ?? 0,
    inFlight: (path: string) => inFlight.get(path) ?? 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

/** A request to the queue with the token; the status and the JSON body (or text). */
export const request = async (base: string, path: string, init: RequestInit = {}) => {
  const headers = new Headers(init.headers)
  headers.set("authorization", `Bearer ${TOKEN}`)
  const response = await fetch(base + path, { ...init, headers })
  const text = await response.text()
  let body: any = text
  try {
    body = JSON.parse(text)
  } catch {
    // not JSON
  }
  return { status: response.status, body }
}
