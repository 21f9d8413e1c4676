/**
 * The Promise client's checks of what a caller passes, before anything is sent: applications without
 * TypeScript (or with `any`) pass `null`, numbers and half-filled objects, and each must come back as
 * an `invalid_request` naming the argument, not a `TypeError` from deep inside the client or fetch.
 * Plain functions over a table of the options' shapes: the Promise entrypoint loads nothing of effect.
 */

/** One option's shape: a primitive kind (`!` when required), a map of strings, a time, or a nested object. */
type Shape = "string" | "string!" | "number" | "boolean" | "strings" | "time" | Shapes
export interface Shapes {
  readonly [name: string]: Shape
}

const CALLBACK: Shapes = { url: "string!", method: "string", retries: "number", timeout: "string", delay: "string", forward: "strings" }

/** A publish's options (`PublishHeaders.ts`); the body is checked apart (string or bytes). */
export const PUBLISH: Shapes = {
  destination: "string!",
  contentType: "string",
  method: "string",
  retries: "number",
  delay: "string",
  notBefore: "time",
  timeout: "string",
  deduplicationId: "string",
  contentBasedDeduplication: "boolean",
  retryDelay: "string",
  forward: "strings",
  headers: "strings",
  callback: CALLBACK,
  failureCallback: CALLBACK,
  flowControl: { key: "string!", parallelism: "number", rate: "number", period: "string" }
}
export const SCHEDULE: Shapes = { ...PUBLISH, cron: "string!", scheduleId: "string" }
export const BATCH_MESSAGE: Shapes = { ...PUBLISH, queue: "string" }

const described = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "an array" : typeof value === "object" ? "an object" : typeof value

const kindProblem = (value: unknown, kind: Exclude<Shape, Shapes>, at: string): string | undefined => {
  switch (kind) {
    case "string":
    case "string!":
      return typeof value === "string" ? undefined : `${at}: expected a string, got ${described(value)}`
    case "number":
      return typeof value === "number" && Number.isFinite(value) ? undefined : `${at}: expected a finite number, got ${described(value)}`
    case "boolean":
      return typeof value === "boolean" ? undefined : `${at}: expected true or false, got ${described(value)}`
    case "time":
      return (value instanceof Date && !Number.isNaN(value.getTime())) || (typeof value === "number" && Number.isFinite(value))
        ? undefined
        : `${at}: expected a Date or Unix seconds, got ${described(value)}`
    case "strings": {
      const record = objectProblem(value, at)
      if (record !== undefined) return record
      const [name] = Object.entries(value as object).find(([, entry]) => typeof entry !== "string") ?? []
      return name === undefined ? undefined : `${at}[${JSON.stringify(name)}]: expected a string`
    }
  }
}

const objectProblem = (value: unknown, at: string): string | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? undefined : `${at}: expected an object, got ${described(value)}`

/** Why `value` does not have `shapes` (the first problem, named from `at`), or undefined. Other keys are not looked at. */
export const shapeProblem = (value: unknown, shapes: Shapes, at: string): string | undefined => {
  const notObject = objectProblem(value, at)
  if (notObject !== undefined) return notObject
  for (const [name, shape] of Object.entries(shapes)) {
    const field = (value as Record<string, unknown>)[name]
    const where = `${at}.${name}`
    const problem = field === undefined
      ? shape === "string!" ? `${where} is missing` : undefined
      : typeof shape === "object"
      ? shapeProblem(field, shape, where)
      : kindProblem(field, shape, where)
    if (problem !== undefined) return problem
  }
  return undefined
}

/** Why `body` cannot be a message's body (a string or bytes, or none), or undefined. */
export const bodyProblem = (body: unknown, at: string): string | undefined =>
  body === undefined || typeof body === "string" || body instanceof Uint8Array
    ? undefined
    : `${at}: expected a string or a Uint8Array, got ${described(body)}`

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
/** What fetch sends as a header value: bytes 0x00-0xFF but NUL, CR and LF. */
const HEADER_VALUE = /^[^\0\r\n\u0100-\uffff]*$/

/**
 * Why a header cannot be sent (its value is never quoted: it may be a secret), or undefined. Fetch's
 * own refusal read as "Could not reach the queue", which a caller's retry would repeat for ever.
 */
export const headerProblem = (name: string, value: string): string | undefined =>
  !TOKEN.test(name)
    ? `the header name ${JSON.stringify(name)} holds a space or a character header names cannot have`
    : !HEADER_VALUE.test(value)
    ? `the value of the header ${name} holds a line break, a NUL or a character outside Latin-1, which HTTP headers cannot carry`
    : undefined
