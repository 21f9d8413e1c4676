/**
 * The `svc` command as an operator runs it: real processes, a real embedded Postgres in a
 * temporary folder, signals.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as path from "node:path"
import { acceptsConnections, freePort } from "@svc/platform"
import { tempDir } from "@svc/platform/testing"

const bin = new URL("../src/bin.ts", import.meta.url).pathname

interface Run {
  readonly child: ChildProcess
  readonly output: () => string
  readonly exited: Promise<number | null>
}

const svc = (args: ReadonlyArray<string>, env: Record<string, string>): Run => {
  let output = ""
  const child = spawn(process.execPath, [bin, ...args], {
    env: { ...process.env, ...env, HOST: "127.0.0.1" },
    stdio: ["ignore", "pipe", "pipe"]
  })
  child.stdout!.on("data", (chunk) => output += chunk)
  child.stderr!.on("data", (chunk) => output += chunk)
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  return { child, output: () => output, exited }
}

const finished = (run: Run) => Effect.promise(() => run.exited)

const waitForHealth = (port: number) =>
  Effect.tryPromise(() => fetch(`http://127.0.0.1:${port}/health`).then((response) => response.json())).pipe(
    Effect.retry({ schedule: Schedule.spaced("200 millis"), times: 150 })
  )

describe("svc", () => {
  it.live("--help lists the commands", () =>
    Effect.gen(function*() {
      const run = svc(["--help"], {})
      assert.strictEqual(yield* finished(run), 0)
      assert.include(run.output(), "start")
      assert.include(run.output(), "migrate")
    }))

  it.live("start all: comes up with /health, stops cleanly on Ctrl-C, and finds its data on the next start", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("svc-cli-")
      const port = yield* freePort()
      const env = { EMBEDDED_POSTGRES_DIR: path.join(dir, "postgres"), SVC_PORT: String(port) }

      const first = svc(["start", "all"], env)
      assert.deepStrictEqual(yield* waitForHealth(port), { status: "ok" })
      const services = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/services`).then((r) => r.json()))
      assert.property(services, "services")
      const pgPort = Number(/listening on 127\.0\.0\.1:(\d+)/.exec(first.output())?.[1])
      assert.isAbove(pgPort, 0)

      const stoppedAt = Date.now()
      first.child.kill("SIGINT")
      assert.strictEqual(yield* finished(first), 0)
      assert.isBelow(Date.now() - stoppedAt, 10_000, "Ctrl-C stops within seconds")
      assert.isFalse(yield* acceptsConnections(port), "the HTTP server is gone")
      assert.isFalse(yield* acceptsConnections(pgPort), "the embedded Postgres is stopped with the suite")

      const second = svc(["start", "all"], env)
      assert.deepStrictEqual(yield* waitForHealth(port), { status: "ok" })
      second.child.kill("SIGTERM")
      assert.strictEqual(yield* finished(second), 0)
      assert.notInclude(second.output(), "Initialising", "the second start reuses the data directory")
    }), { timeout: 120_000 })

  it.live("migrate: runs against the embedded database and reports per schema", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("svc-cli-")
      const run = svc(["migrate"], { EMBEDDED_POSTGRES_DIR: path.join(dir, "postgres") })
      assert.strictEqual(yield* finished(run), 0, run.output())
      assert.match(run.output(), /Nothing to migrate|: (applied|up to date)/)
    }), { timeout: 60_000 })

  it.live("an unknown or unlanded service and bad configuration are one clear line and exit 1", () =>
    Effect.gen(function*() {
      const unknown = svc(["start", "nope"], {})
      assert.strictEqual(yield* finished(unknown), 1)
      assert.include(unknown.output(), `Invalid value for argument <service>: "nope"`)

      const badLevel = svc(["migrate"], { LOG_LEVEL: "loud" })
      assert.strictEqual(yield* finished(badLevel), 1)
      assert.include(badLevel.output(), "svc: invalid configuration")
      assert.include(badLevel.output(), "LOG_LEVEL")
      assert.notInclude(badLevel.output(), "    at ", "no stack trace")
    }), { timeout: 60_000 })
})
