/**
 * The Promise client (`@svc/queue/client`) against a running queue (HTTP on 127.0.0.1 + worker, a
 * fresh database) over a real socket: every route family it covers on this branch, the options
 * as `Svc-*` headers as the destination sees them, byte-exact bodies, and `QueueError` for
 * refusals and an unreachable queue; `batch`, `events` and the bulk methods against the queue too,
 * and what they send against the documented wire formats on a stub server on 127.0.0.1 (the last
 * block).
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as Http from "node:http"
import type * as Net from "node:net"
import { QueueClient, QueueError } from "../src/promise/index.ts"
import { call, Destination, queueLayer, QueueUrl, TOKEN, waitForMessage } from "./support.ts"

/** Runs the client's Promise; the rejection (a QueueError) as the value when `refused`. */
const run = <A>(promise: () => Promise<A>) => Effect.promise(promise)
const refusal = (promise: () => Promise<unknown>) =>
  Effect.promise(() =>
    promise().then(
      () => assert.fail("expected a refusal"),
      (error: unknown) => {
        assert.instanceOf(error, QueueError)
        return error as QueueError
      }
    )
  )

const client = Effect.map(QueueUrl, (baseUrl) => new QueueClient({ baseUrl: `${baseUrl}/`, token: TOKEN }))

layer(queueLayer(), { timeout: 120_000, excludeTestServices: true })("Promise client", (it) => {
  it.effect("publish and publishJSON: bodies byte for byte, options as Svc-* headers, the message by id", () =>
    Effect.gen(function*() {
      const queue = yield* client
      const dest = yield* Destination
      const bytes = new Uint8Array([0, 1, 2, 254, 255, 13, 10])
      const published = yield* run(() =>
        queue.publish({
          destination: `${dest.baseUrl}/bytes?keep=1`,
          body: bytes,
          method: "PUT",
          retries: 2,
          timeout: "5s",
          forward: { "X-Order": "42" },
          headers: { "Svc-Forward-X-Raw": "raw" }
        })
      )
      assert.isFalse(Array.isArray(published))
      const [received] = yield* dest.waitFor("/bytes", 1)
      assert.deepStrictEqual([...received!.body], [...bytes])
      assert.strictEqual(received!.method, "PUT")
      assert.strictEqual(received!.url, "/bytes?keep=1")
      assert.strictEqual(received!.headers["content-type"], "application/octet-stream")
      assert.strictEqual(received!.headers["x-order"], "42")
      assert.strictEqual(received!.headers["x-raw"], "raw")
      const messageId = (published as { messageId: string }).messageId
      assert.strictEqual(received!.headers["svc-message-id"], messageId)
      yield* waitForMessage(messageId, (m) => m.state === "delivered")
      const message = yield* run(() => queue.messages.get(messageId))
      assert.deepInclude(message, { messageId, state: "delivered", method: "PUT", maxRetries: 2, timeoutMs: 5_000 })

      yield* run(() => queue.publishJSON({ destination: `${dest.baseUrl}/json`, body: { order: 42, name: "café" } }))
      const [json] = yield* dest.waitFor("/json", 1)
      assert.strictEqual(json!.headers["content-type"], "application/json")
      assert.deepStrictEqual(JSON.parse(json!.body.toString()), { order: 42, name: "café" })

      yield* run(() => queue.publish({ destination: `${dest.baseUrl}/text`, body: "plain é" }))
      const [text] = yield* dest.waitFor("/text", 1)
      assert.strictEqual(text!.body.toString(), "plain é")
      assert.strictEqual(text!.headers["content-type"], "text/plain; charset=utf-8")

      // No body: nothing is sent, and no content type is made up.
      yield* run(() => queue.publish({ destination: `${dest.baseUrl}/empty`, method: "GET" }))
      const [empty] = yield* dest.waitFor("/empty", 1)
      assert.strictEqual(empty!.method, "GET")
      assert.strictEqual(empty!.body.length, 0)
      assert.isUndefined(empty!.headers["content-type"])
    }))

  it.effect("refusals are QueueErrors with the queue's status, code and message; an unreachable queue is status 0", () =>
    Effect.gen(function*() {
      const queue = yield* client
      const dest = yield* Destination
      const invalid = yield* refusal(() => queue.publish({ destination: `${dest.baseUrl}/x`, delay: "soon" }))
      assert.deepInclude(invalid, { status: 400, code: "invalid_request", name: "QueueError" })
      assert.match(invalid.message, /Svc-Delay/)
      assert.deepStrictEqual((invalid.body as any).issues.map((issue: any) => issue.parameter), ["Svc-Delay"])
      const missing = yield* refusal(() => queue.messages.get("00000000-0000-0000-0000-000000000000"))
      assert.deepInclude(missing, { status: 404, code: "message_not_found" })
      const baseUrl = yield* QueueUrl
      const wrongToken = yield* refusal(() => new QueueClient({ baseUrl, token: "wrong" }).keys.get())
      assert.strictEqual(wrongToken.status, 401)
      const unreachable = yield* refusal(() => new QueueClient({ baseUrl: "http://127.0.0.1:1", token: TOKEN }).keys.get())
      assert.deepInclude(unreachable, { status: 0, code: "request_failed" })
    }))

  it.effect("messages: cancel a delayed message; a finished one is not cancellable", () =>
    Effect.gen(function*() {
      const queue = yield* client
      const dest = yield* Destination
      const later = yield* run(() => queue.publish({ destination: `${dest.baseUrl}/later`, delay: "1h", body: "x" }))
      const id = (later as { messageId: string }).messageId
      assert.isUndefined(yield* run(() => queue.messages.cancel(id)))
      assert.strictEqual((yield* run(() => queue.messages.get(id))).state, "cancelled")
      const again = yield* refusal(() => queue.messages.cancel(id))
      assert.deepInclude(again, { status: 409, code: "message_not_cancellable" })
    }))

  it.effect("DLQ: list with filters and a cursor, get, retry, delete", () =>
    Effect.gen(function*() {
      const queue = yield* client
      const dest = yield* Destination
      dest.on("/dead", () => ({ status: 500, body: "down" }))
      const ids: Array<string> = []
      for (const body of ["a", "b", "c"]) {
        const published = yield* run(() => queue.publish({ destination: `${dest.baseUrl}/dead`, retries: 0, body }))
        ids.push((published as { messageId: string }).messageId)
      }
      for (const id of ids) yield* waitForMessage(id, (m) => m.state === "failed")
      const first = yield* run(() => queue.dlq.list({ url: `${dest.baseUrl}/dead`, limit: 2 }))
      assert.strictEqual(first.messages.length, 2)
      assert.isString(first.cursor)
      const second = yield* run(() => queue.dlq.list({ url: `${dest.baseUrl}/dead`, limit: 2, cursor: first.cursor }))
      assert.strictEqual(second.messages.length, 1)
      const entries = [...first.messages, ...second.messages]
      assert.sameMembers(entries.map((entry) => entry.messageId), ids)
      assert.isTrue(entries.every((entry) => entry.responseStatus === 500))
      const byId = yield* run(() => queue.dlq.list({ messageId: ids[0]! }))
      assert.deepStrictEqual(byId.messages.map((entry) => entry.messageId), [ids[0]])

      const entry = yield* run(() => queue.dlq.get(entries[0]!.dlqId))
      assert.strictEqual(entry.url, `${dest.baseUrl}/dead`)
      dest.on("/dead", () => ({ status: 200 }))
      const retried = yield* run(() => queue.dlq.retry(entries[0]!.dlqId))
      yield* waitForMessage(retried.messageId, (m) => m.state === "delivered")
      assert.isUndefined(yield* run(() => queue.dlq.delete(entries[1]!.dlqId)))
      const left = yield* run(() => queue.dlq.list({ url: `${dest.baseUrl}/dead` }))
      assert.deepStrictEqual(left.messages.map((message) => message.dlqId), [entries[2]!.dlqId])
      const gone = yield* refusal(() => queue.dlq.get(entries[1]!.dlqId))
      assert.deepInclude(gone, { status: 404, code: "dlq_message_not_found" })
    }))

  it.effect("batch, events and bulk against the queue: bytes and text in one batch, its events, a bulk cancel, DLQ bulk retry and delete", () =>
    Effect.gen(function*() {
      const queue = yield* client
      const dest = yield* Destination
      const bytes = new Uint8Array([0, 255, 10, 13])
      const answers = yield* run(() =>
        queue.batch([
          { destination: `${dest.baseUrl}/batch-bytes`, body: bytes },
          { destination: `${dest.baseUrl}/batch-text`, body: "é", retries: 1 },
          { destination: `${dest.baseUrl}/batch-later`, body: "later", delay: "1h" }
        ])
      )
      assert.strictEqual(answers.length, 3)
      const [bytesId, textId, laterId] = answers.map((answer) => (answer as { messageId: string }).messageId)
      const [arrived] = yield* dest.waitFor("/batch-bytes", 1)
      assert.deepStrictEqual([...arrived!.body], [...bytes])
      assert.strictEqual((yield* dest.waitFor("/batch-text", 1))[0]!.body.toString(), "é")
      const refused = yield* refusal(() => queue.batch([{ destination: "not a url" }]))
      assert.strictEqual(refused.status, 400)
      // A raw header wins over the option of the same header in any case: sent once, accepted.
      const [raw] = yield* run(() =>
        queue.batch([{ destination: `${dest.baseUrl}/batch-raw`, delay: "1h", retries: 1, headers: { "svc-retries": "4" } }])
      )
      assert.strictEqual((yield* call(`/v2/messages/${(raw as { messageId: string }).messageId}`)).body.maxRetries, 4)

      yield* waitForMessage(bytesId!, (m) => m.state === "delivered")
      const events = yield* run(() => queue.events({ messageId: bytesId! }))
      assert.deepStrictEqual(events.events.map((event) => event.state), ["delivered", "delivering", "created"])

      const cancelled = yield* run(() => queue.messages.cancelMany({ messageIds: [laterId!, textId!] }))
      assert.deepStrictEqual(cancelled, { cancelled: 1, more: false })
      assert.strictEqual((yield* run(() => queue.messages.get(laterId!))).state, "cancelled")

      dest.on("/bulk-dead", () => ({ status: 500 }))
      const dead = yield* run(() =>
        queue.batch([1, 2, 3].map((i) => ({ destination: `${dest.baseUrl}/bulk-dead`, body: String(i), retries: 0 })))
      )
      for (const answer of dead) yield* waitForMessage((answer as { messageId: string }).messageId, (m) => m.state === "failed")
      const entries = (yield* run(() => queue.dlq.list({ url: `${dest.baseUrl}/bulk-dead` }))).messages
      assert.strictEqual(entries.length, 3)
      dest.on("/bulk-dead", () => ({ status: 200 }))
      assert.deepStrictEqual(yield* run(() => queue.dlq.retryMany({ dlqIds: [entries[0]!.dlqId] })), { retried: 1, more: false })
      assert.deepStrictEqual(yield* run(() => queue.dlq.deleteMany({ filter: { url: `${dest.baseUrl}/bulk-dead` } })), {
        deleted: 2,
        more: false
      })
      assert.deepStrictEqual(yield* run(() => queue.dlq.deleteMany({ filter: { url: `${dest.baseUrl}/bulk-dead` } })), {
        deleted: 0,
        more: false
      })
      yield* waitForMessage(entries[0]!.messageId, (m) => m.state === "delivered")
    }))

  it.effect("URL groups: upsert endpoints, list, get, set headers, publish to the group, remove endpoints, delete", () =>
    Effect.gen(function*() {
      const queue = yield* client
      const dest = yield* Destination
      const created = yield* run(() =>
        queue.groups.upsertEndpoints("orders-p", [{ name: "billing", url: `${dest.baseUrl}/billing` }, { url: `${dest.baseUrl}/audit` }])
      )
      assert.strictEqual(created.endpoints.length, 2)
      assert.include((yield* run(() => queue.groups.list())).map((topic) => topic.name), "orders-p")
      const withHeaders = yield* run(() => queue.groups.setHeaders("orders-p", { "X-Team": ["payments", "audit"] }))
      assert.deepStrictEqual(withHeaders.headers, { "X-Team": ["payments", "audit"] })
      const fanned = yield* run(() => queue.publish({ destination: "orders-p", body: "order 42" }))
      assert.isTrue(Array.isArray(fanned))
      assert.sameMembers((fanned as ReadonlyArray<{ url?: string }>).map((entry) => entry.url!), [`${dest.baseUrl}/billing`, `${dest.baseUrl}/audit`])
      const [billing] = yield* dest.waitFor("/billing", 1)
      assert.strictEqual(billing!.headers["x-team"], "payments, audit")
      assert.strictEqual(billing!.headers["svc-topic-name"], "orders-p")
      const removed = yield* run(() => queue.groups.removeEndpoints("orders-p", [{ name: "billing" }]))
      assert.deepStrictEqual(removed.endpoints, [{ url: `${dest.baseUrl}/audit` }])
      assert.deepStrictEqual((yield* run(() => queue.groups.get("orders-p"))).endpoints, [{ url: `${dest.baseUrl}/audit` }])
      assert.isUndefined(yield* run(() => queue.groups.delete("orders-p")))
      assert.deepInclude(yield* refusal(() => queue.groups.get("orders-p")), { status: 404, code: "topic_not_found" })
    }))

  it.effect("schedules: create (and replace by id), list, get, pause, resume, delete", () =>
    Effect.gen(function*() {
      const queue = yield* client
      const dest = yield* Destination
      const created = yield* run(() =>
        queue.schedules.create({ destination: `${dest.baseUrl}/report`, cron: "0 9 * * 1-5", scheduleId: "weekday-p", retries: 5, body: "{}" })
      )
      assert.deepStrictEqual(created, { scheduleId: "weekday-p" })
      const schedule = yield* run(() => queue.schedules.get("weekday-p"))
      assert.deepInclude(schedule, { cron: "0 9 * * 1-5", destination: `${dest.baseUrl}/report`, paused: false })
      assert.strictEqual(schedule.settings.retries, 5)
      assert.strictEqual(schedule.nextFireTimes.length, 5)
      const fresh = yield* run(() => queue.schedules.create({ destination: `${dest.baseUrl}/other`, cron: "*/5 * * * *" }))
      assert.match(fresh.scheduleId, /^scd_/)
      assert.includeMembers((yield* run(() => queue.schedules.list())).map((s) => s.scheduleId), ["weekday-p", fresh.scheduleId])
      assert.isTrue((yield* run(() => queue.schedules.pause("weekday-p"))).paused)
      assert.isFalse((yield* run(() => queue.schedules.resume("weekday-p"))).paused)
      assert.isUndefined(yield* run(() => queue.schedules.delete("weekday-p")))
      assert.isUndefined(yield* run(() => queue.schedules.delete(fresh.scheduleId)))
      assert.deepInclude(yield* refusal(() => queue.schedules.get("weekday-p")), { status: 404, code: "schedule_not_found" })
      const bad = yield* refusal(() => queue.schedules.create({ destination: `${dest.baseUrl}/x`, cron: "every day" }))
      assert.deepInclude(bad, { status: 400, code: "invalid_request" })
    }))

  it.effect("schedules.list follows the pages of GET /v2/schedules (100 a page) and returns every schedule", () =>
    Effect.gen(function*() {
      const queue = yield* client
      const dest = yield* Destination
      const ids = Array.from({ length: 101 }, (_, i) => `paged-${String(i).padStart(3, "0")}`)
      yield* Effect.forEach(ids, (scheduleId) =>
        run(() => queue.schedules.create({ destination: `${dest.baseUrl}/paged`, cron: "0 0 1 1 *", scheduleId })), { concurrency: 8 })
      const listed = (yield* run(() => queue.schedules.list())).map((s) => s.scheduleId)
      assert.deepStrictEqual(listed.filter((id) => id.startsWith("paged-")), ids)
      assert.strictEqual(new Set(listed).size, listed.length)
      yield* Effect.forEach(ids, (scheduleId) => run(() => queue.schedules.delete(scheduleId)), { concurrency: 8 })
    }))

  it.effect("groups.list and queues.list follow the pages of GET /v2/topics and /v2/queues (100 a page)", () =>
    Effect.gen(function*() {
      const queue = yield* client
      const dest = yield* Destination
      const names = Array.from({ length: 101 }, (_, i) => `paged-${String(i).padStart(3, "0")}`)
      yield* Effect.forEach(names, (name) =>
        Effect.all([
          run(() => queue.groups.upsertEndpoints(name, [{ url: `${dest.baseUrl}/${name}` }])),
          run(() => queue.queues.upsert({ queueName: name }))
        ]), { concurrency: 8 })
      const groups = (yield* run(() => queue.groups.list())).map((topic) => topic.name)
      assert.deepStrictEqual(groups.filter((name) => name.startsWith("paged-")), names)
      assert.strictEqual(new Set(groups).size, groups.length)
      const queues = (yield* run(() => queue.queues.list())).map((fifo) => fifo.name)
      assert.deepStrictEqual(queues.filter((name) => name.startsWith("paged-")), names)
      assert.strictEqual(new Set(queues).size, queues.length)
      yield* Effect.forEach(names, (name) =>
        Effect.all([run(() => queue.groups.delete(name)), run(() => queue.queues.delete(name))]), { concurrency: 8 })
    }))

  it.effect("flow control and FIFO queues: keys from a publish, pause and resume; queue upsert, enqueue, list, delete", () =>
    Effect.gen(function*() {
      const queue = yield* client
      const dest = yield* Destination
      yield* run(() =>
        queue.publish({ destination: `${dest.baseUrl}/llm`, body: "p", flowControl: { key: "llm-p", parallelism: 2, rate: 10, period: "1m" } })
      )
      yield* dest.waitFor("/llm", 1)
      const key = yield* run(() => queue.flowControl.get("llm-p"))
      assert.deepInclude(key, { flowControlKey: "llm-p", parallelism: 2, rate: 10, periodMs: 60_000, paused: false })
      assert.include((yield* run(() => queue.flowControl.list())).map((k) => k.flowControlKey), "llm-p")
      assert.isTrue((yield* run(() => queue.flowControl.pause("llm-p"))).paused)
      assert.isFalse((yield* run(() => queue.flowControl.resume("llm-p"))).paused)
      assert.deepInclude(yield* refusal(() => queue.flowControl.get("nope")), { status: 404, code: "flow_control_not_found" })

      assert.deepInclude(yield* run(() => queue.queues.upsert({ queueName: "jobs-p", parallelism: 1 })), { name: "jobs-p", parallelism: 1 })
      assert.isTrue((yield* run(() => queue.queues.pause("jobs-p"))).paused)
      yield* run(() => queue.queues.enqueue("jobs-p", { destination: `${dest.baseUrl}/job`, body: "first" }))
      yield* run(() => queue.queues.enqueue("jobs-p", { destination: `${dest.baseUrl}/job`, body: "second" }))
      assert.strictEqual((yield* run(() => queue.queues.get("jobs-p"))).waiting, 2)
      assert.isFalse((yield* run(() => queue.queues.resume("jobs-p"))).paused)
      const jobs = yield* dest.waitFor("/job", 2)
      assert.deepStrictEqual(jobs.map((job) => job.body.toString()), ["first", "second"])
      assert.include((yield* run(() => queue.queues.list())).map((q) => q.name), "jobs-p")
      assert.isUndefined(yield* run(() => queue.queues.delete("jobs-p")))
      assert.deepInclude(yield* refusal(() => queue.queues.get("jobs-p")), { status: 404, code: "fifo_queue_not_found" })
    }))

  it.effect("signing keys: get and rotate", () =>
    Effect.gen(function*() {
      const queue = yield* client
      const keys = yield* run(() => queue.keys.get())
      assert.match(keys.current, /^sig_/)
      const rotated = yield* run(() => queue.keys.rotate())
      assert.strictEqual(rotated.current, keys.next)
      assert.deepStrictEqual(yield* run(() => queue.keys.get()), rotated)
    }))
})

/** A stub of the routes being built elsewhere: records each request, answers `answer(path)` as JSON. */
const stub = (answer: (method: string, path: string) => unknown) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const requests: Array<{ method: string; url: string; headers: Http.IncomingHttpHeaders; body: any }> = []
      const server = Http.createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (chunk: Buffer) => chunks.push(chunk))
        req.on("end", () => {
          const text = Buffer.concat(chunks).toString()
          requests.push({ method: req.method!, url: req.url!, headers: req.headers, body: text === "" ? undefined : JSON.parse(text) })
          res.writeHead(req.url === "/v2/batch" ? 201 : 200, { "content-type": "application/json" })
          res.end(JSON.stringify(answer(req.method!, req.url!.split("?")[0]!)))
        })
      })
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      return { base: `http://127.0.0.1:${(server.address() as Net.AddressInfo).port}`, requests, server }
    }),
    ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
  )

describe("Promise client: batch, events and bulk calls as documented (a stub server until those routes land)", () => {
  it.live("batch sends the documented array (bytes base64, options as headers, queue) and answers one result per message", () =>
    Effect.gen(function*() {
      const answers = [{ messageId: "m1" }, [{ messageId: "m2", url: "https://a.example/x" }], { messageId: "m3" }]
      const server = yield* stub(() => answers)
      const queue = new QueueClient({ baseUrl: server.base, token: TOKEN })
      const results = yield* run(() =>
        queue.batch([
          { destination: "https://example.com/a", body: "text é", retries: 2, notBefore: new Date(1_767_225_600_000) },
          { destination: "orders", body: new Uint8Array([0, 255, 10]), contentType: "application/x-bytes", forward: { "X-A": "1" } },
          { destination: "https://example.com/c", queue: "jobs", contentBasedDeduplication: true, retryDelay: "pow(2, retried) * 1000" }
        ])
      )
      assert.deepStrictEqual(results, answers)
      const [request] = server.requests
      assert.strictEqual(request!.method, "POST")
      assert.strictEqual(request!.url, "/v2/batch")
      assert.strictEqual(request!.headers.authorization, `Bearer ${TOKEN}`)
      assert.strictEqual(request!.headers["content-type"], "application/json")
      assert.deepStrictEqual(request!.body, [
        {
          destination: "https://example.com/a",
          body: "text é",
          bodyEncoding: "utf8",
          headers: { "Svc-Retries": "2", "Svc-Not-Before": "1767225600" }
        },
        {
          destination: "orders",
          body: "AP8K",
          bodyEncoding: "base64",
          headers: { "content-type": "application/x-bytes", "Svc-Forward-X-A": "1" }
        },
        {
          destination: "https://example.com/c",
          headers: { "Svc-Content-Based-Deduplication": "true", "Svc-Retry-Delay": "pow(2, retried) * 1000" },
          queue: "jobs"
        }
      ])
    }))

  it.live("events passes its filters as query parameters; bulk cancel, retry and delete send their selections", () =>
    Effect.gen(function*() {
      const server = yield* stub((method, path) =>
        path === "/v2/events"
          ? { events: [{ time: 2, messageId: "m1", state: "delivered", url: "https://example.com/a" }], cursor: "c2" }
          : path === "/v2/messages"
          ? { cancelled: 3, more: false }
          : method === "POST"
          ? { retried: 2, more: true }
          : { deleted: 1, more: false }
      )
      const queue = new QueueClient({ baseUrl: server.base, token: TOKEN })
      const page = yield* run(() =>
        queue.events({ messageId: "m1", state: "delivered", fromDate: new Date(1_000), toDate: 2_000, count: 10, cursor: "c1" })
      )
      assert.deepStrictEqual(page, { events: [{ time: 2, messageId: "m1", state: "delivered", url: "https://example.com/a" }], cursor: "c2" })
      const query = new URL(server.requests[0]!.url, server.base).searchParams
      assert.deepStrictEqual(Object.fromEntries(query), {
        messageId: "m1",
        state: "delivered",
        fromDate: "1000",
        toDate: "2000",
        count: "10",
        cursor: "c1"
      })
      assert.deepStrictEqual(yield* run(() => queue.messages.cancelMany({ messageIds: ["a", "b"] })), { cancelled: 3, more: false })
      assert.deepStrictEqual(yield* run(() => queue.dlq.retryMany({ filter: { url: "https://example.com/a" } })), { retried: 2, more: true })
      assert.deepStrictEqual(yield* run(() => queue.dlq.deleteMany({ dlqIds: ["d1"] })), { deleted: 1, more: false })
      assert.deepStrictEqual(server.requests.slice(1).map((r) => [r.method, r.url, r.body]), [
        ["DELETE", "/v2/messages", { messageIds: ["a", "b"] }],
        ["POST", "/v2/dlq/retry", { filter: { url: "https://example.com/a" } }],
        ["DELETE", "/v2/dlq", { dlqIds: ["d1"] }]
      ])
    }))
})
