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
import { destinationPath, type PublishOptions, publishHeaders } from "../PublishHeaders.ts"
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

const segment = encodeURIComponent

export class QueueClient {
  readonly #baseUrl: string
  readonly #token: string

  constructor(options: QueueClientOptions) {
    this.#baseUrl = options.baseUrl.replace(/\/+$/, "")
    this.#token = options.token
  }

  /** One request; the JSON answer (undefined for 204), or a {@link QueueError}. */
  async #call<A>(call: Call): Promise<A> {
    const headers: Record<string, string> = { ...call.headers, authorization: `Bearer ${this.#token}` }
    let body: string | Uint8Array | undefined = call.body
    if (call.json !== undefined) {
      headers["content-type"] = "application/json"
      body = JSON.stringify(call.json)
    }
    let response: Response
    try {
      response = await fetch(`${this.#baseUrl}${call.path}${queryString(call.query)}`, {
        method: call.method,
        headers,
        body: (body ?? null) as BodyInit | null
      })
    } catch (cause) {
      throw new QueueError({
        status: 0,
        code: "request_failed",
        message: `Could not reach the queue at ${this.#baseUrl}: ${(cause as Error).message}`,
        cause
      })
    }
    const text = await response.text()
    let json: unknown = undefined
    try {
      json = text === "" ? undefined : JSON.parse(text)
    } catch {
      // not JSON: described by the status below
    }
    if (response.ok) return json as A
    const error = json as { readonly code?: unknown; readonly message?: unknown } | undefined
    throw new QueueError({
      status: response.status,
      code: typeof error?.code === "string" ? error.code : "request_failed",
      message: typeof error?.message === "string" ? error.message : `The queue answered ${response.status}`,
      body: json ?? text
    })
  }

  /**
   * POST `<route><destination>` with the publish's headers and body: publish, enqueue and schedule.
   * A body without `contentType` is sent as text or bytes; no body, with no content type.
   */
  #send<A>(route: string, options: PublishOptions, extraHeaders: Record<string, string> = {}): Promise<A> {
    const { body } = options
    const defaultType = body === undefined
      ? {}
      : { "content-type": typeof body === "string" ? "text/plain; charset=utf-8" : "application/octet-stream" }
    return this.#call<A>({
      method: "POST",
      path: `${route}${destinationPath(options.destination)}`,
      headers: { ...defaultType, ...publishHeaders(options), ...extraHeaders },
      body
    })
  }

  /** `POST /v2/publish/<destination>`: the body delivered byte for byte, the options as `Svc-*` headers. */
  publish(options: PublishOptions): Promise<PublishResult> {
    return this.#send("/v2/publish/", options)
  }

  /** {@link publish} with `body` sent as JSON (`Content-Type: application/json`). */
  publishJSON(options: Omit<PublishOptions, "body" | "contentType"> & { readonly body: unknown }): Promise<PublishResult> {
    return this.publish({ ...options, body: JSON.stringify(options.body), contentType: "application/json" })
  }

  /**
   * `POST /v2/batch`: many publishes in one request and one transaction. Element i of the answer is
   * what {@link publish} answers for message i. All or nothing: one bad message refuses the batch
   * (`invalid_request` naming its index) and nothing is stored. Bytes travel base64-encoded.
   */
  batch(messages: ReadonlyArray<BatchMessage>): Promise<Array<PublishResult>> {
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
  events(options: EventsOptions = {}): Promise<EventsPage> {
    return this.#call({ method: "GET", path: "/v2/events", query: { ...options } })
  }

  readonly messages = {
    get: (messageId: string): Promise<Message> => this.#call({ method: "GET", path: `/v2/messages/${segment(messageId)}` }),
    /** Cancels a message not yet delivered (a `message_not_cancellable` QueueError once it is finished). */
    cancel: (messageId: string): Promise<void> =>
      this.#call({ method: "DELETE", path: `/v2/messages/${segment(messageId)}` }),
    /**
     * `DELETE /v2/messages`: cancels the messages selected by ids and/or filter, at most 1,000 a
     * call; how many were, and whether more match (call again until `more` is false).
     */
    cancelMany: (selection: MessageSelection): Promise<{ readonly cancelled: number; readonly more: boolean }> =>
      this.#call({ method: "DELETE", path: "/v2/messages", json: selection })
  }

  readonly dlq = {
    list: (options: DlqListOptions = {}): Promise<DlqPage> => this.#call({ method: "GET", path: "/v2/dlq", query: { ...options } }),
    get: (dlqId: string): Promise<DlqMessage> => this.#call({ method: "GET", path: `/v2/dlq/${segment(dlqId)}` }),
    /** Delivers the message again (its retries start over) and removes it from the DLQ. */
    retry: (dlqId: string): Promise<PublishedMessage> =>
      this.#call({ method: "POST", path: `/v2/dlq/${segment(dlqId)}/retry` }),
    delete: (dlqId: string): Promise<void> => this.#call({ method: "DELETE", path: `/v2/dlq/${segment(dlqId)}` }),
    /** `POST /v2/dlq/retry`: retries the entries selected by ids and/or filter (at most 1,000 a call). */
    retryMany: (selection: DlqSelection): Promise<{ readonly retried: number; readonly more: boolean }> =>
      this.#call({ method: "POST", path: "/v2/dlq/retry", json: selection }),
    /** `DELETE /v2/dlq`: deletes the entries selected by ids and/or filter (at most 1,000 a call). */
    deleteMany: (selection: DlqSelection): Promise<{ readonly deleted: number; readonly more: boolean }> =>
      this.#call({ method: "DELETE", path: "/v2/dlq", json: selection })
  }

  /** URL groups (`/v2/topics`). */
  readonly groups = {
    /** Adds endpoints (the group is created when new); an endpoint with the same name or URL is replaced. */
    upsertEndpoints: (name: string, endpoints: ReadonlyArray<Endpoint>): Promise<Topic> =>
      this.#call({ method: "POST", path: `/v2/topics/${segment(name)}/endpoints`, json: { endpoints } }),
    list: async (): Promise<ReadonlyArray<Topic>> =>
      (await this.#call<{ readonly topics: ReadonlyArray<Topic> }>({ method: "GET", path: "/v2/topics" })).topics,
    get: (name: string): Promise<Topic> => this.#call({ method: "GET", path: `/v2/topics/${segment(name)}` }),
    /** Removes endpoints by name or URL. */
    removeEndpoints: (name: string, endpoints: ReadonlyArray<{ readonly name?: string; readonly url?: string }>): Promise<Topic> =>
      this.#call({ method: "DELETE", path: `/v2/topics/${segment(name)}/endpoints`, json: { endpoints } }),
    /** The group's default headers (`Svc-*` ones configure its deliveries, others are sent along). */
    setHeaders: (name: string, headers: DefaultHeaders): Promise<Topic> =>
      this.#call({ method: "PATCH", path: `/v2/topics/${segment(name)}`, json: { headers } }),
    delete: (name: string): Promise<void> => this.#call({ method: "DELETE", path: `/v2/topics/${segment(name)}` })
  }

  readonly schedules = {
    /** Creates a schedule, or with `scheduleId` creates or replaces that one. */
    create: (options: ScheduleOptions): Promise<CreatedSchedule> =>
      this.#send("/v2/schedules/", options, {
        "Svc-Cron": options.cron,
        ...(options.scheduleId === undefined ? {} : { "Svc-Schedule-Id": options.scheduleId })
      }),
    /** Every schedule, by id: follows the pages of `GET /v2/schedules` (100 a page). */
    list: async (): Promise<ReadonlyArray<Schedule>> => {
      const all: Array<Schedule> = []
      let cursor: string | undefined
      do {
        const page = await this.#call<{ readonly schedules: ReadonlyArray<Schedule>; readonly cursor?: string }>({
          method: "GET",
          path: "/v2/schedules",
          query: cursor === undefined ? {} : { cursor }
        })
        all.push(...page.schedules)
        cursor = page.cursor
      } while (cursor !== undefined)
      return all
    },
    get: (scheduleId: string): Promise<Schedule> => this.#call({ method: "GET", path: `/v2/schedules/${segment(scheduleId)}` }),
    pause: (scheduleId: string): Promise<Schedule> =>
      this.#call({ method: "POST", path: `/v2/schedules/${segment(scheduleId)}/pause` }),
    resume: (scheduleId: string): Promise<Schedule> =>
      this.#call({ method: "POST", path: `/v2/schedules/${segment(scheduleId)}/resume` }),
    delete: (scheduleId: string): Promise<void> =>
      this.#call({ method: "DELETE", path: `/v2/schedules/${segment(scheduleId)}` })
  }

  readonly flowControl = {
    list: async (): Promise<ReadonlyArray<FlowControl>> =>
      (await this.#call<{ readonly flowControls: ReadonlyArray<FlowControl> }>({ method: "GET", path: "/v2/flow-control" }))
        .flowControls,
    get: (key: string): Promise<FlowControl> => this.#call({ method: "GET", path: `/v2/flow-control/${segment(key)}` }),
    pause: (key: string): Promise<FlowControl> => this.#call({ method: "POST", path: `/v2/flow-control/${segment(key)}/pause` }),
    resume: (key: string): Promise<FlowControl> =>
      this.#call({ method: "POST", path: `/v2/flow-control/${segment(key)}/resume` })
  }

  /** FIFO queues. */
  readonly queues = {
    /** Creates the queue or sets its parallelism (1-100, default 1). */
    upsert: (options: { readonly queueName: string; readonly parallelism?: number | undefined }): Promise<FifoQueue> =>
      this.#call({ method: "POST", path: "/v2/queues", json: options }),
    list: async (): Promise<ReadonlyArray<FifoQueue>> =>
      (await this.#call<{ readonly queues: ReadonlyArray<FifoQueue> }>({ method: "GET", path: "/v2/queues" })).queues,
    get: (queueName: string): Promise<FifoQueue> => this.#call({ method: "GET", path: `/v2/queues/${segment(queueName)}` }),
    /** Deletes the queue; its queued messages are cancelled. */
    delete: (queueName: string): Promise<void> => this.#call({ method: "DELETE", path: `/v2/queues/${segment(queueName)}` }),
    pause: (queueName: string): Promise<FifoQueue> =>
      this.#call({ method: "POST", path: `/v2/queues/${segment(queueName)}/pause` }),
    resume: (queueName: string): Promise<FifoQueue> =>
      this.#call({ method: "POST", path: `/v2/queues/${segment(queueName)}/resume` }),
    /** `POST /v2/enqueue/<queue>/<destination>`: a publish into the queue (created with parallelism 1 when unknown). */
    enqueue: (queueName: string, options: PublishOptions): Promise<PublishResult> =>
      this.#send(`/v2/enqueue/${segment(queueName)}/`, options)
  }

  /** The signing keys receivers verify `Svc-Signature` with. */
  readonly keys = {
    get: (): Promise<SigningKeys> => this.#call({ method: "GET", path: "/v2/keys" }),
    /** Next becomes current, and a new next is made. */
    rotate: (): Promise<SigningKeys> => this.#call({ method: "POST", path: "/v2/keys/rotate" })
  }
}
