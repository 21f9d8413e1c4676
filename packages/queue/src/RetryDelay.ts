/**
 * `Svc-Retry-Delay`: the delay before a retry as an arithmetic expression of `retried` (how many
 * retries the message has had before this one: 0 before the first retry), in milliseconds, e.g.
 * `pow(2, retried) * 1000` or `min(60000, 1000 + retried * 5000)`.
 *
 * A small fixed grammar, parsed here by hand (a recursive descent over a few tokens) and evaluated
 * over the tree; nothing is ever handed to `eval` or `Function`:
 *
 * ```
 * expression := term (("+" | "-") term)*
 * term       := unary (("*" | "/") unary)*
 * unary      := ("-" | "+") unary | primary
 * primary    := number | "retried" | name "(" expression ("," expression)* ")" | "(" expression ")"
 * name       := pow (2 arguments) | min | max (2 or more) | abs (1)
 * ```
 *
 * Parsed at publish (a bad expression is refused there) and again by the worker at each retry; the
 * result is capped by the worker at `QUEUE_RETRY_MAX_DELAY` ({@link evaluateRetryDelay}).
 */

/** Longest expression accepted (characters). */
export const MAX_RETRY_DELAY_LENGTH = 200

export type RetryDelayExpression =
  | { readonly _tag: "Number"; readonly value: number }
  | { readonly _tag: "Retried" }
  | { readonly _tag: "Negate"; readonly operand: RetryDelayExpression }
  | { readonly _tag: "Binary"; readonly operator: "+" | "-" | "*" | "/"; readonly left: RetryDelayExpression; readonly right: RetryDelayExpression }
  | { readonly _tag: "Call"; readonly name: FunctionName; readonly args: ReadonlyArray<RetryDelayExpression> }

type FunctionName = "pow" | "min" | "max" | "abs"

/** How many arguments each function takes: [fewest, most]. */
const ARITY: Record<FunctionName, readonly [number, number]> = { pow: [2, 2], min: [2, 16], max: [2, 16], abs: [1, 1] }

/** A token and where it starts; `text` as written (a number's value is not: "1." is 1). */
type Token =
  | { readonly kind: "number"; readonly value: number; readonly text: string; readonly at: number }
  | { readonly kind: "name"; readonly value: string; readonly text: string; readonly at: number }
  | { readonly kind: "symbol"; readonly value: string; readonly text: string; readonly at: number }

const tokenize = (text: string): Array<Token> | string => {
  const tokens: Array<Token> = []
  let i = 0
  while (i < text.length) {
    const char = text[i]!
    if (char === " " || char === "\t") {
      i++
    } else if (/[0-9.]/.test(char)) {
      const match = /^(\d+(\.\d*)?|\.\d+)/.exec(text.slice(i))
      if (match === null) return `unexpected "." at position ${i + 1}`
      tokens.push({ kind: "number", value: Number(match[0]), text: match[0], at: i })
      i += match[0].length
    } else if (/[A-Za-z_]/.test(char)) {
      const match = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i))!
      tokens.push({ kind: "name", value: match[0], text: match[0], at: i })
      i += match[0].length
    } else if ("+-*/(),".includes(char)) {
      tokens.push({ kind: "symbol", value: char, text: char, at: i })
      i++
    } else {
      return `unexpected character ${JSON.stringify(char)} at position ${i + 1}`
    }
  }
  return tokens
}

class ParseFailure {
  readonly problem: string
  constructor(problem: string) {
    this.problem = problem
  }
}

/** The expression as a tree, or the problem with it (named with its position). */
export const parseRetryDelay = (text: string): { readonly expression: RetryDelayExpression } | { readonly problem: string } => {
  if (text.trim() === "") return { problem: "is empty: expected an expression of retried such as pow(2, retried) * 1000" }
  if (text.length > MAX_RETRY_DELAY_LENGTH) return { problem: `is longer than ${MAX_RETRY_DELAY_LENGTH} characters` }
  const tokens = tokenize(text)
  if (typeof tokens === "string") return { problem: tokens }
  let position = 0
  const peek = () => tokens[position]
  const where = (token: Token | undefined) => token === undefined ? "at the end" : `at position ${token.at + 1}`
  const fail = (problem: string): never => {
    throw new ParseFailure(problem)
  }
  const expect = (symbol: string) => {
    const token = peek()
    if (token?.kind !== "symbol" || token.value !== symbol) fail(`expected "${symbol}" ${where(token)}`)
    position++
  }

  const expression = (): RetryDelayExpression => {
    let left = term()
    for (let token = peek(); token?.kind === "symbol" && (token.value === "+" || token.value === "-"); token = peek()) {
      position++
      left = { _tag: "Binary", operator: token.value, left, right: term() }
    }
    return left
  }
  const term = (): RetryDelayExpression => {
    let left = unary()
    for (let token = peek(); token?.kind === "symbol" && (token.value === "*" || token.value === "/"); token = peek()) {
      position++
      left = { _tag: "Binary", operator: token.value, left, right: unary() }
    }
    return left
  }
  const unary = (): RetryDelayExpression => {
    const token = peek()
    if (token?.kind === "symbol" && (token.value === "-" || token.value === "+")) {
      position++
      const operand = unary()
      return token.value === "-" ? { _tag: "Negate", operand } : operand
    }
    return primary()
  }
  const primary = (): RetryDelayExpression => {
    const token = peek()
    if (token === undefined) return fail("ends too early: expected a number, retried, a function or \"(\"")
    position++
    if (token.kind === "number") return { _tag: "Number", value: token.value }
    if (token.kind === "name") {
      if (token.value === "retried") return { _tag: "Retried" }
      // own keys only: `in` also finds an object's inherited ones (constructor, toString, __proto__)
      if (!Object.hasOwn(ARITY, token.value)) {
        return fail(`unknown name ${JSON.stringify(token.value)} at position ${token.at + 1} (known: retried, pow, min, max, abs)`)
      }
      const name = token.value as FunctionName
      expect("(")
      const args = [expression()]
      while (peek()?.kind === "symbol" && peek()!.value === ",") {
        position++
        args.push(expression())
      }
      expect(")")
      const [fewest, most] = ARITY[name]
      if (args.length < fewest || args.length > most) {
        fail(`${name} takes ${fewest === most ? fewest : `${fewest} to ${most}`} argument${most === 1 ? "" : "s"}, got ${args.length}`)
      }
      return { _tag: "Call", name, args }
    }
    if (token.value === "(") {
      const inner = expression()
      expect(")")
      return inner
    }
    return fail(`unexpected "${token.text}" at position ${token.at + 1}`)
  }

  try {
    const parsed = expression()
    if (position < tokens.length) return { problem: `unexpected "${tokens[position]!.text}" ${where(tokens[position])}` }
    return { expression: parsed }
  } catch (error) {
    if (error instanceof ParseFailure) return { problem: error.problem }
    throw error
  }
}

const OPERATORS: Record<"+" | "-" | "*" | "/", (left: number, right: number) => number> = {
  "+": (left, right) => left + right,
  "-": (left, right) => left - right,
  "*": (left, right) => left * right,
  "/": (left, right) => left / right
}

const FUNCTIONS: Record<FunctionName, (args: ReadonlyArray<number>) => number> = {
  pow: ([base, exponent]) => Math.pow(base!, exponent!),
  min: (args) => Math.min(...args),
  max: (args) => Math.max(...args),
  abs: ([value]) => Math.abs(value!)
}

const evaluate = (expression: RetryDelayExpression, retried: number): number => {
  switch (expression._tag) {
    case "Number":
      return expression.value
    case "Retried":
      return retried
    case "Negate":
      return -evaluate(expression.operand, retried)
    case "Binary":
      return OPERATORS[expression.operator](evaluate(expression.left, retried), evaluate(expression.right, retried))
    case "Call":
      return FUNCTIONS[expression.name](expression.args.map((arg) => evaluate(arg, retried)))
  }
}

/** How many values of `retried` {@link notANumberAt} tries at most: a 200-character expression, 1,000 times, is well under a millisecond. */
const MAX_CHECKED_RETRIES = 1000

/**
 * The first `retried` from 0 to `maxRetries` (at most {@link MAX_CHECKED_RETRIES}) for which the
 * expression is not a number (`0/0`, `retried / retried`, `pow(-1, 0.5)`), so that publish refuses it
 * rather than the worker reading it as the cap; undefined when it is a number for each.
 */
export const notANumberAt = (expression: RetryDelayExpression, maxRetries: number): number | undefined => {
  for (let retried = 0; retried <= Math.min(maxRetries, MAX_CHECKED_RETRIES); retried++) {
    if (Number.isNaN(evaluate(expression, retried))) return retried
  }
  return undefined
}

/**
 * The delay in whole milliseconds before the retry that follows `retried` retries, between 0 and
 * `maxMs`: a negative result is 0, a result beyond `maxMs` (`1/0`) is `maxMs`, and so is one that is
 * not a number past what publish checked ({@link notANumberAt}: a message from before that check).
 * `undefined` when `text` does not parse (a stored expression always does: it was checked at publish).
 */
export const evaluateRetryDelay = (text: string, retried: number, maxMs: number): number | undefined => {
  const parsed = parseRetryDelay(text)
  if ("problem" in parsed) return undefined
  const value = evaluate(parsed.expression, retried)
  if (Number.isNaN(value)) return maxMs
  return Math.round(Math.min(maxMs, Math.max(0, value)))
}
