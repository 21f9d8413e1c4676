/**
 * The Promise client's checks of what a caller passes, before anything is sent: the shapes of its
 * options (checked by `@svc/platform/Arguments`, each refusal an `invalid_request` naming the
 * argument), a body, and a header fetch could not send.
 */
import { described, type Shapes } from "@svc/platform/Arguments"

export { described, shapeProblem, type Shapes } from "@svc/platform/Arguments"

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
/** `events` options; `dlq.list` options (a refusal is sent nowhere: `limit: "5"` went out as a query). */
export const EVENTS: Shapes = {
  messageId: "string",
  state: "string",
  url: "string",
  topicName: "string",
  fromDate: "time",
  toDate: "time",
  count: "number",
  cursor: "string"
}
export const DLQ_LIST: Shapes = { url: "string", topicName: "string", responseStatus: "number", messageId: "string", limit: "number", cursor: "string" }
export const BATCH_MESSAGE: Shapes = { ...PUBLISH, queue: "string" }

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
