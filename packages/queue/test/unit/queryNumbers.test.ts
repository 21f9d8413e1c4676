/**
 * The numbers of the queue's query strings (`count`, `fromDate`, `toDate`, `limit`, `responseStatus`)
 * are decimal digits and nothing else (`IntParam` of @svc/schema): they went through JavaScript's
 * number parsing, so `count=1e1`, `limit=10.0` or `responseStatus=+500` were answered as 10, 10 and
 * 500 (an outside audit). Every such parameter is found in the OpenAPI document (its `pattern`), so a
 * new one that parses numbers another way is caught here too.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { withQueue } from "./webQueue.ts"

/** Every numeric query parameter of the queue's API, with a value it takes. */
const NUMERIC = [
  ["/v2/events", "count", "10"],
  ["/v2/events", "fromDate", "0"],
  ["/v2/events", "toDate", "1700000000000"],
  ["/v2/dlq", "limit", "10"],
  ["/v2/dlq", "responseStatus", "500"],
  ["/v2/topics", "limit", "10"],
  ["/v2/queues", "limit", "10"],
  ["/v2/flow-control", "limit", "10"],
  ["/v2/schedules", "limit", "10"]
] as const

/** What JavaScript's `Number()` takes and a plain decimal integer is not (the last three: the audit's others). */
const NOT_PLAIN = ["1e1", " 10", "10 ", "0x10", "10.0", "+5", "-1", "", "1_000", "Infinity", "１０", "0b1", "10%00"]

describe("numbers in the queue's query strings", () => {
  it.live("the OpenAPI document gives every numeric query parameter the decimal-digits pattern, none JavaScript's number syntax", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        const document = (yield* call("/openapi.json", { token: null })).body
        const numeric: Array<readonly [string, string]> = []
        for (const [path, operations] of Object.entries<any>(document.paths)) {
          for (const operation of Object.values<any>(operations)) {
            for (const parameter of operation.parameters ?? []) {
              if (parameter.in !== "query") continue
              const pattern: string | undefined = parameter.schema?.pattern
              // effect's number-from-string pattern (an exponent, a sign, a fraction) must be gone
              assert.isFalse(pattern !== undefined && /[Ee]/.test(pattern), `${path} ${parameter.name}: ${pattern}`)
              if (pattern === "^[0-9]+$") numeric.push([path, parameter.name])
            }
          }
        }
        assert.sameDeepMembers(numeric, NUMERIC.map(([path, name]) => [path, name] as const))
      })
    ))

  it.live("anything but decimal digits is a 400 naming the parameter and the value; digits are taken", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        for (const [path, name, good] of NUMERIC) {
          const taken = yield* call(`${path}?${name}=${good}`)
          assert.strictEqual(taken.status, 200, `${path}?${name}=${good}: ${JSON.stringify(taken.body)}`)
          for (const value of NOT_PLAIN) {
            const sent = value === "10%00" ? value : encodeURIComponent(value)
            const refused = yield* call(`${path}?${name}=${sent}`)
            const what = `${path}?${name}=${sent}`
            assert.strictEqual(refused.status, 400, `${what}: ${JSON.stringify(refused.body)}`)
            assert.strictEqual(refused.body.code, "invalid_request", what)
            assert.deepStrictEqual(refused.body.issues.map((issue: any) => issue.parameter), [name], what)
            const [issue] = refused.body.issues
            assert.include(issue.problem, "decimal digits", what)
            assert.include(issue.problem, `got ${JSON.stringify(value === "10%00" ? "10\u0000" : value)}`, what)
            assert.include(refused.body.message, name, what)
          }
        }
      })
    ))

  it.live("the digits are the number: leading zeros are decimal, beyond the range is still the range's 400", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        for (const name of ["g-a", "g-b", "g-c"]) {
          yield* call(`/v2/topics/${name}/endpoints`, {
            method: "POST",
            body: JSON.stringify({ endpoints: [{ url: `https://${name}.example.com/` }] }),
            headers: { "content-type": "application/json" }
          })
        }
        // 010 is ten (not octal eight): all three
        assert.strictEqual((yield* call("/v2/topics?limit=010")).body.topics.length, 3)
        assert.strictEqual((yield* call("/v2/topics?limit=02")).body.topics.length, 2)
        for (const [query, name] of [["limit=101", "limit"], ["limit=0", "limit"], ["count=99999999999999999999999", "count"], ["responseStatus=99", "responseStatus"]] as const) {
          const path = name === "count" ? "/v2/events" : name === "responseStatus" ? "/v2/dlq" : "/v2/topics"
          const refused = yield* call(`${path}?${query}`)
          assert.strictEqual(refused.status, 400, `${path}?${query}`)
          assert.deepStrictEqual(refused.body.issues.map((issue: any) => issue.parameter), [name], query)
          assert.include(refused.body.issues[0].problem, "out of range", query)
        }
      })
    ))

  it.live("publish, enqueue, schedules: a number given as a svc- query parameter is digits alone; '+3' (a space in a query) was taken as 3", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        const routes = [
          ["/v2/publish/https://example.com/x", {}],
          ["/v2/enqueue/fifo/https://example.com/x", {}],
          ["/v2/schedules/https://example.com/x", { "svc-cron": "* * * * *" }]
        ] as const
        const values = [["svc-retries", "3"], ["svc-delay", "10"], ["svc-timeout", "10s"], ["svc-not-before", "1"]] as const
        for (const [route, headers] of routes) {
          for (const [name, good] of values) {
            if (name === "svc-not-before" && route.startsWith("/v2/schedules")) continue
            const taken = yield* call(`${route}?${name}=${good}`, { method: "POST", body: "m", headers })
            assert.include([200, 201], taken.status, `${route}?${name}=${good}: ${JSON.stringify(taken.body)}`)
            for (const [sent, value] of [[`+${good}`, ` ${good}`], [`${good}+`, `${good} `], [`%20${good}`, ` ${good}`], [`%09${good}`, `\t${good}`]]) {
              const what = `${route}?${name}=${sent}`
              const refused = yield* call(`${route}?${name}=${sent}`, { method: "POST", body: "m", headers })
              assert.strictEqual(refused.status, 400, `${what}: ${JSON.stringify(refused.body)}`)
              assert.deepStrictEqual(refused.body.issues.map((issue: any) => issue.parameter), [name], what)
              assert.include(refused.body.issues[0].problem, `got ${JSON.stringify(value)}`, what)
            }
          }
        }
      })
    ))
})
