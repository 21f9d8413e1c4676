/**
 * FIFO queues and flow control through the HTTP API and the typed client of one running queue
 * (HTTP + worker, a fresh database): the queue routes, enqueue with publish headers, refusals.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { FetchHttpClient } from "effect/http"
import { QueueClient } from "../src/Client.ts"
import { call, Destination, queueLayer, QueueUrl, TOKEN } from "./support.ts"

const json = (body: unknown) => ({ method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })

layer(queueLayer(), { timeout: 120_000, excludeTestServices: true })("FIFO queue API", (it) => {
  it.effect("queue routes: upsert, get, list, delete; refusals name the bad value", () =>
    Effect.gen(function*() {
      const created = yield* call("/v2/queues", json({ queueName: "jobs", parallelism: 2 }))
      assert.strictEqual(created.status, 200)
      assert.deepInclude(created.body, { name: "jobs", parallelism: 2, paused: false, waiting: 0, inFlight: 0 })
      assert.strictEqual((yield* call("/v2/queues", json({ queueName: "jobs" }))).body.parallelism, 2)
      assert.deepStrictEqual((yield* call("/v2/queues")).body.queues.map((q: any) => q.name), ["jobs"])
      const zero = yield* call("/v2/queues", json({ queueName: "jobs", parallelism: 0 }))
      assert.strictEqual(zero.status, 400)
      assert.match(zero.body.message, /parallelism/)
      const badName = yield* call("/v2/queues", json({ queueName: "no spaces", parallelism: 1 }))
      assert.strictEqual(badName.status, 400)
      assert.match(badName.body.message, /queueName/)
      // names a URL path cannot hold as a segment (clients normalise them away): refused, not stored
      for (const queueName of [".", ".."]) {
        const dots = yield* call("/v2/queues", json({ queueName, parallelism: 1 }))
        assert.strictEqual(dots.status, 400, queueName)
        assert.match(dots.body.message, /not '\.' or '\.\.'/)
      }
      // A field POST /v2/queues does not have (`paused` is its own route) is refused, not ignored.
      const unknown = yield* call("/v2/queues", json({ queueName: "jobs", parallelism: 3, paused: true }))
      assert.strictEqual(unknown.status, 400)
      assert.deepStrictEqual(unknown.body.issues.map((i: any) => `${i.in} ${i.parameter}`), ["body paused"])
      assert.include(unknown.body.message, "is not a known field (expected queueName, parallelism)")
      assert.deepInclude((yield* call("/v2/queues/jobs")).body, { parallelism: 2, paused: false })
      assert.strictEqual((yield* call("/v2/queues/jobs", { method: "DELETE" })).status, 204)
      const gone = yield* call("/v2/queues/jobs")
      assert.strictEqual(gone.status, 404)
      assert.strictEqual(gone.body.code, "fifo_queue_not_found")

      const dest = yield* Destination
      const badQueue = yield* call(`/v2/enqueue/bad%20name/${dest.baseUrl}/x`, { method: "POST", body: "x" })
      assert.strictEqual(badQueue.status, 400)
      assert.deepStrictEqual(badQueue.body.issues.map((i: any) => `${i.in} ${i.parameter}`), ["path queue"])
      const badRetries = yield* call(`/v2/enqueue/jobs/${dest.baseUrl}/x`, { method: "POST", body: "x", headers: { "Svc-Retries": "many" } })
      assert.strictEqual(badRetries.status, 400)
      assert.deepStrictEqual(badRetries.body.issues.map((i: any) => `${i.in} ${i.parameter}`), ["header Svc-Retries"])
      assert.strictEqual((yield* call("/v2/queues/jobs")).status, 404, "a refused enqueue creates no queue")
    }))

  it.effect("the typed client: enqueue with publish options (created at parallelism 1, in order), flow control, api.queues", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const baseUrl = yield* QueueUrl
      const client = yield* QueueClient.make({ baseUrl, token: TOKEN }).pipe(Effect.provide(FetchHttpClient.layer))
      for (const i of [0, 1, 2]) {
        yield* client.enqueue("typed", {
          destination: `${dest.baseUrl}/typed`,
          body: `t${i}`,
          method: "PUT",
          retries: 1,
          flowControl: { key: "typed-key", parallelism: 1, rate: 100, period: "10s" }
        })
      }
      const received = yield* dest.waitFor("/typed", 3)
      assert.deepStrictEqual(received.map((r) => `${r.method} ${r.body.toString()}`), ["PUT t0", "PUT t1", "PUT t2"])
      const queue = yield* client.api.queues.get({ params: { name: "typed" } })
      assert.strictEqual(queue.parallelism, 1)
      const flow = yield* client.api.flowControl.get({ params: { key: "typed-key" } })
      assert.deepInclude(flow, { parallelism: 1, rate: 100, periodMs: 10_000 })
      const paused = yield* client.api.queues.pause({ params: { name: "typed" } })
      assert.isTrue(paused.paused)
      assert.isFalse((yield* client.api.queues.resume({ params: { name: "typed" } })).paused)
    }))
})
