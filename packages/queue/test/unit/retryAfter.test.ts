/** A destination's `Retry-After` (src/Delivery.ts `retryAfterMs`): delta-seconds or an HTTP-date, else ignored. */
import { assert, describe, it } from "@effect/vitest"
import { retryAfterMs } from "../../src/Delivery.ts"

const now = Date.parse("2026-01-01T00:00:00Z")
const after = (value: string) => retryAfterMs({ "retry-after": [value] }, now)

describe("Retry-After", () => {
  it("takes delta-seconds and the three HTTP-date forms", () => {
    assert.strictEqual(after("120"), 120_000)
    assert.strictEqual(after(" 0 "), 0)
    assert.strictEqual(after("Thu, 01 Jan 2026 00:00:30 GMT"), 30_000)
    assert.strictEqual(after("Thursday, 01-Jan-26 00:00:30 GMT"), 30_000)
    assert.strictEqual(after("Thu Jan  1 00:00:30 2026"), 30_000)
    // a date already past: at once
    assert.strictEqual(after("Sun, 06 Nov 1994 08:49:37 GMT"), 0)
    assert.isUndefined(retryAfterMs({}, now))
  })

  it("ignores a value that is neither (the normal backoff applies)", () => {
    // Date.parse reads "-5" as the year 2001: it was 0 ms, an immediate retry
    for (const value of ["-5", "-1", "+5", "1.5", "5s", "abc", "2026-01-01T00:00:30Z", "1e3", "", "Thu, 01 Jan 2026"]) {
      assert.isUndefined(after(value), JSON.stringify(value))
    }
  })
})
