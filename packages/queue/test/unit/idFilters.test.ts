/**
 * A malformed message or DLQ id in a filter or a bulk id list is a 400 naming it on every route, as
 * the events filter always was (`store/Model.ts` `idIssue`, one rule): the DLQ filter answered
 * `{"messages":[]}` and a bulk cancel `{"cancelled":0}`, as if the id named a message that was gone.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { json, withQueue } from "./webQueue.ts"

const NO_SUCH = "00000000-0000-4000-8000-000000000000"

describe("malformed ids in filters and bulk lists", () => {
  it.live("are a 400 naming the parameter and the id, nothing changed; a well-formed unknown id still matches nothing", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        const published = yield* call("/v2/publish/https://example.com/x", { method: "POST", body: "x", headers: { "svc-delay": "1h" } })
        assert.strictEqual(published.status, 201, JSON.stringify(published.body))
        const { messageId } = published.body
        const cases: ReadonlyArray<readonly [string, string, RequestInit | undefined, string, string]> = [
          ["GET", "/v2/events?messageId=not-a-uuid", undefined, "messageId", "is not a message id (a UUID): \"not-a-uuid\""],
          ["GET", "/v2/dlq?messageId=not-a-uuid", undefined, "messageId", "is not a message id (a UUID): \"not-a-uuid\""],
          ["DELETE", "/v2/messages", json("DELETE", { messageIds: [messageId, "not-a-uuid"] }), "messageIds[1]", "is not a message id (a UUID): \"not-a-uuid\""],
          ["DELETE", "/v2/messages", json("DELETE", { messageIds: ["nope"], filter: { fromDate: 0 } }), "messageIds[0]", "is not a message id (a UUID): \"nope\""],
          ["POST", "/v2/dlq/retry", json("POST", { dlqIds: ["not-a-uuid"] }), "dlqIds[0]", "is not a DLQ id (a UUID): \"not-a-uuid\""],
          ["DELETE", "/v2/dlq", json("DELETE", { dlqIds: [NO_SUCH, "dlq_1"] }), "dlqIds[1]", "is not a DLQ id (a UUID): \"dlq_1\""]
        ]
        for (const [method, path, init, parameter, problem] of cases) {
          const what = `${method} ${path} ${init?.body ?? ""}`
          const answer = yield* call(path, init)
          assert.strictEqual(answer.status, 400, `${what}: ${JSON.stringify(answer.body)}`)
          assert.strictEqual(answer.body.code, "invalid_request", what)
          assert.deepStrictEqual(answer.body.issues.map((i: any) => [i.parameter, i.problem]), [[parameter, problem]], what)
          assert.include(answer.body.message, parameter, what)
        }
        assert.strictEqual((yield* call(`/v2/messages/${messageId}`)).body.state, "queued", "nothing cancelled")
        // Well-formed ids that name nothing: an empty page, a count of 0. A single id in a path: 404.
        assert.deepStrictEqual((yield* call(`/v2/dlq?messageId=${NO_SUCH}`)).body.messages, [])
        assert.strictEqual((yield* call("/v2/messages", json("DELETE", { messageIds: [NO_SUCH] }))).body.cancelled, 0)
        assert.strictEqual((yield* call("/v2/dlq", json("DELETE", { dlqIds: [NO_SUCH] }))).body.deleted, 0)
        assert.strictEqual((yield* call("/v2/messages/not-a-uuid")).status, 404)
        assert.strictEqual((yield* call("/v2/dlq/not-a-uuid")).status, 404)
      })
    ))
})
