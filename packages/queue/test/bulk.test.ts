/**
 * Bulk operations over HTTP and RPC, on the real stack: `DELETE /v2/messages`, `POST /v2/dlq/retry`
 * and `DELETE /v2/dlq` by ids and by filter, their counts, the per-call bound (`more`), idempotence,
 * and refusals naming the problem.
 */
import { assert, describe, layer } from "@effect/vitest"
import { MAX_BULK } from "@svc/schema"
import { Effect } from "effect"
import { FetchHttpClient } from "effect/http"
import { QueueClient } from "../src/Client.ts"
import { QueueRpcClient } from "../src/RpcClient.ts"
import { Messages } from "../src/store/Messages.ts"
import { newMessage } from "./contracts/fixtures.ts"
import { call, Destination, publish, queueLayer, QueueUrl, TOKEN, waitForMessage } from "./support.ts"

const send = (method: string, path: string, payload: unknown) =>
  call(path, { method, headers: { "content-type": "application/json" }, body: JSON.stringify(payload) })

const stateOf = (id: string) => Effect.map(call(`/v2/messages/${id}`), (answer) => answer.body.state as string)

/** Publishes to `url` with `Svc-Retries: 0` and waits until the message is in the DLQ; its ids. */
const deadLetter = (url: string) =>
  Effect.gen(function*() {
    const published = yield* publish(url, { headers: { "Svc-Retries": "0" } })
    const failed = yield* waitForMessage(published.body.messageId, (m) => m.state === "failed")
    return { messageId: published.body.messageId as string, dlqId: failed.dlqId as string }
  })

describe("bulk operations", () => {
  layer(queueLayer(), { timeout: 120_000, excludeTestServices: true })("over HTTP", (it) => {
    it.effect("DELETE /v2/messages by ids and by filter: the count, then a repeat cancels nothing", () =>
      Effect.gen(function*() {
        const dest = yield* Destination
        const later = { headers: { "Svc-Delay": "1h" } }
        const a = (yield* publish(`${dest.baseUrl}/a`, later)).body.messageId
        const b = (yield* publish(`${dest.baseUrl}/a`, later)).body.messageId
        const c = (yield* publish(`${dest.baseUrl}/c`, later)).body.messageId

        // An id that is not a UUID is refused, nothing cancelled; a UUID that names nothing is not counted.
        const notAnId = yield* send("DELETE", "/v2/messages", { messageIds: [a, "not-a-message"] })
        assert.strictEqual(notAnId.status, 400)
        assert.deepStrictEqual(notAnId.body.issues.map((i: any) => i.parameter), ["messageIds[1]"])
        assert.strictEqual(yield* stateOf(a), "queued")
        const byIds = yield* send("DELETE", "/v2/messages", { messageIds: [a, "00000000-0000-4000-8000-000000000000"] })
        assert.deepStrictEqual([byIds.status, byIds.body], [200, { cancelled: 1, more: false }])
        const byUrl = yield* send("DELETE", "/v2/messages", { filter: { url: `${dest.baseUrl}/a` } })
        assert.deepStrictEqual(byUrl.body, { cancelled: 1, more: false })
        assert.deepStrictEqual(
          (yield* send("DELETE", "/v2/messages", { filter: { url: `${dest.baseUrl}/a` } })).body,
          { cancelled: 0, more: false }
        )
        assert.deepStrictEqual([yield* stateOf(a), yield* stateOf(b), yield* stateOf(c)], ["cancelled", "cancelled", "queued"])
        // The events log has each cancellation.
        const cancelled = (yield* call(`/v2/events?state=cancelled&url=${encodeURIComponent(`${dest.baseUrl}/a`)}`)).body.events
        assert.sameMembers(cancelled.map((e: any) => e.messageId), [a, b])
      }))

    it.effect(`at most ${MAX_BULK} per call: \`more\` says to call again, until every match is cancelled`, () =>
      Effect.gen(function*() {
        const url = "https://bulk.example.com/many"
        // Stored directly (one INSERT): 1,001 publishes over HTTP would only slow the test.
        yield* Messages.use((messages) =>
          messages.publish(
            Array.from({ length: MAX_BULK + 1 }, () => {
              const message = newMessage({ url, delayMs: 3_600_000 })
              return message
            }),
            undefined
          )
        )
        const first = yield* send("DELETE", "/v2/messages", { filter: { url } })
        assert.deepStrictEqual(first.body, { cancelled: MAX_BULK, more: true })
        const second = yield* send("DELETE", "/v2/messages", { filter: { url } })
        assert.deepStrictEqual(second.body, { cancelled: 1, more: false })
      }))

    it.effect("POST /v2/dlq/retry and DELETE /v2/dlq by filter and ids: counts, idempotence, the messages delivered again", () =>
      Effect.gen(function*() {
        const dest = yield* Destination
        let failing = true
        dest.on("/unstable", () => ({ status: failing ? 500 : 200 }))
        dest.on("/broken", () => ({ status: 404 }))
        const unstable1 = yield* deadLetter(`${dest.baseUrl}/unstable`)
        const unstable2 = yield* deadLetter(`${dest.baseUrl}/unstable`)
        const broken1 = yield* deadLetter(`${dest.baseUrl}/broken`)
        const broken2 = yield* deadLetter(`${dest.baseUrl}/broken`)

        failing = false
        const retried = yield* send("POST", "/v2/dlq/retry", { filter: { responseStatus: 500, url: `${dest.baseUrl}/unstable` } })
        assert.deepStrictEqual([retried.status, retried.body], [200, { retried: 2, more: false }])
        for (const { messageId } of [unstable1, unstable2]) {
          const message = yield* waitForMessage(messageId, (m) => m.state === "delivered")
          assert.strictEqual(message.retried, 0)
        }
        assert.deepStrictEqual((yield* send("POST", "/v2/dlq/retry", { filter: { responseStatus: 500 } })).body, { retried: 0, more: false })

        const deleted = yield* send("DELETE", "/v2/dlq", { dlqIds: [broken1.dlqId, unstable1.dlqId] })
        assert.deepStrictEqual([deleted.status, deleted.body], [200, { deleted: 1, more: false }])
        assert.deepStrictEqual((yield* send("DELETE", "/v2/dlq", { dlqIds: [broken1.dlqId] })).body, { deleted: 0, more: false })
        assert.strictEqual((yield* call(`/v2/dlq/${broken1.dlqId}`)).status, 404)
        assert.strictEqual(yield* stateOf(broken1.messageId), "failed")
        const left = (yield* call(`/v2/dlq?url=${encodeURIComponent(`${dest.baseUrl}/broken`)}`)).body.messages
        assert.deepStrictEqual(left.map((m: any) => m.dlqId), [broken2.dlqId])
        const byDate = yield* send("DELETE", "/v2/dlq", { filter: { fromDate: 0, url: `${dest.baseUrl}/broken` } })
        assert.deepStrictEqual(byDate.body, { deleted: 1, more: false })
      }))

    it.effect("refusals: neither ids nor filter, an empty filter, too many ids, a reversed range, bad fields: 400 naming them", () =>
      Effect.gen(function*() {
        const cases: ReadonlyArray<readonly [string, string, unknown, string]> = [
          ["DELETE", "/v2/messages", {}, "messageIds"],
          ["DELETE", "/v2/messages", { filter: {} }, "filter"],
          ["DELETE", "/v2/messages", { messageIds: Array.from({ length: MAX_BULK + 1 }, (_, i) => `id-${i}`) }, "messageIds"],
          ["DELETE", "/v2/messages", { filter: { fromDate: 2000, toDate: 1000 } }, "filter.fromDate"],
          ["DELETE", "/v2/messages", { filter: { fromDate: "yesterday" } }, "fromDate"],
          ["POST", "/v2/dlq/retry", {}, "dlqIds"],
          ["POST", "/v2/dlq/retry", { filter: { responseStatus: 42 } }, "responseStatus"],
          ["DELETE", "/v2/dlq", { filter: {} }, "filter"],
          ["DELETE", "/v2/dlq", { dlqIds: "all" }, "dlqIds"],
          // an id the single-id routes refuse is refused in a list too (a README placeholder pasted as is)
          ["DELETE", "/v2/messages", { messageIds: ["<messageId>"] }, `"messageIds[0]": must not contain "<" (U+003C at position 1)`],
          ["POST", "/v2/dlq/retry", { dlqIds: ["ok-id", ""] }, `"dlqIds[1]": must not be empty`],
          ["DELETE", "/v2/dlq", { dlqIds: ["id\u200b"] }, "must not contain invisible characters or spaces"]
        ]
        for (const [method, path, payload, named] of cases) {
          const answer = yield* send(method, path, payload)
          const what = `${method} ${path} ${JSON.stringify(payload).slice(0, 80)}`
          assert.strictEqual(answer.status, 400, what)
          assert.strictEqual(answer.body.code, "invalid_request", what)
          assert.include(answer.body.message, named, `${what}: ${answer.body.message}`)
        }
        assert.strictEqual((yield* call("/v2/messages", { method: "DELETE", token: null })).status, 401)
      }))

    it.effect("an unknown key, top level or in the filter, is a 400 naming it and the known ones, and nothing changes", () =>
      Effect.gen(function*() {
        const dest = yield* Destination
        const later = { headers: { "Svc-Delay": "1h" } }
        const queued = [
          (yield* publish(`${dest.baseUrl}/only-this`, later)).body.messageId,
          (yield* publish(`${dest.baseUrl}/other`, later)).body.messageId
        ]
        dest.on("/strict-fail", () => ({ status: 500 }))
        const dead = yield* deadLetter(`${dest.baseUrl}/strict-fail`)
        // A misspelt key beside a broad one used to cancel (retry, delete) everything `fromDate: 0` matches.
        const cases: ReadonlyArray<readonly [string, string, unknown, string, string]> = [
          ["DELETE", "/v2/messages", { filter: { fromDate: 0, Url: `${dest.baseUrl}/only-this` } }, "filter.Url", "url, topicName, queue"],
          ["DELETE", "/v2/messages", { filter: { fromDate: 0 }, messageId: [queued[0]] }, "messageId", "messageIds, filter"],
          ["POST", "/v2/dlq/retry", { filter: { fromDate: 0, URL: `${dest.baseUrl}/elsewhere` } }, "filter.URL", "url, topicName, responseStatus"],
          ["DELETE", "/v2/dlq", { filter: { fromDate: 0, status: 404 } }, "filter.status", "url, topicName, responseStatus"],
          ["DELETE", "/v2/dlq", { filter: { fromDate: 0 }, dryRun: true }, "dryRun", "dlqIds, filter"]
        ]
        for (const [method, path, payload, named, known] of cases) {
          const answer = yield* send(method, path, payload)
          const what = `${method} ${path} ${JSON.stringify(payload)}`
          assert.strictEqual(answer.status, 400, what)
          assert.strictEqual(answer.body.code, "invalid_request", what)
          assert.deepStrictEqual(answer.body.issues.map((issue: any) => issue.parameter), [named], what)
          assert.include(answer.body.issues[0].problem, "is not a known field", what)
          assert.include(answer.body.issues[0].problem, known, what)
        }
        // The RPC shares the schemas, and their strictness (sent raw: the typed client cannot send an unknown
        // key): the body is refused before anything runs, naming the line and the field.
        const rpcCases: ReadonlyArray<readonly [string, unknown, string, string]> = [
          ["CancelMessages", { filter: { fromDate: 0, Url: `${dest.baseUrl}/only-this` } }, "line 1 payload.filter.Url", "url, topicName, queue"],
          ["RetryDlqEntries", { filter: { fromDate: 0, URL: "x" } }, "line 1 payload.filter.URL", "url, topicName, responseStatus"],
          ["DeleteDlqEntries", { dlqIds: [dead.dlqId], all: true }, "line 1 payload.all", "dlqIds, filter"]
        ]
        for (const [tag, payload, named, known] of rpcCases) {
          const answer = yield* call("/rpc", {
            method: "POST",
            headers: { "content-type": "application/ndjson" },
            body: `${JSON.stringify({ _tag: "Request", id: "1", tag, payload, headers: [] })}\n`
          })
          const what = `${tag}: ${JSON.stringify(answer.body)}`
          assert.strictEqual(answer.status, 400, what)
          const issue = answer.body.issues.find((candidate: any) => candidate.parameter === named)
          assert.isDefined(issue, what)
          assert.include(issue.problem, "is not a known field", what)
          assert.include(issue.problem, known, what)
        }

        assert.deepStrictEqual([yield* stateOf(queued[0]), yield* stateOf(queued[1])], ["queued", "queued"])
        assert.strictEqual((yield* call(`/v2/dlq/${dead.dlqId}`)).status, 200)
      }))

    it.effect("the typed client: api.messages.cancelMany, api.dlq.retryMany / deleteMany, api.events.list", () =>
      Effect.gen(function*() {
        const dest = yield* Destination
        dest.on("/typed-fail", () => ({ status: 500 }))
        const client = yield* QueueClient.make({ baseUrl: yield* QueueUrl, token: TOKEN }).pipe(Effect.provide(FetchHttpClient.layer))
        const queued = yield* client.publish({ destination: `${dest.baseUrl}/typed-later`, delay: "1h" })
        const messageId = Array.isArray(queued) ? queued[0]!.messageId : (queued as { messageId: string }).messageId
        assert.deepStrictEqual(
          yield* client.api.messages.cancelMany({ payload: { filter: { url: `${dest.baseUrl}/typed-later` } } }),
          { cancelled: 1, more: false }
        )
        const dead = yield* deadLetter(`${dest.baseUrl}/typed-fail`)
        assert.deepStrictEqual(yield* client.api.dlq.retryMany({ payload: { dlqIds: [dead.dlqId] } }), { retried: 1, more: false })
        const failedAgain = yield* waitForMessage(dead.messageId, (m) => m.state === "failed" && m.dlqId !== undefined)
        assert.deepStrictEqual(yield* client.api.dlq.deleteMany({ payload: { dlqIds: [failedAgain.dlqId] } }), { deleted: 1, more: false })
        const page = yield* client.api.events.list({ query: { messageId } })
        assert.deepStrictEqual(page.events.map((e) => e.state), ["cancelled", "created"])
        const refused = yield* Effect.flip(client.api.messages.cancelMany({ payload: {} }))
        assert.strictEqual(refused._tag, "InvalidRequest")
      }))

    it.effect("the RPC: CancelMessages, RetryDlqEntries, DeleteDlqEntries", () =>
      Effect.gen(function*() {
        const dest = yield* Destination
        dest.on("/rpc-fail", () => ({ status: 500 }))
        const queued = (yield* publish(`${dest.baseUrl}/rpc-later`, { headers: { "Svc-Delay": "1h" } })).body.messageId
        const dead = yield* deadLetter(`${dest.baseUrl}/rpc-fail`)
        const base = yield* QueueUrl
        const client = QueueRpcClient.layer({ baseUrl: base, token: TOKEN })
        const answers = yield* QueueRpcClient.use((queue) =>
          Effect.all([
            queue.CancelMessages({ messageIds: [queued] }),
            queue.DeleteDlqEntries({ dlqIds: [dead.dlqId] }),
            queue.RetryDlqEntries({ dlqIds: [dead.dlqId] })
          ])
        ).pipe(Effect.provide(client))
        assert.deepStrictEqual(answers, [{ cancelled: 1, more: false }, { deleted: 1, more: false }, { retried: 0, more: false }])
        const refused = yield* Effect.flip(QueueRpcClient.use((queue) => queue.CancelMessages({})).pipe(Effect.provide(client)))
        assert.strictEqual(refused._tag, "InvalidRequest")
      }))
  })
})
