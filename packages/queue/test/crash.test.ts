/**
 * Crash test: 10,000 messages published over HTTP (to an API-only process), delivered by a worker
 * process that is SIGKILLed twice mid-run and restarted. Every message must be delivered at least
 * once; duplicates (deliveries whose outcome was not yet recorded when the worker died) are counted
 * and reported.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawnablePort, TestDatabase } from "@svc/platform/testing"
import { Effect, Fiber, Redacted } from "effect"
import type { ChildProcess } from "node:child_process"
import * as Http from "node:http"
import * as Net from "node:net"
import { PgClient } from "@effect/sql-pg"
import { Reactivity } from "effect/reactivity"
import { kill, startQueue, TOKEN, waitUntil } from "./processes.ts"

const MESSAGES = 10_000
const healthy = (port: number) => () =>
  fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)

describe("crash", () => {
  it.live("10,000 messages, worker SIGKILLed twice: every message delivered at least once", () =>
    Effect.gen(function*() {
      const url = Redacted.value(yield* TestDatabase.freshDatabase())
      const sql = yield* PgClient.make({ url: Redacted.make(url), maxConnections: 1 }).pipe(Effect.provide(Reactivity.layer))

      // The destination: counts deliveries per message body, answers after a short pause so that
      // deliveries are in flight when the worker dies.
      const deliveries = new Map<string, number>()
      let total = 0
      const destination = Http.createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (c: Buffer) => chunks.push(c))
        req.on("end", () => {
          const key = Buffer.concat(chunks).toString()
          deliveries.set(key, (deliveries.get(key) ?? 0) + 1)
          total++
          setTimeout(() => res.end("ok"), 2)
        })
      })
      yield* Effect.acquireRelease(
        Effect.promise(() => new Promise<void>((resolve) => destination.listen(0, "127.0.0.1", resolve))),
        () => Effect.sync(() => {
          destination.closeAllConnections()
          destination.close()
        })
      )
      const destUrl = `http://127.0.0.1:${(destination.address() as Net.AddressInfo).port}/sink`

      const children: Array<ChildProcess> = []
      yield* Effect.addFinalizer(() => Effect.promise(() => Promise.all(children.map(kill))))
      const apiPort = yield* spawnablePort()
      const api = startQueue(url, apiPort, false)
      children.push(api)
      yield* Effect.promise(() => waitUntil(healthy(apiPort), 60_000, () => "the API process"))

      const startWorker = Effect.promise(async () => {
        const port = await Effect.runPromise(spawnablePort())
        const worker = startQueue(url, port, true)
        children.push(worker)
        await waitUntil(healthy(port), 60_000, () => "a worker process")
        return worker
      })
      let worker = yield* startWorker

      // Publish 10,000 messages over HTTP, 32 at a time, while the worker delivers.
      const started = Date.now()
      let published = 0
      const publishing = yield* Effect.forkChild(Effect.promise(async () => {
        let next = 0
        const agent = new Http.Agent({ keepAlive: true, maxSockets: 32 })
        const one = (i: number) =>
          new Promise<void>((resolve, reject) => {
            const req = Http.request(`http://127.0.0.1:${apiPort}/v2/publish/${destUrl}`, {
              method: "POST",
              agent,
              headers: { authorization: `Bearer ${TOKEN}`, "content-type": "text/plain" }
            }, (res) => {
              res.resume()
              res.on("end", () => res.statusCode === 201 ? resolve() : reject(new Error(`publish ${i}: ${res.statusCode}`)))
            })
            req.on("error", reject)
            req.end(`m${i}`)
          })
        await Promise.all(Array.from({ length: 32 }, async () => {
          while (next < MESSAGES) await one(next++)
        }))
        agent.destroy()
        published = Date.now()
      }))

      // Kill the worker mid-run, twice, restarting it each time.
      for (const threshold of [2_000, 6_000]) {
        yield* Effect.promise(() => waitUntil(() => deliveries.size >= threshold, 120_000, () => `${threshold} deliveries`))
        yield* Effect.promise(() => kill(worker))
        const atKill = deliveries.size
        worker = yield* startWorker
        console.log(`crash test: SIGKILLed the worker after ${atKill} distinct deliveries; restarted`)
      }
      yield* Fiber.join(publishing)

      yield* Effect.promise(() => waitUntil(() => deliveries.size >= MESSAGES, 180_000, () => "every message delivered"))
      const unique = deliveries.size
      // And the database agrees once the last worker has recorded its outcomes.
      yield* Effect.promise(() =>
        waitUntil(
          () =>
            Effect.runPromise(
              Effect.map(
                sql<{ n: number }>`SELECT count(*)::int4 AS n FROM queue.messages WHERE state <> 'delivered'`,
                ([row]) => row!.n === 0
              ).pipe(Effect.orElseSucceed(() => false))
            ),
          60_000,
          () => "every message recorded as delivered"
        )
      )
      const duplicates = total - unique
      console.log(
        `crash test: ${MESSAGES} published in ${published - started} ms; ${unique} delivered at least once, ` +
          `${duplicates} duplicate deliveries (${[...deliveries.values()].filter((n) => n > 1).length} messages ` +
          `delivered more than once), all done after ${Date.now() - started} ms`
      )
      assert.strictEqual(unique, MESSAGES)
      for (let i = 0; i < MESSAGES; i++) assert.isAtLeast(deliveries.get(`m${i}`) ?? 0, 1, `m${i}`)
    }), { timeout: 300_000 })
})
