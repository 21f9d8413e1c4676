/**
 * Hostile input over HTTP, on the memory stores (the second outside sweep, /tmp/sweep2):
 *
 * - N2: a JSON body nested 100,000 levels deep (a few hundred KB) overflowed the stack of the
 *   body check (a 500 on every queue JSON route); now a 400 naming the depth, and the queue goes on.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_DEPTH } from "../../src/JsonBody.ts"
import { type Call, withQueue } from "./webQueue.ts"

const send = (method: string, body: string): RequestInit => ({ method, body, headers: { "content-type": "application/json" } })

/** Still serving: a publish is stored and read back. */
const healthy = (call: Call) =>
  Effect.gen(function*() {
    assert.strictEqual((yield* call("/health", { token: null })).status, 200)
    const published = yield* call("/v2/publish/https://example.com/after", { method: "POST", body: "x", headers: { "svc-delay": "1h" } })
    assert.strictEqual(published.status, 201, JSON.stringify(published.body))
    assert.strictEqual((yield* call(`/v2/messages/${published.body.messageId}`)).body.state, "queued")
  })

describe("hostile input over HTTP (memory stores)", () => {
  it.live("N2: a body nested 100,000 levels deep is a 400 naming the depth at every JSON route, never a 500", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        const levels = 100_000
        const arrays = "[".repeat(levels) + "]".repeat(levels)
        const objects = "{\"a\":".repeat(levels) + "1" + "}".repeat(levels)
        const cases: ReadonlyArray<readonly [string, string, string, string]> = [
          ["POST", "/v2/batch", arrays, "[0]"],
          ["POST", "/v2/batch", `[{"destination":"https://example.com/x","headers":${objects}}]`, "[0].headers.a"],
          ["POST", "/v2/queues", arrays, "[0]"],
          ["POST", "/v2/queues", `{"queueName":${objects}}`, "queueName.a"],
          ["DELETE", "/v2/messages", `{"filter":{"url":${arrays}}}`, "filter.url[0]"],
          ["DELETE", "/v2/dlq", objects, "a"],
          ["POST", "/v2/topics/deep/endpoints", `{"endpoints":${arrays}}`, "endpoints[0]"],
          ["PATCH", "/v2/topics/deep", `{"headers":${objects}}`, "headers.a"]
        ]
        for (const [method, path, body, prefix] of cases) {
          const answer = yield* call(path, send(method, body))
          const what = `${method} ${path} ${body.slice(0, 40)}`
          assert.strictEqual(answer.status, 400, `${what}: ${JSON.stringify(answer.body).slice(0, 300)}`)
          assert.strictEqual(answer.body.issues.length, 1, what)
          const [issue] = answer.body.issues
          assert.include(issue.problem, `more than ${MAX_DEPTH} levels deep`, what)
          // Named by the path of the first container too deep: 32 levels of the body's own keys.
          assert.isTrue(issue.parameter.startsWith(prefix), `${what}: ${issue.parameter}`)
          assert.isBelow(answer.size, 2000, what)
        }
        // As deep as the cap allows: the route's own answer (not the right shape), not the depth.
        const atCap = "[".repeat(MAX_DEPTH) + "]".repeat(MAX_DEPTH)
        const shallow = yield* call("/v2/batch", send("POST", atCap))
        assert.strictEqual(shallow.status, 400)
        assert.notInclude(shallow.body.message, "levels deep")
        assert.include(shallow.body.message, "expected a message")
        yield* healthy(call)
      })
    ))

  it.live("N2: the walk still names the first ill-formed string depth first, a key before its value", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        const cases: ReadonlyArray<readonly [string, string, string, string]> = [
          ["POST", "/v2/batch", `[{"destination":"https://example.com/a","body":"ok"},{"destination":"https://example.com/b","body":"a\\ud800b"}]`, "[1].body"],
          ["POST", "/v2/batch", `[{"destination":"https://example.com/a","headers":{"X":"ok","Svc-Forward-Y":"\\udc00"}}]`, "[0].headers.Svc-Forward-Y"],
          ["DELETE", "/v2/messages", `{"filter":{"fromDate":0,"\\udbff":"\\ud800"}}`, "filter.\udbff"]
        ]
        for (const [method, path, body, parameter] of cases) {
          const answer = yield* call(path, send(method, body))
          assert.strictEqual(answer.status, 400, body)
          assert.deepStrictEqual(answer.body.issues.map((issue: any) => issue.parameter), [parameter], body)
        }
        const key = yield* call("/v2/messages", send("DELETE", `{"filter":{"fromDate":0,"\\udbff":"\\ud800"}}`))
        assert.include(key.body.issues[0].problem, "the key holds an unpaired surrogate (\\udbff at character 0)")
      })
    ))

})
