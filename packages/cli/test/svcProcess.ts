/**
 * The `svc` command run as a real process, as an operator runs it: its output as it came, its exit,
 * and waiting for the services it starts to answer `/health`.
 */
import { Duration, Effect, Schedule } from "effect"
import { spawnablePort, tempDir } from "@svc/platform/testing"
import { type ChildProcess, spawn } from "node:child_process"
import * as net from "node:net"
import * as path from "node:path"

export const bin = new URL("../src/bin.ts", import.meta.url).pathname

export interface SvcRun {
  readonly child: ChildProcess
  readonly stdout: () => string
  readonly stderr: () => string
  /** stdout and stderr interleaved as they came. */
  readonly output: () => string
  readonly exited: Promise<number | null>
}

/**
 * The environment of a spawned `svc`: the test's own without the suite's settings (a DATABASE_URL or
 * DOCS_API_URL from outside would change what is tested), `HOST=127.0.0.1`, then `env` (where an
 * `undefined` removes the variable).
 */
const childEnv = (env: Record<string, string | undefined>): Record<string, string> => {
  const inherited = Object.entries(process.env).filter(([name]) =>
    !/^(DATABASE_URL|DATABASE_POOL_SIZE|EMBEDDED_POSTGRES_|DOCS_|LISTINGS_|QUEUE_|MCP_|UPLOADS_|SVC_|ADMIN_TOKEN|HOST$)/.test(name)
  )
  const merged: Record<string, string | undefined> = { ...Object.fromEntries(inherited), HOST: "127.0.0.1", ...env }
  return Object.fromEntries(
    Object.entries(merged).filter((entry): entry is [string, string] => entry[1] !== undefined)
  )
}

/** Runs `svc args`. */
export const svc = (args: ReadonlyArray<string>, env: Record<string, string | undefined> = {}): SvcRun => {
  let stdout = ""
  let stderr = ""
  let output = ""
  const child = spawn(process.execPath, [bin, ...args], { env: childEnv(env), stdio: ["ignore", "pipe", "pipe"] })
  child.stdout!.on("data", (chunk) => {
    stdout += chunk
    output += chunk
  })
  child.stderr!.on("data", (chunk) => {
    stderr += chunk
    output += chunk
  })
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  return { child, stdout: () => stdout, stderr: () => stderr, output: () => output, exited }
}

/** The exit code, once the run ends. */
export const finished = (run: SvcRun) => Effect.promise(() => run.exited)

/** Runs `svc args` to its end: exit code and output. */
export const svcRun = (args: ReadonlyArray<string>, env: Record<string, string | undefined> = {}) =>
  Effect.gen(function*() {
    const run = svc(args, env)
    const code = yield* finished(run)
    return { code, output: run.output(), stdout: run.stdout(), stderr: run.stderr() }
  })

/** `svc args` for the life of the scope: a run still going at its end (a failed assertion) is stopped. */
export const started = (args: ReadonlyArray<string>, env: Record<string, string | undefined> = {}) =>
  Effect.acquireRelease(Effect.sync(() => svc(args, env)), (run) =>
    Effect.gen(function*() {
      if (run.child.exitCode !== null || run.child.signalCode !== null) return
      run.child.kill("SIGTERM")
      yield* finished(run).pipe(Effect.timeout("20 seconds"), Effect.ignore)
      if (run.child.exitCode === null) run.child.kill("SIGKILL")
    }))

/**
 * The `/health` answers of every port, once all of them answer within `within` (default 90 s: a busy
 * machine runs node, initdb and migrations). Fails at once, with the process' output, if it exits
 * first: a start-up failure is its own message, not a minute of ECONNREFUSED.
 */
export const healthy = (ports: ReadonlyArray<number>, run: SvcRun, within: Duration.Input = "90 seconds") =>
  Effect.raceFirst(
    Effect.forEach(ports, (port) =>
      Effect.tryPromise(() =>
        fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(5_000) }).then((response) =>
          response.ok ? response.json() : Promise.reject(new Error(`${port}: ${response.status}`))
        )
      ).pipe(Effect.retry({ schedule: Schedule.spaced("250 millis") })), { concurrency: "unbounded" }).pipe(
      Effect.timeoutOrElse({
        duration: within,
        orElse: () =>
          Effect.die(
            new Error(
              `not every port of ${ports.join(", ")} answered /health within ${
                Duration.format(Duration.fromInputUnsafe(within))
              }:\n${run.output()}`
            )
          )
      })
    ),
    finished(run).pipe(
      Effect.flatMap((code) => Effect.die(new Error(`svc exited (${code}) before answering /health:\n${run.output()}`)))
    )
  )

/**
 * `svc start queue` on a fresh embedded Postgres (a temporary folder), for the life of the scope,
 * once it answers /health: its port and the environment `svc queue …` needs to reach it.
 */
export const startedQueue = (token: string) =>
  Effect.gen(function*() {
    const dir = yield* tempDir("svc-cli-queue-")
    // Not freePort(): a port from the ephemeral range can be taken by any outgoing connection
    // (the child's own, to its database) in the seconds before the child binds it.
    const port = yield* spawnablePort()
    const server = yield* started(["start", "queue"], {
      EMBEDDED_POSTGRES_DIR: path.join(dir, "postgres"),
      QUEUE_PORT: String(port),
      QUEUE_TOKEN: token,
      QUEUE_ALLOW_PRIVATE: "true"
    })
    const health = yield* healthy([port], server)
    if (JSON.stringify(health) !== JSON.stringify([{ status: "ok" }])) {
      return yield* Effect.die(new Error(`the queue's /health: ${JSON.stringify(health)}`))
    }
    return { port, env: { QUEUE_URL: `http://127.0.0.1:${port}`, QUEUE_TOKEN: token } }
  })

/** Something else listening on `port` (127.0.0.1) for the scope: a taken port. */
export const occupy = (port: number) =>
  Effect.acquireRelease(
    Effect.callback<net.Server>((resume) => {
      const server = net.createServer((socket) => socket.destroy())
      server.once("error", (error) => resume(Effect.die(error)))
      server.listen(port, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.callback<void>((resume) => {
        server.close(() => resume(Effect.void))
      })
  )
