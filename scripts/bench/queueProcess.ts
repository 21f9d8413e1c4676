/**
 * The queue benchmarks' process handling, written once: a queue process (API, with or without the
 * worker) on a database, its health, its stop, a bounded wait, and CPU time from /proc.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import { fileURLToPath } from "node:url"

export const TOKEN = "bench-token"

const entry = fileURLToPath(new URL("../../packages/queue/src/main.ts", import.meta.url))

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Polls `condition` every 10 ms; throws naming `what` after `timeoutMs`. */
export const waitUntil = async (condition: () => boolean | Promise<boolean>, timeoutMs: number, what: string) => {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`)
    await sleep(10)
  }
}

/**
 * The queue processes started and not yet exited: killed when the bench exits, however it ends. A
 * bench that failed half-way (a `socket hang up` after a round) left its worker running, retrying a
 * database that was gone, for good.
 */
const running = new Set<ChildProcess>()
process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL")
})

/** A queue process on `databaseUrl` at 127.0.0.1:`port`; `worker: false` runs the API only; `env` adds settings. */
export const startQueue = (databaseUrl: string, port: number, worker: boolean, env: Record<string, string> = {}): ChildProcess => {
  // BENCH_QUEUE_NODE_ARGS: extra node flags for the queue processes (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
  const child = spawn(process.execPath, [...(process.env.BENCH_QUEUE_NODE_ARGS ?? "").split(" ").filter((arg) => arg !== ""), entry], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      QUEUE_TOKEN: TOKEN,
      QUEUE_ALLOW_PRIVATE: "true",
      QUEUE_PORT: String(port),
      QUEUE_WORKER: String(worker),
      HOST: "127.0.0.1",
      LOG_LEVEL: "warn",
      ...env
    },
    stdio: ["ignore", "inherit", "inherit"]
  })
  running.add(child)
  child.once("exit", () => running.delete(child))
  return child
}

/** SIGTERM, resolved when the process has exited. */
export const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill("SIGTERM")
  })

/** Whether the process at `port` answers `/health`. */
export const healthy = (port: number) => () => fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)

const TICKS = 100 // USER_HZ on Linux

/** The fields of /proc/<pid>/stat after the command name. */
const statFields = (pid: number): Array<string> => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")
}

/** User + system CPU ms of `pid` so far (0 once it has gone). */
export const cpuMs = (pid: number): number => {
  try {
    const fields = statFields(pid)
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS
  } catch {
    return 0
  }
}

/** The children of `parent` (a postmaster's backends and helpers). */
export const childrenOf = (parent: number): Array<number> =>
  fs.readdirSync("/proc").filter((name) => /^\d+$/.test(name)).flatMap((name) => {
    try {
      return Number(statFields(Number(name))[1]) === parent ? [Number(name)] : []
    } catch {
      return []
    }
  })

/**
 * CPU ms of `pid` and all its children so far, the exited ones included (the kernel adds a child's
 * time to its parent's once reaped, which a postmaster does at once): the Postgres CPU of a phase
 * whose backends come and go.
 */
export const treeCpuMs = (pid: number): number => {
  try {
    const fields = statFields(pid)
    const reaped = ((Number(fields[13]) + Number(fields[14])) * 1000) / TICKS
    return cpuMs(pid) + reaped + childrenOf(pid).reduce((sum, child) => sum + cpuMs(child), 0)
  } catch {
    return 0
  }
}
