/**
 * What the Promise client throws: the queue's answer `{code, message}` with its HTTP status, or
 * `status` 0 and `code` `request_failed` when the queue could not be reached.
 */
export class QueueError extends Error {
  override readonly name = "QueueError"
  /** The HTTP status of the answer; 0 when there was none. */
  readonly status: number
  /** The suite's error code (`invalid_request`, `message_not_found`, `unauthorized`, ...). */
  readonly code: string
  /** The whole answer as JSON (e.g. `issues` of an `invalid_request`), when it was JSON. */
  readonly body: unknown
  /** Seconds to wait before trying again, from the answer's `Retry-After` (a 503 or 429), when it had one. */
  readonly retryAfter: number | undefined

  constructor(options: {
    readonly status: number
    readonly code: string
    readonly message: string
    readonly body?: unknown
    readonly retryAfter?: number | undefined
    readonly cause?: unknown
  }) {
    super(options.message, options.cause === undefined ? undefined : { cause: options.cause })
    this.status = options.status
    this.code = options.code
    this.body = options.body
    this.retryAfter = options.retryAfter
  }
}
