/**
 * `GET /ready` over a socket: a dependency that goes away (Postgres behind a TCP proxy that is closed,
 * then opened again) turns the answer into a 503 naming it while `/health` stays 200; a probe that hangs
 * counts as down after PROBE_TIMEOUT; a dependency the service can do without is `degraded` (200); a
 * server without checks is ready; and once SIGTERM has begun the shutdown, a request still reaching the
 * server is told `stopping`.
 */
import { assert, describe, it } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted, Ref } from "effect"
import { HttpServer } from "effect/http"
import { spawn } from "node:child_process"
import * as Net from "node:net"
import * as Path from "node:path"
import { serve } from "../src/Http.ts"
import * as Readiness from "../src/Readiness.ts"
import * as TestDatabase from "../src/testing/TestDatabase.ts"

/** A TCP proxy to `target` that can be closed (every connection cut, new ones refused) and opened again. */
const proxy = (target: { readonly host: string; readonly port: number }) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const sockets = new Set<Net.Socket>()
      let up = true
      const server = Net.createServer((client) => {
        if (!up) return client.destroy()
        const upstream = Net.connect(target.port, target.host)
        for (const socket of [client, upstream]) {
          sockets.add(socket)
          socket.on("close", () => sockets.delete(socket)).on("error", () => {})
        }
        client.pipe(upstream).pipe(client)
      })
      return {
        server,
        listen: () => new Promise<number>((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as Net.AddressInfo).port))),
        setUp: (value: boolean) => {
          up = value
          if (!value) for (const socket of sockets) socket.destroy()
        }
      }
    }),
    ({ server }) => Effect.sync(() => server.close())
  )

/** Starts `server` for the test's scope and gives its base URL. */
const started = <E>(server: Layer.Layer<HttpServer.HttpServer, E>) =>
  Effect.map(Layer.build(server), (context) => {
    const { address } = Context.get(context, HttpServer.HttpServer)
    return `http://127.0.0.1:${address._tag === "UnixPathAddress" ? 0 : address.port}`
  })

const get = (url: string, init?: RequestInit) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    const text = await response.text()
    return { status: response.status, headers: response.headers, body: text === "" ? undefined : JSON.parse(text) }
  })

describe("GET /ready over a socket", () => {
  it.live("the database going away is a 503 naming it, /health staying 200; back, it is ready again", () =>
    Effect.gen(function*() {
      const url = new URL(Redacted.value(yield* TestDatabase.freshDatabase()))
      const gate = yield* proxy({ host: url.hostname, port: Number(url.port) })
      url.port = String(yield* Effect.promise(gate.listen))
      const server = serve(Readiness.route(Effect.all([Readiness.database])), { name: "test", port: 0, host: "127.0.0.1" }).pipe(
        Layer.provide(PgClient.layer({ url: Redacted.make(url.href), maxConnections: 2 }))
      )
      const base = yield* started(server)

      const ready = yield* get(`${base}/ready`)
      assert.strictEqual(ready.status, 200)
      assert.deepStrictEqual(ready.body, { status: "ready", checks: { database: "up" } })

      gate.setUp(false)
      const down = yield* get(`${base}/ready`)
      assert.strictEqual(down.status, 503)
      assert.strictEqual(down.headers.get("retry-after"), "5")
      assert.deepStrictEqual(down.body, {
        code: "service_unavailable",
        message: "Not ready: database unavailable",
        status: "unavailable",
        checks: { database: "down" }
      })
      const health = yield* get(`${base}/health`)
      assert.strictEqual(health.status, 200)
      assert.deepStrictEqual(health.body, { status: "ok" })

      gate.setUp(true)
      // the pool opens a new connection on the next use
      const back = yield* get(`${base}/ready`).pipe(
        Effect.repeat({ until: (answer) => answer.status === 200, times: 20 }),
        Effect.timeout("30 seconds")
      )
      assert.deepStrictEqual(back.body, { status: "ready", checks: { database: "up" } })
    }).pipe(Effect.scoped), { timeout: 60_000 })

  it.live("a probe that hangs is down after PROBE_TIMEOUT; a check the service can do without is degraded, not a 503", () =>
    Effect.gen(function*() {
      const storageUp = yield* Ref.make(true)
      const checks: ReadonlyArray<Readiness.Check> = [
        { name: "database", probe: Effect.void },
        {
          name: "objectStorage",
          required: false,
          probe: Effect.flatMap(Ref.get(storageUp), (up) => up ? Effect.void : Effect.fail(new Error("refused")))
        }
      ]
      const base = yield* started(serve(Readiness.route(Effect.succeed(checks)), { name: "test", port: 0, host: "127.0.0.1" }))
      assert.deepStrictEqual((yield* get(`${base}/ready`)).body, { status: "ready", checks: { database: "up", objectStorage: "up" } })
      yield* Ref.set(storageUp, false)
      const degraded = yield* get(`${base}/ready`)
      assert.strictEqual(degraded.status, 200)
      assert.deepStrictEqual(degraded.body, { status: "degraded", checks: { database: "up", objectStorage: "down" } })

      const hanging = yield* started(
        serve(Readiness.route(Effect.succeed([{ name: "database", probe: Effect.never }])), { name: "test", port: 0, host: "127.0.0.1" })
      )
      const startedAt = Date.now()
      const slow = yield* get(`${hanging}/ready`)
      assert.strictEqual(slow.status, 503)
      assert.deepStrictEqual(slow.body.checks, { database: "down" })
      // bounded by the probe timeout (3 s), not by the probe
      assert.isBelow(Date.now() - startedAt, 20_000)
    }).pipe(Effect.scoped), { timeout: 60_000 })

  it.live("a server without checks is ready (HEAD too); other methods are 405", () =>
    Effect.gen(function*() {
      const base = yield* started(serve(Layer.empty, { name: "test", port: 0, host: "127.0.0.1" }))
      const ready = yield* get(`${base}/ready`)
      assert.strictEqual(ready.status, 200)
      assert.deepStrictEqual(ready.body, { status: "ready", checks: {} })
      assert.strictEqual((yield* get(`${base}/ready`, { method: "HEAD" })).status, 200)
      const deleted = yield* get(`${base}/ready`, { method: "DELETE" })
      assert.strictEqual(deleted.status, 405)
      assert.strictEqual(deleted.headers.get("allow"), "GET, HEAD, OPTIONS")
    }).pipe(Effect.scoped), { timeout: 30_000 })
})

// -----------------------------------------------------------------------------
// During shutdown (a real process: the slow server of Http.test.ts)
// -----------------------------------------------------------------------------

const node = Path.resolve(import.meta.dirname, "../../../node_modules/.bin/node")
const fixture = Path.resolve(import.meta.dirname, "fixtures/slow-server.ts")

describe("GET /ready during shutdown", () => {
  it.live("a request reaching the server after SIGTERM is answered 503 stopping; new connections are refused", () =>
    Effect.gen(function*() {
      const child = spawn(node, [fixture], { env: { ...process.env, SHUTDOWN_TIMEOUT: "20 seconds" }, stdio: ["ignore", "pipe", "pipe"] })
      yield* Effect.addFinalizer(() => Effect.sync(() => child.kill("SIGKILL")))
      let out = ""
      const waiters: Array<() => void> = []
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        out += chunk
        for (const waiter of waiters) waiter()
      })
      const printed = (text: string) =>
        new Promise<void>((resolve, reject) => {
          const look = () => out.includes(text) && resolve()
          waiters.push(look)
          child.once("exit", (code) => reject(new Error(`server exited (${code}):\n${out}`)))
          look()
        })
      const exited = new Promise<number | null>((resolve) => child.once("exit", resolve))
      yield* Effect.promise(() => printed("PORT="))
      const port = Number(/PORT=(\d+)/.exec(out)![1])

      // a probe's connection already open, its request begun (so not idle: shutdown does not close it)
      const probe = Net.connect(port, "127.0.0.1")
      let answer = ""
      probe.setEncoding("utf8").on("data", (chunk: string) => (answer += chunk))
      const answered = new Promise<void>((resolve) => probe.once("end", resolve).once("close", resolve))
      yield* Effect.promise(() => new Promise<void>((resolve) => probe.once("connect", resolve)))
      probe.write("GET /ready HTTP/1.1\r\nHost: localhost\r\n")

      // work in flight keeps the server draining
      const slow = fetch(`http://127.0.0.1:${port}/slow?ms=4000`).then((response) => response.status, String)
      yield* Effect.promise(() => printed("STARTED 4000"))
      child.kill("SIGTERM")
      const refused = yield* Effect.promise(() =>
        (async () => {
          for (let attempt = 0; attempt < 100; attempt++) {
            const connected = await new Promise<boolean>((resolve) => {
              const socket = Net.connect(port, "127.0.0.1")
              socket.once("connect", () => {
                socket.destroy()
                resolve(true)
              }).once("error", () => resolve(false))
            })
            if (!connected) return true
            await new Promise((resolve) => setTimeout(resolve, 50))
          }
          return false
        })()
      )
      assert.isTrue(refused, "the listener closes on SIGTERM")
      probe.write("\r\n")
      yield* Effect.promise(() => answered)
      assert.match(answer, /^HTTP\/1\.1 503 /)
      assert.match(answer, /connection: close/i)
      const body = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4))
      assert.deepStrictEqual(body, { code: "service_unavailable", message: "The server is shutting down", status: "stopping" })
      assert.strictEqual(yield* Effect.promise(() => slow), 200)
      assert.strictEqual(yield* Effect.promise(() => exited), 0)
    }).pipe(Effect.scoped), { timeout: 60_000 })
})
