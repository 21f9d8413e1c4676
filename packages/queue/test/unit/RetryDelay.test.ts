/** `Svc-Retry-Delay`'s grammar (src/RetryDelay.ts): evaluation, the cap, and every refusal named. */
import { assert, describe, it } from "@effect/vitest"
import { evaluateRetryDelay, notANumberAt, parseRetryDelay } from "../../src/RetryDelay.ts"

describe("Svc-Retry-Delay expressions", () => {
  it("evaluates the grammar and caps the result", () => {
    assert.strictEqual(evaluateRetryDelay("pow(2, retried) * 1000", 3, 1e9), 8000)
    assert.strictEqual(evaluateRetryDelay("min(60000, 1000 + retried * 5000)", 20, 1e9), 60000)
    assert.strictEqual(evaluateRetryDelay("max(abs(-5), 2) * (1 + 1) / 4 - -1", 0, 1e9), 4)
    assert.strictEqual(evaluateRetryDelay("pow(10, retried)", 12, 5000), 5000)
    assert.strictEqual(evaluateRetryDelay("1 / 0", 0, 5000), 5000)
    assert.strictEqual(evaluateRetryDelay("0 / 0", 0, 5000), 5000)
    assert.strictEqual(evaluateRetryDelay("-100", 0, 5000), 0)
  })

  it("finds the first retried for which an expression is not a number, up to the most retries", () => {
    const at = (text: string, maxRetries = 100) => {
      const parsed = parseRetryDelay(text)
      if ("problem" in parsed) throw new Error(parsed.problem)
      return notANumberAt(parsed.expression, maxRetries)
    }
    assert.strictEqual(at("0 / 0"), 0)
    assert.strictEqual(at("pow(-1, 0.5)"), 0)
    assert.strictEqual(at("retried / retried"), 0)
    assert.strictEqual(at("1000 * (retried - 7) / (retried - 7)"), 7)
    assert.strictEqual(at("1 / (retried - 7) - 1 / (retried - 7)"), 7)
    assert.isUndefined(at("1 / (retried - 7) - 1 / (retried - 7)", 6), "never reached with at most 6 retries")
    // Infinity is a number: the worker caps it
    assert.isUndefined(at("1000 / retried"))
    assert.isUndefined(at("pow(2, retried) * 1000"))
  })

  it("refuses anything outside the grammar, naming the problem", () => {
    const problem = (text: string) => {
      const parsed = parseRetryDelay(text)
      return "problem" in parsed ? parsed.problem : undefined
    }
    assert.match(problem("eval(1)")!, /unknown name "eval"/)
    assert.match(problem("process.exit()")!, /unexpected "\."|unknown name/)
    assert.match(problem("pow(2)")!, /pow takes 2 arguments, got 1/)
    assert.match(problem("retried +")!, /ends too early/)
    assert.match(problem("(1 + 2")!, /expected "\)"/)
    assert.match(problem("1 2")!, /unexpected "2"/)
    assert.match(problem("retried; 1")!, /unexpected character ";"/)
    assert.match(problem("")!, /empty/)
    assert.match(problem("1+".repeat(150) + "1")!, /longer than 200/)
    assert.isUndefined(problem("  pow(2, retried) * 1000 "))
    // names an object inherits are not functions of the grammar
    for (const name of ["constructor", "toString", "valueOf", "hasOwnProperty", "__proto__", "isPrototypeOf"]) {
      assert.match(problem(`${name}(1)`)!, new RegExp(`unknown name "${name}" at position 1`), name)
      assert.match(problem(name)!, new RegExp(`unknown name "${name}"`), name)
    }
    // a token is named as written
    assert.match(problem("1..2")!, /unexpected "\.2" at position 3/)
  })
})

