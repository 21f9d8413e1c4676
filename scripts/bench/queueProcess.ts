/**
 * The queue benchmarks' process handling, written once: a queue process (API, with or without the
 * worker) on a database, its health, its stop, and a bounded wait.
 */
import { type ChildProcess, spawn } from "node:child_process"
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

/** A queue process on `databaseUrl` at 127.0.0.1:`port`; `worker: false` runs the API only; `env` adds settings. */
export const startQueue = (databaseUrl: string, port: number, worker: boolean, env: Record<string, string> = {}): ChildProcess =>
  // BENCH_QUEUE_NODE_ARGS: extra node flags for the queue processes (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
  spawn(process.execPath, [...(process.env.BENCH_QUEUE_NODE_ARGS ?? "").split(" ").filter((arg) => arg !== ""), entry], {
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

/** SIGTERM, resolved when the process has exited. */
export const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill("SIGTERM")
  })

/** Whether the process at `port` answers `/health`. */
export const healthy = (port: number) => () => fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)
