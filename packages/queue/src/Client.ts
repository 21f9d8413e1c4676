/**
 * A typed client of the queue: `publish` / `publishJSON` and `schedule` (the raw publish and
 * schedule-create routes) and, through `api`, every `QueueApi` endpoint (messages and their bulk
 * cancel, DLQ and its bulk retry and delete, URL groups, keys, schedules, flow control, queues,
 * events) from the shared definition.
 *
 * ```ts
 * const program = Effect.gen(function*() {
 *   const queue = yield* QueueClient
 *   const { messageId } = yield* queue.publishJSON({ destination: "https://example.com/hook", body: { hello: "world" }, retries: 5 })
 *   const page = yield* queue.api.dlq.list({ query: {} })
 * }).pipe(Effect.provide(QueueClient.layer({ baseUrl: "http://localhost:8788", token: process.env.QUEUE_TOKEN! })))
 * ```
 */
import type { CreatedSchedule, PublishResult } from "@svc/schema"
import { CreatedSchedule as CreatedScheduleSchema, PublishResult as PublishResultSchema, QueueApi, QueueAuth } from "@svc/schema"
import { Context, Effect, Layer, Redacted, Schema } from "effect"
import { FetchHttpClient, HttpBody, HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient, HttpApiMiddleware } from "effect/http-api"

/** Delivery settings of a callback, as the `Svc-Callback-*` / `Svc-Failure-Callback-*` headers. */
export interface CallbackOptions {
  readonly url: string
  readonly method?: string | undefined
  readonly retries?: number | undefined
  /** `"10s"`, `"500ms"`, ... */
  readonly timeout?: string | undefined
  readonly delay?: string | undefined
  /** Sent to the callback endpoint (`Svc-Callback-Forward-<Name>`). */
  readonly forward?: Readonly<Record<string, string>> | undefined
}

export interface PublishOptions {
  /** A full URL or a URL group name. */
  readonly destination: string
  readonly body?: string | Uint8Array | undefined
  readonly contentType?: string | undefined
  readonly method?: string | undefined
  readonly retries?: number | undefined
  readonly delay?: string | undefined
  readonly timeout?: string | undefined
  readonly deduplicationId?: string | undefined
  /** Headers for the destination (`Svc-Forward-<Name>`). */
  readonly forward?: Readonly<Record<string, string>> | undefined
  readonly callback?: CallbackOptions | undefined
  readonly failureCallback?: CallbackOptions | undefined
  /** `Svc-Flow-Control-Key` / `-Value`: limits shared by every message of `key` (at least one limit). */
  readonly flowControl?: {
    readonly key: string
    readonly parallelism?: number | undefined
    readonly rate?: number | undefined
    /** `"1s"` (default), `"10s"`, `"1m"`, ... */
    readonly period?: string | undefined
  } | undefined
  /** Any further raw headers (e.g. `Svc-Header-Forward`). */
  readonly headers?: Readonly<Record<string, string>> | undefined
}

/** A publish the queue refused (or could not be reached for): the `{code, message}` of its answer. */
export class PublishFailed extends Schema.TaggedError<PublishFailed>()("PublishFailed", {
  status: Schema.Number,
  code: Schema.String,
  message: Schema.String,
  body: Schema.optional(Schema.Unknown)
}) {}

const ErrorBody = Schema.Struct({ code: Schema.String, message: Schema.String })

/** The `Svc-*` headers of a publish. */
export const publishHeaders = (options: PublishOptions): Record<string, string> => {
  const headers: Record<string, string> = {}
  if (options.contentType !== undefined) headers["content-type"] = options.contentType
  if (options.method !== undefined) headers["Svc-Method"] = options.method
  if (options.retries !== undefined) headers["Svc-Retries"] = String(options.retries)
  if (options.delay !== undefined) headers["Svc-Delay"] = options.delay
  if (options.timeout !== undefined) headers["Svc-Timeout"] = options.timeout
  if (options.deduplicationId !== undefined) headers["Svc-Deduplication-Id"] = options.deduplicationId
  for (const [name, value] of Object.entries(options.forward ?? {})) headers[`Svc-Forward-${name}`] = value
  for (const [prefix, callback] of [["Svc-Callback", options.callback], ["Svc-Failure-Callback", options.failureCallback]] as const) {
    if (callback === undefined) continue
    headers[prefix] = callback.url
    if (callback.method !== undefined) headers[`${prefix}-Method`] = callback.method
    if (callback.retries !== undefined) headers[`${prefix}-Retries`] = String(callback.retries)
    if (callback.timeout !== undefined) headers[`${prefix}-Timeout`] = callback.timeout
    if (callback.delay !== undefined) headers[`${prefix}-Delay`] = callback.delay
    for (const [name, value] of Object.entries(callback.forward ?? {})) headers[`${prefix}-Forward-${name}`] = value
  }
  if (options.flowControl !== undefined) {
    const { key, parallelism, rate, period } = options.flowControl
    headers["Svc-Flow-Control-Key"] = key
    headers["Svc-Flow-Control-Value"] = [
      parallelism === undefined ? undefined : `parallelism=${parallelism}`,
      rate === undefined ? undefined : `rate=${rate}`,
      period === undefined ? undefined : `period=${period}`
    ].filter((part) => part !== undefined).join(", ")
  }
  return { ...headers, ...options.headers }
}

/** A schedule: a publish (`PublishOptions`, but no deduplication id) made on every tick of `cron`. */
export interface ScheduleOptions extends Omit<PublishOptions, "deduplicationId"> {
  /** `Svc-Cron`: 5 fields, optionally prefixed `CRON_TZ=<IANA zone> `. */
  readonly cron: string
  /** `Svc-Schedule-Id`: create or replace the schedule with this id. */
  readonly scheduleId?: string | undefined
}

export class QueueClient extends Context.Service<QueueClient, {
  readonly publish: (options: PublishOptions) => Effect.Effect<PublishResult, PublishFailed>
  /** Creates (or with `scheduleId` replaces) a schedule; the rest of the schedule routes are `api.schedules`. */
  readonly schedule: (options: ScheduleOptions) => Effect.Effect<CreatedSchedule, PublishFailed>
  readonly publishJSON: (options: Omit<PublishOptions, "body" | "contentType"> & { readonly body: unknown }) => Effect.Effect<PublishResult, PublishFailed>
  /** `POST /v2/enqueue/<queue>/<destination>`: a publish into a FIFO queue; the queue routes are `api.queues`. */
  readonly enqueue: (queueName: string, options: PublishOptions) => Effect.Effect<PublishResult, PublishFailed>
  readonly api: HttpApiClient.ForApi<typeof QueueApi>
}>()("@svc/queue/QueueClient") {
  /** A client of the queue at `baseUrl` with `token` (QUEUE_TOKEN); needs an `HttpClient`. */
  static readonly make = (options: { readonly baseUrl: string; readonly token: string | Redacted.Redacted<string> }) =>
    Effect.gen(function*() {
      const token = typeof options.token === "string" ? Redacted.make(options.token) : options.token
      const baseUrl = options.baseUrl.replace(/\/+$/, "")
      const http = yield* HttpClient.HttpClient
      const api = yield* HttpApiClient.make(QueueApi, { baseUrl }).pipe(
        Effect.provide(HttpApiMiddleware.layerClient(QueueAuth, ({ next, request }) =>
          next(HttpClientRequest.bearerToken(request, Redacted.value(token)))))
      )
      /** POST `<route>/<destination>` with the publish headers: the raw routes publish and schedule share. */
      const send = <A>(
        route: "/v2/publish/" | "/v2/schedules/" | `/v2/enqueue/${string}/`,
        publishOptions: PublishOptions,
        extraHeaders: Record<string, string>,
        decodeResult: (json: unknown) => Effect.Effect<A, Schema.SchemaError>
      ) =>
        Effect.gen(function*() {
          const destination = /^https?:\/\//i.test(publishOptions.destination)
            ? publishOptions.destination
            : encodeURIComponent(publishOptions.destination)
          const body = publishOptions.body ?? new Uint8Array()
          const request = HttpClientRequest.post(`${baseUrl}${route}${destination}`).pipe(
            HttpClientRequest.bearerToken(Redacted.value(token)),
            HttpClientRequest.setHeaders({ ...publishHeaders(publishOptions), ...extraHeaders }),
            HttpClientRequest.setBody(
              typeof body === "string"
                ? HttpBody.text(body, publishOptions.contentType ?? "text/plain")
                : HttpBody.uint8Array(body, publishOptions.contentType ?? "application/octet-stream")
            )
          )
          const response = yield* http.execute(request)
          const json = yield* response.json
          if (response.status >= 200 && response.status < 300) return yield* decodeResult(json)
          const error = Schema.decodeUnknownOption(ErrorBody)(json)
          return yield* new PublishFailed({
            status: response.status,
            code: error._tag === "Some" ? error.value.code : "request_failed",
            message: error._tag === "Some" ? error.value.message : `The queue answered ${response.status}`,
            body: json
          })
        }).pipe(
          Effect.catch((error) =>
            error instanceof PublishFailed
              ? Effect.fail(error)
              : Effect.fail(new PublishFailed({ status: 0, code: "request_failed", message: `Could not publish: ${String((error as { message?: unknown }).message ?? error)}` }))
          )
        )
      const publish = (publishOptions: PublishOptions) =>
        send("/v2/publish/", publishOptions, {}, Schema.decodeUnknownEffect(PublishResultSchema))
      return QueueClient.of({
        publish,
        schedule: (scheduleOptions) =>
          send("/v2/schedules/", scheduleOptions, {
            "Svc-Cron": scheduleOptions.cron,
            ...(scheduleOptions.scheduleId === undefined ? {} : { "Svc-Schedule-Id": scheduleOptions.scheduleId })
          }, Schema.decodeUnknownEffect(CreatedScheduleSchema)),
        enqueue: (queueName, publishOptions) =>
          send(`/v2/enqueue/${encodeURIComponent(queueName)}/`, publishOptions, {}, Schema.decodeUnknownEffect(PublishResultSchema)),
        publishJSON: (publishOptions) =>
          publish({ ...publishOptions, body: JSON.stringify(publishOptions.body), contentType: "application/json" }),
        api
      })
    })

  /** {@link make} as a layer, on `fetch`. */
  static readonly layer = (options: { readonly baseUrl: string; readonly token: string | Redacted.Redacted<string> }) =>
    Layer.effect(QueueClient, QueueClient.make(options)).pipe(Layer.provide(FetchHttpClient.layer))
}
