/**
 * A typed client of the queue: `publish` / `publishJSON` and `schedule` (the raw publish and
 * schedule-create routes) and, through `api`, every `QueueApi` endpoint (messages and their bulk
 * cancel, DLQ and its bulk retry and delete, URL groups, keys, schedules, flow control, queues,
 * events) from the shared definition.
 *
 * ```ts
 * const program = Effect.gen(function*() {
 *   const queue = yield* QueueClient
 *   const published = yield* queue.publishJSON({ destination: "https://example.com/hook", body: { hello: "world" }, retries: 5 })
 *   if ("messageId" in published) yield* Effect.log(published.messageId) // a URL group answers an array
 *   const page = yield* queue.api.dlq.list({ query: {} })
 * }).pipe(Effect.provide(QueueClient.layer({ baseUrl: "http://localhost:8788", token: process.env.QUEUE_TOKEN! })))
 * ```
 */
import type { BatchElement, BatchResult, CreatedSchedule, PublishResult } from "@svc/schema"
import {
  BatchResult as BatchResultSchema,
  CreatedSchedule as CreatedScheduleSchema,
  PublishResult as PublishResultSchema,
  QueueApi,
  QueueAuth
} from "@svc/schema"
import { Context, Effect, Layer, Redacted, Schema } from "effect"
import { FetchHttpClient, HttpBody, HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient, HttpApiMiddleware } from "effect/http-api"
import { AnswerTooLarge, capAnswers, checkLimits, DEFAULT_MAX_ANSWER_BYTES, DEFAULT_TIMEOUT_MS } from "./AnswerCap.ts"
import { pathSegment, type PublishOptions, publishHeaders, segmentProblem } from "./PublishHeaders.ts"

export { AnswerTooLarge } from "./AnswerCap.ts"
export { type CallbackOptions, type PublishOptions, publishHeaders } from "./PublishHeaders.ts"

/**
 * A publish the queue refused (or could not be reached for): the `{code, message}` of its answer. An
 * answer over `maxAnswerBytes` is `request_failed` with that answer's status and the message of
 * {@link AnswerTooLarge}, as the Promise client words it.
 */
export class PublishFailed extends Schema.TaggedError<PublishFailed>()("PublishFailed", {
  status: Schema.Number,
  code: Schema.String,
  message: Schema.String,
  body: Schema.optional(Schema.Unknown)
}) {}

const ErrorBody = Schema.Struct({ code: Schema.String, message: Schema.String })

/** A schedule: a publish (`PublishOptions`, but no deduplication id) made on every tick of `cron`. */
export interface ScheduleOptions extends Omit<PublishOptions, "deduplicationId"> {
  /** `Svc-Cron`: 5 fields, optionally prefixed `CRON_TZ=<IANA zone> `. */
  readonly cron: string
  /** `Svc-Schedule-Id`: create or replace the schedule with this id. */
  readonly scheduleId?: string | undefined
}

/** One message of {@link QueueClient} `batch`: a publish, optionally into the FIFO queue `queue`. */
export interface BatchMessageOptions extends PublishOptions {
  readonly queue?: string | undefined
}

/** The `POST /v2/batch` element of a publish: text bodies as UTF-8, byte bodies as base64. */
export const batchElement = (options: BatchMessageOptions): BatchElement => {
  const headers = publishHeaders(options)
  const body = options.body ?? ""
  // Bytes with no type of the caller's (the option, or a raw header in any case) go as octet-stream.
  const typed = Object.keys(headers).some((name) => name.toLowerCase() === "content-type")
  return {
    destination: options.destination,
    ...(typeof body === "string" ? { body } : { body: Buffer.from(body).toString("base64"), bodyEncoding: "base64" as const }),
    headers: typed || typeof body === "string" ? headers : { ...headers, "content-type": "application/octet-stream" },
    ...(options.queue === undefined ? {} : { queue: options.queue })
  }
}

/** What {@link QueueClient} `make` and `layer` take. */
export interface QueueClientOptions {
  /** Where the queue listens, e.g. `http://localhost:8788`. */
  readonly baseUrl: string
  /** `QUEUE_TOKEN`, sent as `Authorization: Bearer <token>`. */
  readonly token: string | Redacted.Redacted<string>
  /** The largest answer read, in bytes (default 320 MiB); a larger one is refused unread past that. */
  readonly maxAnswerBytes?: number | undefined
  /** How long one call may take, its answer read whole (default 60,000 ms, as the Promise client's). */
  readonly timeoutMs?: number | undefined
}

export class QueueClient extends Context.Service<QueueClient, {
  readonly publish: (options: PublishOptions) => Effect.Effect<PublishResult, PublishFailed>
  /** Creates (or with `scheduleId` replaces) a schedule; the rest of the schedule routes are `api.schedules`. */
  readonly schedule: (options: ScheduleOptions) => Effect.Effect<CreatedSchedule, PublishFailed>
  readonly publishJSON: (options: Omit<PublishOptions, "body" | "contentType"> & { readonly body: unknown }) => Effect.Effect<PublishResult, PublishFailed>
  /** `POST /v2/enqueue/<queue>/<destination>`: a publish into a FIFO queue; the queue routes are `api.queues`. */
  readonly enqueue: (queueName: string, options: PublishOptions) => Effect.Effect<PublishResult, PublishFailed>
  /**
   * `POST /v2/batch`: every message in one request and one transaction, all or none; answer *i* is
   * what `publish` answers for message *i*.
   */
  readonly batch: (messages: ReadonlyArray<BatchMessageOptions>) => Effect.Effect<BatchResult, PublishFailed>
  /** Every `QueueApi` endpoint; an answer over `maxAnswerBytes` fails with {@link AnswerTooLarge}. */
  readonly api: HttpApiClient.ForApi<typeof QueueApi, AnswerTooLarge>
}>()("@svc/queue/QueueClient") {
  /**
   * A client of the queue at `baseUrl` with `token` (QUEUE_TOKEN); needs an `HttpClient`. Every answer
   * is read whole before it is decoded, and one larger than `maxAnswerBytes` (default 320 MiB, the
   * Promise client's) is refused unread past that; a call with no whole answer within `timeoutMs`
   * (default 60 s) fails. A `maxAnswerBytes` or `timeoutMs` that is not a whole number from 1 is a defect.
   */
  static readonly make = (options: QueueClientOptions) =>
    Effect.gen(function*() {
      const token = typeof options.token === "string" ? Redacted.make(options.token) : options.token
      const baseUrl = options.baseUrl.replace(/\/+$/, "")
      const limits = {
        baseUrl,
        maxAnswerBytes: options.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES,
        timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS
      }
      yield* checkLimits("QueueClient", limits)
      const http = capAnswers(limits)(yield* HttpClient.HttpClient)
      const api = yield* HttpApiClient.makeWith(QueueApi, { httpClient: http, baseUrl }).pipe(
        Effect.provide(HttpApiMiddleware.layerClient(QueueAuth, ({ next, request }) =>
          next(HttpClientRequest.bearerToken(request, Redacted.value(token)))))
      )
      /** Sends `request`: a 2xx answer decoded, any other a `PublishFailed` with the queue's `{code, message}`. */
      const answer = <A>(
        request: HttpClientRequest.HttpClientRequest,
        decodeResult: (json: unknown) => Effect.Effect<A, Schema.SchemaError>
      ) =>
        Effect.gen(function*() {
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
        })
      /**
       * Anything but the queue's refusal (no answer, an undecodable one) as a `PublishFailed` of status 0;
       * an answer over the cap with its status and the cap's message.
       */
      const failedAs = (what: string) => <A, E>(effect: Effect.Effect<A, E>) =>
        effect.pipe(Effect.catch((error) =>
          error instanceof PublishFailed
            ? Effect.fail(error)
            : error instanceof AnswerTooLarge
            ? Effect.fail(new PublishFailed({ status: error.status, code: "request_failed", message: error.message }))
            : Effect.fail(
              new PublishFailed({ status: 0, code: "request_failed", message: `${what}: ${String((error as { message?: unknown }).message ?? error)}` })
            )
        ))
      /** POST `<route>/<destination>` with the publish headers: the raw routes publish and schedule share. */
      const send = <A>(
        route: "/v2/publish/" | "/v2/schedules/" | `/v2/enqueue/${string}/`,
        publishOptions: PublishOptions,
        extraHeaders: Record<string, string>,
        decodeResult: (json: unknown) => Effect.Effect<A, Schema.SchemaError>
      ) =>
        Effect.gen(function*() {
          const problem = segmentProblem(publishOptions.destination)
          if (problem !== undefined) {
            return yield* new PublishFailed({ status: 0, code: "invalid_request", message: `destination: ${problem}` })
          }
          const body = publishOptions.body ?? new Uint8Array()
          const request = HttpClientRequest.post(`${baseUrl}${route}${pathSegment(publishOptions.destination)}`).pipe(
            HttpClientRequest.bearerToken(Redacted.value(token)),
            HttpClientRequest.setHeaders({ ...publishHeaders(publishOptions), ...extraHeaders }),
            HttpClientRequest.setBody(
              typeof body === "string"
                ? HttpBody.text(body, publishOptions.contentType ?? "text/plain")
                : HttpBody.uint8Array(body, publishOptions.contentType ?? "application/octet-stream")
            )
          )
          return yield* answer(request, decodeResult)
        }).pipe(failedAs("Could not publish"))
      const publish = (publishOptions: PublishOptions) =>
        send("/v2/publish/", publishOptions, {}, Schema.decodeUnknownEffect(PublishResultSchema))
      const batch = (messages: ReadonlyArray<BatchMessageOptions>) =>
        Effect.gen(function*() {
          const request = HttpClientRequest.post(`${baseUrl}/v2/batch`).pipe(
            HttpClientRequest.bearerToken(Redacted.value(token)),
            HttpClientRequest.setBody(HttpBody.text(JSON.stringify(messages.map(batchElement)), "application/json"))
          )
          return yield* answer(request, Schema.decodeUnknownEffect(BatchResultSchema))
        }).pipe(failedAs("Could not publish the batch"))
      return QueueClient.of({
        publish,
        batch,
        schedule: (scheduleOptions) =>
          send("/v2/schedules/", scheduleOptions, {
            "Svc-Cron": scheduleOptions.cron,
            ...(scheduleOptions.scheduleId === undefined ? {} : { "Svc-Schedule-Id": scheduleOptions.scheduleId })
          }, Schema.decodeUnknownEffect(CreatedScheduleSchema)),
        enqueue: (queueName, publishOptions) =>
          segmentProblem(queueName) === undefined
            ? send(`/v2/enqueue/${pathSegment(queueName)}/`, publishOptions, {}, Schema.decodeUnknownEffect(PublishResultSchema))
            : Effect.fail(new PublishFailed({ status: 0, code: "invalid_request", message: `queueName: ${segmentProblem(queueName)}` })),
        publishJSON: (publishOptions) =>
          publish({ ...publishOptions, body: JSON.stringify(publishOptions.body), contentType: "application/json" }),
        api
      })
    })

  /** {@link make} as a layer, on `fetch`. */
  static readonly layer = (options: QueueClientOptions) =>
    Layer.effect(QueueClient, QueueClient.make(options)).pipe(Layer.provide(FetchHttpClient.layer))
}
