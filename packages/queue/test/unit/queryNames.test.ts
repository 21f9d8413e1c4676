/**
 * The names of the queue's query parameters: a route that takes some refuses any other, naming it and
 * the ones the route takes. They were ignored, so a misspelt filter (`/v2/events?messageid=…`,
 * `/v2/dlq?responsestatus=500`) answered the whole list as if unfiltered. Every such route is found in
 * the OpenAPI document, so a new one is covered too.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { withQueue } from "./webQueue.ts"

describe("names in the queue's query strings", () => {
  it.live("a parameter a route does not take is a 400 naming it and the route's own; its own are taken", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        const document = (yield* call("/openapi.json", { token: null })).body
        const routes: Array<readonly [string, ReadonlyArray<string>]> = []
        for (const [path, operations] of Object.entries<any>(document.paths)) {
          const names = (operations.get?.parameters ?? []).filter((p: any) => p.in === "query").map((p: any) => p.name)
          if (names.length > 0) routes.push([path, names])
        }
        // the list routes: events, DLQ, topics, queues, flow control, schedules
        assert.sameMembers(routes.map(([path]) => path), ["/v2/events", "/v2/dlq", "/v2/topics", "/v2/queues", "/v2/flow-control", "/v2/schedules"])
        for (const [path, names] of routes) {
          for (const unknown of ["bogus", names[0]!.toLowerCase() === names[0] ? names[0]!.toUpperCase() : names[0]!.toLowerCase()]) {
            const refused = yield* call(`${path}?${unknown}=1`)
            const what = `${path}?${unknown}=1`
            assert.strictEqual(refused.status, 400, `${what}: ${JSON.stringify(refused.body)}`)
            assert.strictEqual(refused.body.code, "invalid_request", what)
            assert.deepStrictEqual(refused.body.issues.map((issue: any) => [issue.in, issue.parameter]), [["query", unknown]], what)
            assert.strictEqual(refused.body.issues[0].problem, `is not a parameter of this route (it takes ${names.join(", ")})`, what)
          }
        }
        // a misspelt filter beside a good one: still refused, not half applied
        const misspelt = yield* call("/v2/events?messageid=0190a4f4-0000-7000-8000-000000000000&count=5")
        assert.strictEqual(misspelt.status, 400, JSON.stringify(misspelt.body))
        assert.include(misspelt.body.message, `query parameter "messageid": is not a parameter of this route`)
        const known = yield* call("/v2/events?messageId=0190a4f4-0000-7000-8000-000000000000&count=5")
        assert.strictEqual(known.status, 200, JSON.stringify(known.body))
        assert.deepStrictEqual(known.body.events, [])
      })
    ))
})
