/**
 * The queue for applications that do not use effect: plain Promises, plain objects, and a
 * {@link QueueError} when the queue refuses (or cannot be reached). Every method is one request to
 * a route of the queue's HTTP API (README "Promise client"); the publish options map to the same
 * `Svc-*` headers as the effect client's (`PublishHeaders.ts`).
 *
 * ```ts
 * import { QueueClient } from "@svc/queue/client"
 *
 * const queue = new QueueClient({ baseUrl: "http://localhost:8788", token: process.env.QUEUE_TOKEN! })
 * const { messageId } = await queue.publishJSON({ destination: "https://example.com/orders", body: { order: 42 }, retries: 5 })
 * ```
 */
import { serviceTargetProblem } from "@svc/platform/ServiceTarget"
import {
  answerTooLargeMessage,
  DEFAULT_MAX_ANSWER_BYTES,
  DEFAULT_TIMEOUT_MS,
  maxAnswerBytesProblem,
  noAnswerInTimeMessage,
  readCappedBody,
  timeoutMsProblem
} from "../CappedBody.ts"
import { pathSegment, type PublishOptions, publishHeaders, segmentProblem } from "../PublishHeaders.ts"
import { BATCH_MESSAGE, bodyProblem, described, DLQ_LIST, EVENTS, headerProblem, PUBLISH, SCHEDULE, type Shapes, shapeProblem } from "./Arguments.ts"
import { QueueError } from "./QueueError.ts"
import type {
  BatchMessage,
  CreatedSchedule,
  DefaultHeaders,
  DlqListOptions,
  DlqMessage,
  DlqPage,
  DlqSelection,
  Endpoint,
  EventsOptions,
  EventsPage,
  FifoQueue,
  FlowControl,
  Message,
  MessageSelection,
  PublishedMessage,
  PublishResult,
  Schedule,
  ScheduleOptions,
  SigningKeys,
  Topic
} from "./types.ts"

export interface QueueClientOptions {
  /** Where the queue listens, e.g. `http://localhost:8788`. */
  readonly baseUrl: string
  /** `QUEUE_TOKEN`, sent as `Authorization: Bearer <token>`. */
  readonly token: string
  /** How long one call may take, answer read whole (default 60,000 ms). */
  readonly timeoutMs?: number | undefined
  /** The largest answer read, in bytes (default 320 MiB); a larger one is refused unread past that. */
  readonly maxAnswerBytes?: number | undefined
}

type Query = Readonly<Record<string, string | number | Date | undefined>>

interface Call {
  readonly method: "GET" | "POST" | "PATCH" | "DELETE"
  readonly path: string
  readonly query?: Query | undefined
  /** Sent as JSON. */
  readonly json?: unknown
  /** Sent as is (a publish). */
  readonly body?: string | Uint8Array | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
}

const queryString = (query: Query | undefined): string => {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value !== undefined) params.set(name, value instanceof Date ? String(value.getTime()) : String(value))
  }
  const text = params.toString()
  return text === "" ? "" : `?${text}`
}

/** A refusal of the caller's own argument, before anything is sent. */
const invalidArgument = (message: string) => new QueueError({ status: 0, code: "invalid_request", message })

/** Throws the {@link invalidArgument} of the first problem found. */
const refuse = (...problems: ReadonlyArray<string | undefined>): void => {
  const problem = problems.find((found) => found !== undefined)
  if (problem !== undefined) throw invalidArgument(problem)
}

/** A publish's (enqueue's, schedule's) options and body, checked before its path is made of them. */
const checkPublish = (options: { readonly body?: unknown } | undefined, shapes: Shapes): void =>
  refuse(shapeProblem(options, shapes, "options"), bodyProblem(options?.body, "options.body"))

/**
 * The headers of a call, checked: each one fetch can send, and no `Authorization` (the client's
 * token is the queue's; fetch joined a second one into `Bearer x, Bearer <token>`, a 401).
 */
const sendableHeaders = (headers: Readonly<Record<string, string>>): Readonly<Record<string, string>> => {
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() === "authorization") {
      throw invalidArgument(
        "headers: Authorization is the client's own (its token); to send one to the destination, use forward: { Authorization: ... }"
      )
    }
    refuse(headerProblem(name, value))
  }
  return headers
}

/**
 * A request path whose interpolated parts are each one segment, checked and percent-encoded
 * (`PublishHeaders.ts`): `route\`/v2/dlq/${id}/retry\`` can never become another route.
 */
const route = (strings: TemplateStringsArray, ...parts: ReadonlyArray<unknown>): string =>
  strings.reduce((path, text, i) => {
    const part = parts[i - 1]
    const problem = segmentProblem(part)
    if (problem !== undefined) throw invalidArgument(`The path part after ${path}: ${problem}`)
    return path + pathSegment(part as string) + text
  })

/** `Retry-After` (delay-seconds or an HTTP date) in whole seconds from `now`, when present and readable. */
const retryAfterSeconds = (value: string | null, now: number): number | undefined => {
  const text = value?.trim() ?? ""
  if (/^\d{1,9}$/.test(text)) return Number(text)
  // only the HTTP date form (IMF-fixdate): Date.parse alone reads "-1" or "1 1" as dates
  if (!/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(text)) return undefined
  const date = Date.parse(text)
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000))
}

/** A publish's answer: `{messageId}`, or one per endpoint for a URL group; anything else is not the queue's. */
const published = <A>(answer: A): A => {
  const isOne = (one: unknown) => typeof (one as { readonly messageId?: unknown } | null)?.messageId === "string"
  if (Array.isArray(answer) ? answer.length > 0 && answer.every(isOne) : isOne(answer)) return answer
  throw new QueueError({ status: 200, code: "request_failed", message: "The queue's answer to a publish holds no messageId", body: answer })
}

/** `value` as JSON text, or a QueueError naming `what` when it has none (a cycle, a BigInt, undefined). */
const jsonText = (value: unknown, what: string): string => {
  let text: string | undefined
  try {
    text = JSON.stringify(value)
  } catch (cause) {
    throw invalidArgument(`${what} cannot be sent as JSON: ${(cause as Error).message}`)
  }
  if (text === undefined) throw invalidArgument(`${what} cannot be sent as JSON: it is ${typeof value}`)
  return text
}

/** Why fetch failed: its own message is "fetch failed", the reason (`connect ECONNREFUSED …`) is its cause's. */
const reasonOf = (error: unknown): string => {
  const cause = (error as { readonly cause?: { readonly message?: unknown } } | undefined)?.cause
  return typeof cause?.message === "string" && cause.message !== "" ? cause.message : String((error as Error | undefined)?.message)
}

/** The queue's answer wraps a list in one field: that list, or a QueueError when it is not there. */
const listIn = <A>(answer: unknown, field: string): ReadonlyArray<A> => {
  const list = (answer as Record<string, unknown> | null | undefined)?.[field]
  if (!Array.isArray(list)) {
    throw new QueueError({ status: 200, code: "request_failed", message: `The queue's answer holds no "${field}" list`, body: answer })
  }
  return list as ReadonlyArray<A>
}

export class QueueClient {
  readonly #baseUrl: string
  readonly #token: string
  readonly #timeoutMs: number
  readonly #maxAnswerBytes: number

  /** Bad options are a `TypeError` at once (the token itself is never part of the message). */
  constructor(options: QueueClientOptions) {
    if (typeof options !== "object" || options === null) {
      throw new TypeError(`QueueClient: expected options { baseUrl, token }, got ${described(options)}`)
    }
    const problem = serviceTargetProblem({ url: options.baseUrl, urlName: "baseUrl", token: options.token, tokenName: "token" })
    if (problem !== undefined) throw new TypeError(`QueueClient: ${problem}`)
    const url = new URL(options.baseUrl)
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
    const timeoutProblem = timeoutMsProblem(timeoutMs)
    if (timeoutProblem !== undefined) throw new TypeError(`QueueClient: ${timeoutProblem}`)
    const maxAnswerBytes = options.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES
    const capProblem = maxAnswerBytesProblem(maxAnswerBytes)
    if (capProblem !== undefined) throw new TypeError(`QueueClient: ${capProblem}`)
    this.#baseUrl = `${url.origin}${url.pathname}`.replace(/\/+$/, "")
    this.#token = options.token
    this.#timeoutMs = timeoutMs
    this.#maxAnswerBytes = maxAnswerBytes
  }

  /**
   * One request; the JSON answer (undefined for 204), or a {@link QueueError}: the queue's refusal,
   * or status 0 when there was no whole answer (unreachable, timed out, cut off). Redirects are not
   * followed: the queue never answers one, so one comes from something else at `baseUrl`. An answer
   * over `maxAnswerBytes` is refused with its status, read no further.
   */
  async #call<A>(call: Call): Promise<A> {
    const headers: Record<string, string> = { ...sendableHeaders(call.headers ?? {}), authorization: `Bearer ${this.#token}` }
    let body: string | Uint8Array | undefined = call.body
    if (call.json !== undefined) {
      headers["content-type"] = "application/json"
      body = jsonText(call.json, "the request")
    }
    let response: Response | undefined
    let bytes: Uint8Array | undefined
    try {
      response = await fetch(`${this.#baseUrl}${call.path}${queryString(call.query)}`, {
        method: call.method,
        headers,
        body: (body ?? null) as BodyInit | null,
        redirect: "manual",
        signal: AbortSignal.timeout(this.#timeoutMs)
      })
      bytes = await readCappedBody(response, this.#maxAnswerBytes)
    } catch (cause) {
      const timedOut = (cause as Error | undefined)?.name === "TimeoutError"
      throw new QueueError({
        status: 0,
        code: "request_failed",
        message: timedOut
          ? noAnswerInTimeMessage(this.#baseUrl, this.#timeoutMs)
          : response === undefined
          ? `Could not reach the queue at ${this.#baseUrl}: ${reasonOf(cause)}`
          : `The queue's answer from ${this.#baseUrl} broke off: ${(cause as Error).message}`,
        cause
      })
    }
    if (bytes === undefined) {
      throw new QueueError({
        status: response.status,
        code: "request_failed",
        message: answerTooLargeMessage(this.#baseUrl, this.#maxAnswerBytes)
      })
    }
    // as response.text() decodes: UTF-8, a bad sequence replaced
    const text = new TextDecoder().decode(bytes)
    if (response.status >= 300 && response.status < 400) {
      throw new QueueError({
        status: response.status,
        code: "request_failed",
        message: `${this.#baseUrl} answered ${response.status}, a redirect, which the client does not follow: ` +
          "baseUrl must name the queue itself"
      })
    }
    // only a DELETE is answered without a body; any other call expects the queue's JSON
    if (response.status === 204 && call.method === "DELETE") return undefined as A
    let json: unknown = undefined
    let isJson = false
    try {
      json = JSON.parse(text)
      isJson = true
    } catch {
      // not JSON: described below
    }
    if (response.ok) {
      // every route answers an object or a list; a bare null or number is not the queue's
      if (isJson && typeof json === "object" && json !== null) return json as A
      throw new QueueError({
        status: response.status,
        code: "request_failed",
        message: `The queue answered ${response.status} with a body that is not ${isJson ? "a JSON object or list" : "JSON"}`,
        body: text.slice(0, 1000)
      })
    }
    const error = json as { readonly code?: unknown; readonly message?: unknown } | undefined
    throw new QueueError({
      status: response.status,
      code: typeof error?.code === "string" ? error.code : "request_failed",
      message: typeof error?.message === "string" ? error.message : `The queue answered ${response.status}`,
      body: isJson ? json : text,
      retryAfter: retryAfterSeconds(response.headers.get("retry-after"), Date.now())
    })
  }

  /** Every entry of a list paged by key (`Pages.ts`), following its cursors; `field` holds a page's entries. */
  async #everyPage<A>(path: string, field: string): Promise<ReadonlyArray<A>> {
    const all: Array<A> = []
    let cursor: string | undefined
    do {
      const page = await this.#call<{ readonly cursor?: unknown }>({ method: "GET", path, query: cursor === undefined ? {} : { cursor } })
      all.push(...listIn<A>(page, field))
      const next = typeof page.cursor === "string" ? page.cursor : undefined
      // pages go by key: a cursor that does not move forward would page for ever
      if (next !== undefined && cursor !== undefined && next <= cursor) {
        throw new QueueError({
          status: 200,
          code: "request_failed",
          message: `The queue's next cursor ${JSON.stringify(next)} does not come after ${JSON.stringify(cursor)}`,
          body: page
        })
      }
      cursor = next
    } while (cursor !== undefined)
    return all
  }

  /**
   * POST `<path>` (its last segment the destination) with the publish's headers and body: publish,
   * enqueue and schedule. A body without `contentType` is sent as text or bytes; no body, with no
   * content type.
   */
  #send<A>(path: string, options: PublishOptions, extraHeaders: Record<string, string> = {}): Promise<A> {
    const { body } = options
    const defaultType = body === undefined
      ? {}
      : { "content-type": typeof body === "string" ? "text/plain; charset=utf-8" : "application/octet-stream" }
    return this.#call<A>({
      method: "POST",
      path,
      headers: { ...defaultType, ...publishHeaders(options), ...extraHeaders },
      body
    })
  }

  /** `POST /v2/publish/<destination>`: the body delivered byte for byte, the options as `Svc-*` headers. */
  async publish(options: PublishOptions): Promise<PublishResult> {
    checkPublish(options, PUBLISH)
    return published(await this.#send<PublishResult>(route`/v2/publish/${options?.destination}`, options))
  }

  /** {@link publish} with `body` sent as JSON (`Content-Type: application/json`). */
  async publishJSON(options: Omit<PublishOptions, "body" | "contentType"> & { readonly body: unknown }): Promise<PublishResult> {
    refuse(shapeProblem(options, PUBLISH, "options"))
    return this.publish({ ...options, body: jsonText(options.body, "body"), contentType: "application/json" })
  }

  /**
   * `POST /v2/batch`: many publishes in one request and one transaction. Element i of the answer is
   * what {@link publish} answers for message i. All or nothing: one bad message refuses the batch
   * (`invalid_request` naming its index) and nothing is stored. Bytes travel base64-encoded.
   */
  async batch(messages: ReadonlyArray<BatchMessage>): Promise<Array<PublishResult>> {
    if (!Array.isArray(messages)) throw invalidArgument(`messages: expected an array, got ${messages === null ? "null" : typeof messages}`)
    messages.forEach((message, i) => refuse(shapeProblem(message, BATCH_MESSAGE, `messages[${i}]`), bodyProblem(message?.body, `messages[${i}].body`)))
    return this.#call({
      method: "POST",
      path: "/v2/batch",
      json: messages.map((message) => {
        const { body, destination, queue } = message
        const headers = publishHeaders(message)
        return {
          destination,
          ...(body === undefined
            ? {}
            : typeof body === "string"
            ? { body, bodyEncoding: "utf8" }
            : { body: Buffer.from(body).toString("base64"), bodyEncoding: "base64" }),
          ...(Object.keys(headers).length === 0 ? {} : { headers }),
          ...(queue === undefined ? {} : { queue })
        }
      })
    })
  }

  /** `GET /v2/events`: what happened to messages, newest first; pass `cursor` on for the next page. */
  async events(options: EventsOptions = {}): Promise<EventsPage> {
    refuse(shapeProblem(options, EVENTS, "options"))
    return this.#call({ method: "GET", path: "/v2/events", query: { ...options } })
  }

  readonly messages = {
    get: async (messageId: string): Promise<Message> => this.#call({ method: "GET", path: route`/v2/messages/${messageId}` }),
    /** Cancels a message not yet delivered (a `message_not_cancellable` QueueError once it is finished). */
    cancel: async (messageId: string): Promise<void> => this.#call({ method: "DELETE", path: route`/v2/messages/${messageId}` }),
    /**
     * `DELETE /v2/messages`: cancels the messages selected by ids and/or filter, at most 1,000 a
     * call; how many were, and whether more match (call again until `more` is false).
     */
    cancelMany: async (selection: MessageSelection): Promise<{ readonly cancelled: number; readonly more: boolean }> =>
      this.#call({ method: "DELETE", path: "/v2/messages", json: selection })
  }

  readonly dlq = {
    list: async (options: DlqListOptions = {}): Promise<DlqPage> => {
      refuse(shapeProblem(options, DLQ_LIST, "options"))
      return this.#call({ method: "GET", path: "/v2/dlq", query: { ...options } })
    },
    get: async (dlqId: string): Promise<DlqMessage> => this.#call({ method: "GET", path: route`/v2/dlq/${dlqId}` }),
    /** Delivers the message again (its retries start over) and removes it from the DLQ. */
    retry: async (dlqId: string): Promise<PublishedMessage> => this.#call({ method: "POST", path: route`/v2/dlq/${dlqId}/retry` }),
    delete: async (dlqId: string): Promise<void> => this.#call({ method: "DELETE", path: route`/v2/dlq/${dlqId}` }),
    /** `POST /v2/dlq/retry`: retries the entries selected by ids and/or filter (at most 1,000 a call). */
    retryMany: async (selection: DlqSelection): Promise<{ readonly retried: number; readonly more: boolean }> =>
      this.#call({ method: "POST", path: "/v2/dlq/retry", json: selection }),
    /** `DELETE /v2/dlq`: deletes the entries selected by ids and/or filter (at most 1,000 a call). */
    deleteMany: async (selection: DlqSelection): Promise<{ readonly deleted: number; readonly more: boolean }> =>
      this.#call({ method: "DELETE", path: "/v2/dlq", json: selection })
  }

  /** URL groups (`/v2/topics`). */
  readonly groups = {
    /** Adds endpoints (the group is created when new); an endpoint with the same name or URL is replaced. */
    upsertEndpoints: async (name: string, endpoints: ReadonlyArray<Endpoint>): Promise<Topic> =>
      this.#call({ method: "POST", path: route`/v2/topics/${name}/endpoints`, json: { endpoints } }),
    /** Every group (the queue answers 100 a page: this follows the pages). */
    list: (): Promise<ReadonlyArray<Topic>> => this.#everyPage("/v2/topics", "topics"),
    get: async (name: string): Promise<Topic> => this.#call({ method: "GET", path: route`/v2/topics/${name}` }),
    /** Removes endpoints by name or URL. */
    removeEndpoints: async (name: string, endpoints: ReadonlyArray<{ readonly name?: string; readonly url?: string }>): Promise<Topic> =>
      this.#call({ method: "DELETE", path: route`/v2/topics/${name}/endpoints`, json: { endpoints } }),
    /** The group's default headers (`Svc-*` ones configure its deliveries, others are sent along). */
    setHeaders: async (name: string, headers: DefaultHeaders): Promise<Topic> =>
      this.#call({ method: "PATCH", path: route`/v2/topics/${name}`, json: { headers } }),
    delete: async (name: string): Promise<void> => this.#call({ method: "DELETE", path: route`/v2/topics/${name}` })
  }

  readonly schedules = {
    /** Creates a schedule, or with `scheduleId` creates or replaces that one. */
    create: async (options: ScheduleOptions): Promise<CreatedSchedule> => {
      checkPublish(options, SCHEDULE)
      return this.#send(route`/v2/schedules/${options?.destination}`, options, {
        "Svc-Cron": options.cron,
        ...(options.scheduleId === undefined ? {} : { "Svc-Schedule-Id": options.scheduleId })
      })
    },
    /** Every schedule, by id: follows the pages of `GET /v2/schedules` (100 a page). */
    list: async (): Promise<ReadonlyArray<Schedule>> => this.#everyPage<Schedule>("/v2/schedules", "schedules"),
    get: async (scheduleId: string): Promise<Schedule> => this.#call({ method: "GET", path: route`/v2/schedules/${scheduleId}` }),
    pause: async (scheduleId: string): Promise<Schedule> =>
      this.#call({ method: "POST", path: route`/v2/schedules/${scheduleId}/pause` }),
    resume: async (scheduleId: string): Promise<Schedule> =>
      this.#call({ method: "POST", path: route`/v2/schedules/${scheduleId}/resume` }),
    delete: async (scheduleId: string): Promise<void> => this.#call({ method: "DELETE", path: route`/v2/schedules/${scheduleId}` })
  }

  readonly flowControl = {
    /** Every key, by key: follows the pages of `GET /v2/flow-control` (100 a page). */
    list: async (): Promise<ReadonlyArray<FlowControl>> => this.#everyPage<FlowControl>("/v2/flow-control", "flowControls"),
    get: async (key: string): Promise<FlowControl> => this.#call({ method: "GET", path: route`/v2/flow-control/${key}` }),
    pause: async (key: string): Promise<FlowControl> => this.#call({ method: "POST", path: route`/v2/flow-control/${key}/pause` }),
    resume: async (key: string): Promise<FlowControl> => this.#call({ method: "POST", path: route`/v2/flow-control/${key}/resume` })
  }

  /** FIFO queues. */
  readonly queues = {
    /** Creates the queue or sets its parallelism (1-100, default 1). */
    upsert: async (options: { readonly queueName: string; readonly parallelism?: number | undefined }): Promise<FifoQueue> =>
      this.#call({ method: "POST", path: "/v2/queues", json: options }),
    /** Every queue (the queue answers 100 a page: this follows the pages). */
    list: (): Promise<ReadonlyArray<FifoQueue>> => this.#everyPage("/v2/queues", "queues"),
    get: async (queueName: string): Promise<FifoQueue> => this.#call({ method: "GET", path: route`/v2/queues/${queueName}` }),
    /** Deletes the queue; its queued messages are cancelled. */
    delete: async (queueName: string): Promise<void> => this.#call({ method: "DELETE", path: route`/v2/queues/${queueName}` }),
    pause: async (queueName: string): Promise<FifoQueue> => this.#call({ method: "POST", path: route`/v2/queues/${queueName}/pause` }),
    resume: async (queueName: string): Promise<FifoQueue> =>
      this.#call({ method: "POST", path: route`/v2/queues/${queueName}/resume` }),
    /** `POST /v2/enqueue/<queue>/<destination>`: a publish into the queue (created with parallelism 1 when unknown). */
    enqueue: async (queueName: string, options: PublishOptions): Promise<PublishResult> => {
      checkPublish(options, PUBLISH)
      return published(await this.#send<PublishResult>(route`/v2/enqueue/${queueName}/${options?.destination}`, options))
    }
  }

  /** The signing keys receivers verify `Svc-Signature` with. */
  readonly keys = {
    get: async (): Promise<SigningKeys> => this.#call({ method: "GET", path: "/v2/keys" }),
    /** Next becomes current, and a new next is made. */
    rotate: async (): Promise<SigningKeys> => this.#call({ method: "POST", path: "/v2/keys/rotate" })
  }
}
