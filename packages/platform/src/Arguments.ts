/**
 * The shapes of a Promise API's options, checked before anything is done with them: applications
 * without TypeScript (or with `any`) pass `null`, numbers and half-filled objects, and each must come
 * back as an error naming the argument (`options.callback: expected an object, got null`), not a
 * `TypeError` from deep inside a client. Plain functions over a table of shapes, importing nothing:
 * the queue's Promise client, which loads nothing of effect, uses them, and so does the bucket's.
 */

/** One option's shape: a kind (`!` when required), or a nested object's shapes. */
export type Shape =
  | "string"
  | "string!"
  | "number"
  | "number!"
  | "boolean"
  | "function"
  /** an object whose values are strings (headers, metadata) */
  | "strings"
  /** an array of strings */
  | "string list"
  /** a valid `Date`, or a finite number */
  | "time"
  | Shapes
export interface Shapes {
  readonly [name: string]: Shape
}

/** How a value is named in a refusal: `null`, `an array`, `an object`, or its `typeof`. */
export const described = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "an array" : typeof value === "object" ? "an object" : typeof value

/** Why `value` is not a plain object (named `at`), or undefined. */
export const objectProblem = (value: unknown, at: string): string | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? undefined : `${at}: expected an object, got ${described(value)}`

const kindProblem = (value: unknown, kind: Exclude<Shape, Shapes>, at: string): string | undefined => {
  switch (kind) {
    case "string":
    case "string!":
      return typeof value === "string" ? undefined : `${at}: expected a string, got ${described(value)}`
    case "number":
    case "number!":
      return typeof value === "number" && Number.isFinite(value) ? undefined : `${at}: expected a finite number, got ${described(value)}`
    case "boolean":
      return typeof value === "boolean" ? undefined : `${at}: expected true or false, got ${described(value)}`
    case "function":
      return typeof value === "function" ? undefined : `${at}: expected a function, got ${described(value)}`
    case "time":
      return (value instanceof Date && !Number.isNaN(value.getTime())) || (typeof value === "number" && Number.isFinite(value))
        ? undefined
        : `${at}: expected a valid Date or a finite number (Unix time), got ${value instanceof Date ? "an invalid Date" : described(value)}`
    case "strings": {
      const notObject = objectProblem(value, at)
      if (notObject !== undefined) return notObject
      const [name] = Object.entries(value as object).find(([, entry]) => typeof entry !== "string") ?? []
      return name === undefined ? undefined : `${at}[${JSON.stringify(name)}]: expected a string`
    }
    case "string list": {
      if (!Array.isArray(value)) return `${at}: expected an array of strings, got ${described(value)}`
      const index = value.findIndex((entry) => typeof entry !== "string")
      return index < 0 ? undefined : `${at}[${index}]: expected a string, got ${described(value[index])}`
    }
  }
}

/** Why `value` does not have `shapes` (the first problem, named from `at`), or undefined. Other keys are not looked at. */
export const shapeProblem = (value: unknown, shapes: Shapes, at: string): string | undefined => {
  const notObject = objectProblem(value, at)
  if (notObject !== undefined) return notObject
  for (const [name, shape] of Object.entries(shapes)) {
    const field = (value as Record<string, unknown>)[name]
    const where = `${at}.${name}`
    const problem = field === undefined
      ? shape === "string!" || shape === "number!" ? `${where} is missing` : undefined
      : typeof shape === "object"
      ? shapeProblem(field, shape, where)
      : kindProblem(field, shape, where)
    if (problem !== undefined) return problem
  }
  return undefined
}
