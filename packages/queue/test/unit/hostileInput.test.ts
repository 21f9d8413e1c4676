/**
 * Hostile input over HTTP, on the memory stores (the second outside sweep, /tmp/sweep2):
 *
 * - N2: a JSON body nested 100,000 levels deep (a few hundred KB) overflowed the stack of the
 *   body check (a 500 on every queue JSON route); now a 400 naming the depth, and the queue goes on.
 * - N4: a refusal listed every issue, twice (in `message` and in `issues`): a 1 MB batch of unknown
 *   keys got a 21.5 MB answer. Now the first 20 issues and one counting the rest; long names cut.
 * - N8: a `svc-` query parameter given twice, or a JSON key given twice, was settled by order (the
 *   last one won); now a 400 naming it.
 * - `GET /v2/messages/%00` said only "expected an id"; now what is wrong with it.
 */
import { assert, describe, it } from "@effect/vitest"
import { MAX_ISSUES } from "@svc/schema"
import { Effect } from "effect"
import { JsonBody } from "@svc/platform"
import { type Call, json, TOKEN, withQueue } from "./webQueue.ts"

const send = (method: string, body: string): RequestInit => ({ method, body, headers: { "content-type": "application/json" } })

/** Still serving: a publish is stored and read back. */
const healthy = (call: Call) =>
  Effect.gen(function*() {
    assert.strictEqual((yield* call("/health", { token: null })).status, 200)
    const published = yield* call("/v2/publish/https://example.com/after", { method: "POST", body: "x", headers: { "svc-delay": "1h" } })
    assert.strictEqual(published.status, 201, JSON.stringify(published.body))
    assert.strictEqual((yield* call(`/v2/messages/${published.body.messageId}`)).body.state, "queued")
  })

/** The events the queue recorded (one `created` per stored message). */
const createdCount = (call: Call) =>
  Effect.map(call("/v2/events?count=1000"), (answer) => answer.body.events.filter((e: any) => e.state === "created").length)

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
          assert.include(issue.problem, `more than ${JsonBody.MAX_DEPTH} levels deep`, what)
          // Named by the path of the first container too deep: 32 levels of the body's own keys.
          assert.isTrue(issue.parameter.startsWith(prefix), `${what}: ${issue.parameter}`)
          assert.isBelow(answer.size, 2000, what)
        }
        // As deep as the cap allows: the route's own answer (not the right shape), not the depth.
        const atCap = "[".repeat(JsonBody.MAX_DEPTH) + "]".repeat(JsonBody.MAX_DEPTH)
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

  it.live("N4: a batch with thousands of unknown keys gets a refusal of a few KB: the first 20 issues and the count of the rest", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        const element: Record<string, unknown> = { destination: "https://example.com/x" }
        for (let i = 0; i < 5000; i++) element[`k${i}`] = 0
        const request = JSON.stringify([element])
        const answer = yield* call("/v2/batch", send("POST", request))
        assert.strictEqual(answer.status, 400)
        assert.isBelow(answer.size, 8000, `a ${request.length}-byte request got ${answer.size} bytes`)
        const issues: ReadonlyArray<{ parameter: string; problem: string }> = answer.body.issues
        assert.strictEqual(issues.length, MAX_ISSUES + 1)
        assert.deepStrictEqual(issues.slice(0, 3).map((issue) => issue.parameter), ["[0].k0", "[0].k1", "[0].k2"])
        assert.include(issues[0]!.problem, "is not a known field")
        assert.deepStrictEqual(issues[MAX_ISSUES], {
          in: "body",
          parameter: "",
          problem: `${5000 - MAX_ISSUES} more issues are not listed: a refusal names the first ${MAX_ISSUES}`
        } as any)
        assert.include(answer.body.message, "body field \"[0].k0\": is not a known field")
        assert.include(answer.body.message, `${5000 - MAX_ISSUES} more issues are not listed`)
        assert.notInclude(answer.body.message, "[0].k20\"")

        // Lists the queue builds itself (one issue per bad destination), and a QueueApi route's.
        const destinations = yield* call("/v2/batch", json("POST", Array.from({ length: 200 }, () => ({ destination: "ftp:x" }))))
        assert.strictEqual(destinations.status, 400)
        assert.strictEqual(destinations.body.issues.length, MAX_ISSUES + 1)
        assert.include(destinations.body.issues[MAX_ISSUES].problem, "180 more issues")
        const queue: Record<string, unknown> = { queueName: "q" }
        for (let i = 0; i < 5000; i++) queue[`x${i}`] = i
        const queues = yield* call("/v2/queues", json("POST", queue))
        assert.strictEqual(queues.status, 400)
        assert.strictEqual(queues.body.issues.length, MAX_ISSUES + 1)
        assert.isBelow(queues.size, 6000)

        // One 100 KB unknown key: named by its first 200 characters, not echoed whole (twice).
        const long = "k".repeat(100_000)
        const named = yield* call("/v2/batch", json("POST", [{ destination: "https://example.com/x", [long]: 1 }]))
        assert.strictEqual(named.status, 400)
        assert.isBelow(named.size, 2000)
        assert.strictEqual(named.body.issues[0].parameter, `[0].${"k".repeat(195)}…`)
      })
    ))

  it.live("N8: a svc- query parameter given twice (in any case) is a 400 naming it on publish, enqueue and schedule; nothing is stored", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        const routes = [
          "/v2/publish/https://example.com/x",
          "/v2/enqueue/fifo/https://example.com/x",
          "/v2/schedules/https://example.com/x"
        ]
        const cases: ReadonlyArray<readonly [string, string, string]> = [
          ["svc-delay=1d&svc-delay=2d", "svc-delay", "is given twice: give it once"],
          ["svc-forward-X-A=1&svc-forward-x-a=2", "svc-forward-X-A", "is given twice, as \"svc-forward-X-A\" and \"svc-forward-x-a\""],
          ["SVC-RETRIES=1&id=7&svc-retries=1", "SVC-RETRIES", "is given twice"],
          ["%73vc-delay=1d&svc-delay=1d", "svc-delay", "is given twice"],
          ["svc_token=a&svc_token=b", "svc_token", "is given twice: give it once"],
          // a name with white space was dropped and applied nowhere (the defaults, without a word)
          ["svc-retries%20=5", "svc-retries ", `the name holds white space (a '+' in a query string is a space): give it as "svc-retries"`],
          ["svc-retries+=1e3", "svc-retries ", "the name holds white space"],
          ["svc-%C2%A0delay=1d", "svc-\u00a0delay", "the name holds white space"]
        ]
        for (const route of routes) {
          for (const [query, parameter, problem] of cases) {
            const answer = yield* call(`${route}?${query}`, { method: "POST", body: "x", headers: { "svc-cron": "0 * * * *" } })
            const what = `${route}?${query}`
            assert.strictEqual(answer.status, 400, `${what}: ${JSON.stringify(answer.body)}`)
            assert.deepStrictEqual(answer.body.issues.map((i: any) => [i.in, i.parameter]), [["query", parameter]], what)
            assert.include(answer.body.issues[0].problem, problem, what)
          }
        }
        // Without the bearer header, the token given twice is no token, in either order: the last one
        // won (`svc_token=<right>&svc_token=wrong` was refused, the reverse stored the message)
        for (const query of ["svc_token=right&svc_token=wrong", "svc_token=wrong&svc_token=right"]) {
          const answer = yield* call(`/v2/publish/https://example.com/x?${query.replaceAll("right", TOKEN)}`, { method: "POST", body: "x", token: null })
          assert.strictEqual(answer.status, 401, query)
        }
        // Three times is still one issue; other parameters given twice are the destination's own.
        const thrice = yield* call("/v2/publish/https://example.com/x?svc-delay=1s&svc-delay=2s&svc-delay=3s", { method: "POST", body: "x" })
        assert.strictEqual(thrice.body.issues.length, 1)
        assert.strictEqual(yield* createdCount(call), 0)
        assert.strictEqual((yield* call("/v2/schedules")).body.schedules.length, 0)
        const once = yield* call("/v2/publish/https://example.com/x?id=1&id=2&svc-delay=1d&svc-retries=2", { method: "POST", body: "x" })
        assert.strictEqual(once.status, 201, JSON.stringify(once.body))
        const stored = (yield* call(`/v2/messages/${once.body.messageId}`)).body
        assert.strictEqual(stored.url, "https://example.com/x?id=1&id=2")
        assert.strictEqual(stored.maxRetries, 2)
      })
    ))

  it.live("N8: a JSON key given twice in one object is a 400 naming it; nothing is changed", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        const kept = yield* call("/v2/publish/https://example.com/keep-me", { method: "POST", body: "x", headers: { "svc-delay": "1h" } })
        const cases: ReadonlyArray<readonly [string, string, string, string]> = [
          ["POST", "/v2/queues", `{"queueName":"dupA","queueName":"dupB"}`, "queueName"],
          ["DELETE", "/v2/messages", `{"filter":{"fromDate":0,"url":"https://example.com/none","url":"https://example.com/keep-me"}}`, "filter.url"],
          // The same key spelt with an escape is the same key.
          ["DELETE", "/v2/messages", `{"filter":{"url":"https://example.com/none","\\u0075rl":"https://example.com/keep-me"}}`, "filter.url"],
          ["POST", "/v2/batch", `[{"destination":"https://example.com/a"},{"destination":"https://example.com/a","body":"x","destination":"https://example.com/b"}]`, "[1].destination"],
          ["POST", "/v2/batch", `[{"destination":"https://example.com/a","headers":{"Svc-Delay":"1s","Svc-Delay":"1d"}}]`, "[0].headers.Svc-Delay"],
          ["PATCH", "/v2/topics/dup", `{"headers":{"X-A":"1"},"headers":{"X-A":"2"}}`, "headers"]
        ]
        for (const [method, path, body, parameter] of cases) {
          const answer = yield* call(path, send(method, body))
          assert.strictEqual(answer.status, 400, `${body}: ${JSON.stringify(answer.body)}`)
          assert.deepStrictEqual(answer.body.issues.map((i: any) => i.parameter), [parameter], body)
          assert.include(answer.body.issues[0].problem, "is given twice in one object", body)
        }
        assert.strictEqual((yield* call(`/v2/messages/${kept.body.messageId}`)).body.state, "queued")
        assert.deepStrictEqual((yield* call("/v2/queues")).body.queues, [])
        assert.strictEqual(yield* createdCount(call), 1)
        // The same key in two objects, and a value that looks like a key, are fine.
        const fine = yield* call("/v2/batch", send("POST", `[{"destination":"https://example.com/a","body":"\\"destination\\":"},{"destination":"https://example.com/a"}]`))
        assert.strictEqual(fine.status, 201, JSON.stringify(fine.body))
      })
    ))

  it.live("an id with a control or invisible character says what is wrong with it, not only 'expected an id'", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        const cases: ReadonlyArray<readonly [string, string, string, string]> = [
          ["GET", "/v2/messages/%00", "messageId", "must not contain control characters (U+0000 at position 1)"],
          ["DELETE", "/v2/messages/ab%0Acd", "messageId", "must not contain control characters (U+000A at position 3)"],
          ["GET", "/v2/dlq/%7F", "dlqId", "must not contain control characters (U+007F at position 1)"],
          ["DELETE", "/v2/dlq/%E2%80%8F", "dlqId", "must not contain invisible characters or spaces (U+200F at position 1)"],
          ["POST", "/v2/dlq/a%20b/retry", "dlqId", "must not contain invisible characters or spaces (U+0020 at position 2)"],
          ["GET", "/v2/messages/caf%C3%A9", "messageId", "must not contain \"é\" (U+00E9 at position 4)"],
          ["GET", `/v2/messages/${"a".repeat(65)}`, "messageId", "must be at most 64 characters long"]
        ]
        for (const [method, path, parameter, problem] of cases) {
          const answer = yield* call(path, { method })
          assert.strictEqual(answer.status, 400, path)
          assert.deepStrictEqual(answer.body.issues.map((i: any) => [i.in, i.parameter]), [["path", parameter]], path)
          assert.include(answer.body.issues[0].problem, problem, path)
          assert.include(answer.body.issues[0].problem, "an id is 1 to 64 ASCII letters, digits, '_' or '-'", path)
        }
        assert.strictEqual((yield* call("/v2/messages/no-such_id")).status, 404)
      })
    ))
})
