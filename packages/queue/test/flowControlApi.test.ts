/**
 * Flow control through the HTTP API of one running queue (HTTP + worker, a fresh database): the
 * header, query and URL-group default forms, refusals naming the bad value, the rule for differing
 * limits of one key, the key's view, and pause/resume.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, Destination, poll, publish, queueLayer } from "./support.ts"

const flow = (key: string) => Effect.map(call(`/v2/flow-control/${key}`), (answer) => answer)

const issuesOf = (body: any): Array<string> => body.issues.map((issue: any) => `${issue.in} ${issue.parameter}: ${issue.problem}`)

layer(queueLayer(), { timeout: 120_000, excludeTestServices: true })("flow control API", (it) => {
  it.effect("bad values: 400 naming the header or parameter and each bad part; nothing enqueued", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const bad = yield* publish(`${dest.baseUrl}/x`, {
        headers: { "Svc-Flow-Control-Key": "bad", "Svc-Flow-Control-Value": "parallelism=0, rate=x, period=5ms, burst=3" }
      })
      assert.strictEqual(bad.status, 400)
      assert.strictEqual(bad.body.code, "invalid_request")
      const [issue, ...rest] = issuesOf(bad.body)
      assert.deepStrictEqual(rest, [])
      assert.match(issue!, /^header Svc-Flow-Control-Value: /)
      assert.match(issue!, /unknown part "burst=3"/)
      assert.match(issue!, /parallelism must be an integer from 1 to 1000, got "0"/)
      assert.match(issue!, /rate must be an integer from 1 to 10000, got "x"/)
      assert.match(issue!, /period must be a duration from 1s to 1d/)

      const noValue = yield* publish(`${dest.baseUrl}/x`, { headers: { "Svc-Flow-Control-Key": "bad" } })
      assert.deepStrictEqual(issuesOf(noValue.body), [
        "header Svc-Flow-Control-Key: needs Svc-Flow-Control-Value with parallelism=<n> and/or rate=<n>"
      ])
      const noKey = yield* publish(`${dest.baseUrl}/x`, { query: "svc-flow-control-value=parallelism%3D2" })
      assert.deepStrictEqual(issuesOf(noKey.body), ["query svc-flow-control-value: is given without Svc-Flow-Control-Key"])
      const badKey = yield* publish(`${dest.baseUrl}/x`, {
        query: "svc-flow-control-key=a%20b&svc-flow-control-value=period%3D10s"
      })
      assert.strictEqual(badKey.status, 400)
      const badKeyIssues = issuesOf(badKey.body)
      assert.match(badKeyIssues[0]!, /^query svc-flow-control-key: expected 1 to 100 letters/)
      assert.match(badKeyIssues[1]!, /^query svc-flow-control-value: expected parallelism=<n> and\/or rate=<n>/)

      // A URL group's defaults are checked by the same rules when they are set.
      yield* call("/v2/topics/fc-group/endpoints", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ endpoints: [{ url: `${dest.baseUrl}/grouped` }] })
      })
      const badDefaults = yield* call("/v2/topics/fc-group", {
        method: "PATCH",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ headers: { "Svc-Flow-Control-Key": "g", "Svc-Flow-Control-Value": "parallelism=many" } })
      })
      assert.strictEqual(badDefaults.status, 400)
      assert.match(issuesOf(badDefaults.body)[0]!, /^body headers\.Svc-Flow-Control-Value: parallelism must be/)

      // Nothing was stored for any of them.
      assert.deepStrictEqual((yield* call("/v2/flow-control")).body, { flowControls: [] })
      assert.strictEqual((yield* flow("bad")).status, 404)
      assert.strictEqual((yield* flow("bad")).body.code, "flow_control_not_found")
    }))

  it.effect("URL-group default headers give every publish to the group its key", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      yield* call("/v2/topics/fc-defaults/endpoints", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ endpoints: [{ url: `${dest.baseUrl}/d1` }, { url: `${dest.baseUrl}/d2` }] })
      })
      const patched = yield* call("/v2/topics/fc-defaults", {
        method: "PATCH",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ headers: { "Svc-Flow-Control-Key": "from-group", "Svc-Flow-Control-Value": "parallelism=4, rate=50, period=10s" } })
      })
      assert.strictEqual(patched.status, 200, JSON.stringify(patched.body))
      assert.strictEqual((yield* publish("fc-defaults")).status, 201)
      yield* dest.waitFor("/d1", 1)
      yield* dest.waitFor("/d2", 1)
      const key = yield* poll(flow("from-group"), (answer) => answer.status === 200 && answer.body.waiting + answer.body.inFlight === 0, "5 seconds", () => "drained")
      assert.deepStrictEqual(key.body, {
        flowControlKey: "from-group",
        parallelism: 4,
        rate: 50,
        periodMs: 10_000,
        waiting: 0,
        inFlight: 0,
        startedInPeriod: 2,
        paused: false
      })
    }))

  it.effect("differing limits: the highest wins while the key has queued messages; once drained, the next publish's", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const send = (value: string) =>
        publish(`${dest.baseUrl}/later`, { headers: { "Svc-Flow-Control-Key": "mixed", "Svc-Flow-Control-Value": value, "Svc-Delay": "1h" } })
      const ids: Array<string> = []
      const limits = Effect.map(flow("mixed"), ({ body }) => [body.parallelism, body.rate, body.periodMs])
      ids.push((yield* send("parallelism=2, rate=10, period=1s")).body.messageId)
      assert.deepStrictEqual(yield* limits, [2, 10, 1000])
      ids.push((yield* send("parallelism=5, rate=100, period=1m")).body.messageId)
      // parallelism 5 > 2; 100 per minute (1.7/s) < 10 per second: the rate stays.
      assert.deepStrictEqual(yield* limits, [5, 10, 1000])
      ids.push((yield* send("parallelism=1, rate=20")).body.messageId)
      assert.deepStrictEqual(yield* limits, [5, 20, 1000])
      // No limit of a kind beats any limit.
      ids.push((yield* send("rate=1")).body.messageId)
      assert.deepStrictEqual(yield* limits, [undefined, 20, 1000])
      assert.strictEqual((yield* flow("mixed")).body.waiting, 4)
      // The old messages drain (here: cancelled); the next publish sets the limits.
      for (const id of ids) assert.strictEqual((yield* call(`/v2/messages/${id}`, { method: "DELETE" })).status, 204)
      yield* send("parallelism=1")
      assert.deepStrictEqual(yield* limits, [1, undefined, 1000])
    }))

  it.effect("pause holds a key's messages (not failed, not retried); resume delivers them", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      const headers = { "Svc-Flow-Control-Key": "pausable", "Svc-Flow-Control-Value": "parallelism=1" }
      yield* publish(`${dest.baseUrl}/p`, { headers, body: "one" })
      yield* dest.waitFor("/p", 1)
      const paused = yield* call("/v2/flow-control/pausable/pause", { method: "POST" })
      assert.strictEqual(paused.status, 200)
      assert.strictEqual(paused.body.paused, true)
      const held = yield* publish(`${dest.baseUrl}/p`, { headers, body: "two" })
      yield* Effect.sleep("600 millis")
      assert.strictEqual(dest.requests("/p").length, 1)
      const message = (yield* call(`/v2/messages/${held.body.messageId}`)).body
      assert.strictEqual(message.state, "queued")
      assert.strictEqual(message.retried, 0)
      assert.strictEqual((yield* flow("pausable")).body.waiting, 1)
      assert.strictEqual((yield* call("/v2/flow-control")).body.flowControls.find((f: any) => f.flowControlKey === "pausable").paused, true)
      const resumed = yield* call("/v2/flow-control/pausable/resume", { method: "POST" })
      assert.strictEqual(resumed.body.paused, false)
      const [, second] = yield* dest.waitFor("/p", 2)
      assert.strictEqual(second!.body.toString(), "two")
      assert.strictEqual((yield* call("/v2/flow-control/nope/pause", { method: "POST" })).status, 404)
    }))

  it.effect("the key list comes in pages by key with a cursor (limit 1-100); a bad cursor or limit is a 400 naming it", () =>
    Effect.gen(function*() {
      const dest = yield* Destination
      for (const key of ["page-a", "page-b", "page-c"]) {
        yield* publish(`${dest.baseUrl}/paged`, { headers: { "Svc-Flow-Control-Key": key, "Svc-Flow-Control-Value": "rate=100" } })
      }
      const first = (yield* call("/v2/flow-control?cursor=page-&limit=2")).body
      assert.deepStrictEqual(first.flowControls.map((f: any) => f.flowControlKey), ["page-a", "page-b"])
      assert.strictEqual(first.cursor, "page-b")
      const rest = (yield* call(`/v2/flow-control?cursor=${first.cursor}&limit=2`)).body
      assert.strictEqual(rest.flowControls[0].flowControlKey, "page-c")
      for (const [query, parameter] of [["cursor=..", "cursor"], ["cursor=a%20b", "cursor"], ["limit=0", "limit"], ["limit=101", "limit"]]) {
        const refused = yield* call(`/v2/flow-control?${query}`)
        assert.strictEqual(refused.status, 400, query)
        assert.deepStrictEqual(refused.body.issues.map((issue: any) => issue.parameter), [parameter], query)
      }
    }))
})
