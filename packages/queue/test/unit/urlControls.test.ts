/**
 * A control character (U+0000-U+001F, U+007F) anywhere in a URL the queue would store is a 400
 * naming the field and the character, nothing stored (the audit: the WHATWG parser drops tab, LF and
 * CR anywhere and C0 controls at the ends, so `http://93.18\n4.216.34/c` was stored and delivered as
 * `http://93.184.216.34/c`). One rule (`Publish.ts` `checkUrl`) for every way a URL comes in.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { type Call, json, withQueue } from "./webQueue.ts"

const post = (headers: Record<string, string> = {}): RequestInit => ({
  method: "POST",
  body: "x",
  headers: { "svc-cron": "0 0 1 1 *", ...headers }
})

/** Nothing stored anywhere: no message event, no schedule, no group. */
const nothingStored = (call: Call, what: string) =>
  Effect.gen(function*() {
    const events = (yield* call("/v2/events?count=1000")).body.events
    assert.deepStrictEqual(events, [], what)
    assert.deepStrictEqual((yield* call("/v2/schedules")).body.schedules, [], what)
    assert.deepStrictEqual((yield* call("/v2/topics")).body.topics, [], what)
  })

const refused = (answer: { readonly status: number; readonly body: any }, parameter: string, problem: string, what: string) => {
  assert.strictEqual(answer.status, 400, `${what}: ${JSON.stringify(answer.body)}`)
  assert.strictEqual(answer.body.code, "invalid_request", what)
  const issue = answer.body.issues.find((i: any) => i.parameter === parameter)
  assert.isDefined(issue, `${what}: ${JSON.stringify(answer.body.issues)}`)
  assert.strictEqual(issue.problem, problem, what)
  assert.include(answer.body.message, parameter, what)
}

describe("control characters in URLs", () => {
  it.live("are refused in the destination of publish, enqueue and schedule (the path is decoded first)", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        const cases: ReadonlyArray<readonly [string, string]> = [
          ["http%3A%2F%2F93.18%0A4.216.34%2Fc", "U+000A at position 13"],
          ["http%3A%2F%2F93.184.216.34%2Fa%09b", "U+0009 at position 23"],
          ["http%3A%2F%2F93.184.216.34%2Fa%0Db", "U+000D at position 23"],
          ["http%3A%2F%2F93.184.216.34%2Fa%00", "U+0000 at position 23"],
          ["http%3A%2F%2F93.184.216.34%2Fa%01", "U+0001 at position 23"],
          ["http%3A%2F%2F93.184.216.34%2Fa%1F", "U+001F at position 23"],
          ["http%3A%2F%2F93.184.216.34%2Fa%7F", "U+007F at position 23"]
        ]
        for (const route of ["/v2/publish/", "/v2/enqueue/fifo/", "/v2/schedules/"]) {
          for (const [destination, found] of cases) {
            const what = `${route}${destination}`
            refused(
              yield* call(what, post()),
              "destination",
              `must not contain control characters (found ${found})`,
              what
            )
          }
        }
        yield* nothingStored(call, "destinations")
      })
    ))

  it.live("are refused in a batch element's destination", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        for (const [url, found] of [["http://93.184.216.34/a\tb", "U+0009"], ["http://93.184.216.34/a\nb", "U+000A"], ["http://93.184.216.34/a\u0001b", "U+0001"]]) {
          const answer = yield* call("/v2/batch", json("POST", [{ destination: "https://example.com/ok" }, { destination: url }]))
          refused(answer, "[1].destination", `must not contain control characters (found ${found} at position 23)`, JSON.stringify(url))
        }
        yield* nothingStored(call, "batch")
      })
    ))

  it.live("are refused in callbacks and failure callbacks, as headers and in the query", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        const cases: ReadonlyArray<readonly [RequestInit, string, string, string]> = [
          [post({ "svc-failure-callback": "http://93.1\t84.216.34/f" }), "", "Svc-Failure-Callback", "U+0009 at position 12"],
          [post({ "svc-callback": "http://93.184.216.34/c\tb" }), "", "Svc-Callback", "U+0009 at position 23"],
          [post(), "?svc-callback=http%3A%2F%2F93.184.216.34%2Fcb%09x%01", "svc-callback", "U+0009 at position 24"],
          // a trailing tab or LF of a query value is not white space to trim: the parser would drop it too
          [post(), "?svc-failure-callback=http%3A%2F%2F93.184.216.34%2Ff%09", "svc-failure-callback", "U+0009 at position 23"],
          [post(), "?svc-callback=http%3A%2F%2F93.184.216.34%2Fc%0A", "svc-callback", "U+000A at position 23"],
          [post(), "?svc-callback=%01http%3A%2F%2F93.184.216.34%2Fc", "svc-callback", "U+0001 at position 1"]
        ]
        for (const route of ["/v2/publish/https://example.com/x", "/v2/enqueue/fifo/https://example.com/x", "/v2/schedules/https://example.com/x"]) {
          for (const [init, query, parameter, found] of cases) {
            const what = `${route}${query} ${JSON.stringify(init.headers)}`
            refused(yield* call(`${route}${query}`, init), parameter, `must not contain control characters (found ${found})`, what)
          }
        }
        yield* nothingStored(call, "callbacks")
        // white space around a callback is still trimmed
        const spaced = yield* call("/v2/publish/https://example.com/x?svc-callback=%20https%3A%2F%2Fexample.com%2Fcb%20", { method: "POST", body: "x" })
        assert.strictEqual(spaced.status, 201, JSON.stringify(spaced.body))
        assert.strictEqual((yield* call(`/v2/messages/${spaced.body.messageId}`)).body.callback.url, "https://example.com/cb")
      })
    ))

  it.live("are refused in a URL group's endpoints", () =>
    withQueue((call) =>
      Effect.gen(function*() {
        const answer = yield* call("/v2/topics/tctl/endpoints", json("POST", { endpoints: [{ url: "http://93.184.216.34/e\tp\u0001" }] }))
        refused(answer, "endpoints[0].url", "must not contain control characters (found U+0009 at position 23)", "endpoint")
        yield* nothingStored(call, "endpoints")
      })
    ))
})
