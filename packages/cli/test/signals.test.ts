/**
 * A signal to a command that does not run until stopped (everything but `svc start` and `svc mcp`) is
 * an interruption: one line on stderr and exit 130 (SIGINT) or 143 (SIGTERM), as a shell tells them.
 * They exited 0 with nothing said, so a script went on as if the command had finished. `svc start`'s
 * Ctrl-C stays a normal stop (exit 0: cli.test.ts, smoke.test.ts). A real `svc` process against a
 * queue that accepts the call and never answers.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Http from "node:http"
import type * as Net from "node:net"
import { finished, svc } from "./svcProcess.ts"

/** A server on 127.0.0.1 that takes requests and never answers; resolves `called` at the first. */
const silentQueue = Effect.acquireRelease(
  Effect.promise(async () => {
    let called!: () => void
    const calledOnce = new Promise<void>((resolve) => (called = resolve))
    const server = Http.createServer(() => called())
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    return { url: `http://127.0.0.1:${(server.address() as Net.AddressInfo).port}`, calledOnce, server }
  }),
  ({ server }) =>
    Effect.promise(() => {
      server.closeAllConnections()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    })
)

describe("a signal to a command that had not finished", () => {
  for (const [signal, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
    it.live(`${signal}: "svc: interrupted (${signal}) before the command finished", exit ${code}, nothing on stdout`, () =>
      Effect.gen(function*() {
        const queue = yield* silentQueue
        const run = svc(["queue", "dlq", "list"], { QUEUE_URL: queue.url, QUEUE_TOKEN: "signal-test-token" })
        // the call is on its way: the command is waiting for the answer
        yield* Effect.promise(() => queue.calledOnce).pipe(Effect.timeout("30 seconds"))
        run.child.kill(signal)
        assert.strictEqual(yield* finished(run).pipe(Effect.timeout("30 seconds")), code, run.output())
        assert.strictEqual(run.stderr().trim().split("\n").at(-1), `svc: interrupted (${signal}) before the command finished`)
        assert.strictEqual(run.stdout(), "")
      }).pipe(Effect.scoped), 60_000)
  }
})
