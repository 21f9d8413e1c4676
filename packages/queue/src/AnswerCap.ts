/**
 * The answer limits of the effect clients (`Client.ts`, `RpcClient.ts`): the rules of `CappedBody.ts`,
 * which the Promise client reads through, applied to effect's `HttpClient`. effect's client reads a body
 * (`response.json`, `.text`, an RPC answer's stream) whole, however long it runs: a broken or hostile
 * server (or a wrong `baseUrl`) streaming an endless body filled the process's memory, and one that
 * never answered held the call for good (effect's client has no timeout of its own).
 */
import { Context, Effect, Schema, Stream } from "effect"
import { HttpClient, HttpClientError, HttpClientResponse } from "effect/http"
import { answerTooLargeMessage, maxAnswerBytesProblem, noAnswerInTimeMessage, readCappedBody, timeoutMsProblem } from "./CappedBody.ts"

export { DEFAULT_MAX_ANSWER_BYTES, DEFAULT_TIMEOUT_MS } from "./CappedBody.ts"

/** What both effect clients limit: the answer's size and the time to have it whole. */
export interface AnswerLimits {
  readonly baseUrl: string
  readonly maxAnswerBytes: number
  readonly timeoutMs: number
}

/**
 * An answer larger than `maxAnswerBytes`: read no further than the cap (nothing of it when its
 * `Content-Length` says so), its connection let go. `status` is the answer's.
 */
export class AnswerTooLarge extends Schema.TaggedError<AnswerTooLarge>()("AnswerTooLarge", {
  status: Schema.Number,
  baseUrl: Schema.String,
  maxAnswerBytes: Schema.Number,
  message: Schema.String
}) {}

/**
 * A `maxAnswerBytes` that is not a whole number of bytes from 1, or a `timeoutMs` that is not a whole
 * number of milliseconds a timer can hold, as a defect of the client's construction.
 */
export const checkLimits = (client: string, limits: AnswerLimits): Effect.Effect<void> => {
  const problem = maxAnswerBytesProblem(limits.maxAnswerBytes) ?? timeoutMsProblem(limits.timeoutMs)
  return problem === undefined ? Effect.void : Effect.die(new TypeError(`${client}: ${problem}`))
}

/** Statuses whose answer has no body by HTTP's rules (fetch gives them none): nothing to read. */
const NO_BODY = new Set([101, 103, 204, 205, 304])

const decodeError = (response: HttpClientResponse.HttpClientResponse, cause: unknown) =>
  new HttpClientError.HttpClientError({ reason: new HttpClientError.DecodeError({ request: response.request, response, cause }) })

/**
 * `response` with its body read whole through `readCappedBody` (a body-less answer, such as a HEAD's,
 * as empty), or `AnswerTooLarge` once it is over `maxAnswerBytes`. The body is read through the
 * response's own stream, so any `HttpClient` backend is capped; ending that stream (at the cap, at the
 * end, or when the caller is interrupted) lets the request go.
 */
const readCapped = (
  response: HttpClientResponse.HttpClientResponse,
  options: AnswerLimits
): Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError | AnswerTooLarge> => {
  if (NO_BODY.has(response.status)) return Effect.succeed(response)
  const body = response.stream.pipe(Stream.catchReason("HttpClientError", "EmptyBodyError", () => Stream.empty))
  return Effect.gen(function*() {
    const bytes = yield* Effect.tryPromise({
      try: (signal) =>
        readCappedBody(
          { headers: new Headers(Object.entries(response.headers)), body: Stream.toReadableStreamWith(body, Context.empty(), { signal }) },
          options.maxAnswerBytes
        ),
      catch: (cause) => HttpClientError.isHttpClientError(cause) ? cause : decodeError(response, cause)
    })
    if (bytes === undefined) {
      return yield* new AnswerTooLarge({
        status: response.status,
        baseUrl: options.baseUrl,
        maxAnswerBytes: options.maxAnswerBytes,
        message: answerTooLargeMessage(options.baseUrl, options.maxAnswerBytes)
      })
    }
    // A web Response holds only 200-599; fetch passes any three digits (a 999 from something that is not the queue).
    if (response.status < 200 || response.status > 599) {
      return yield* new HttpClientError.HttpClientError({
        reason: new HttpClientError.StatusCodeError({
          request: response.request,
          response,
          description: `status ${response.status} is not an HTTP status`
        })
      })
    }
    return yield* Effect.try({
      try: () =>
        HttpClientResponse.fromWeb(
          response.request,
          new Response(bytes, { status: response.status, headers: new Headers(Object.entries(response.headers)) })
        ),
      catch: (cause) => decodeError(response, cause)
    })
  })
}

/**
 * `client` with the whole call (the request, the answer read whole) bounded by `timeoutMs`: past it the
 * call is interrupted, which lets its connection go, and fails with a `TransportError` worded as the
 * Promise client's.
 */
const bounded = (options: AnswerLimits) =>
<E, R>(client: HttpClient.HttpClient.With<E, R>): HttpClient.HttpClient.With<E | HttpClientError.HttpClientError, R> =>
  HttpClient.transform(client, (call, request) =>
    Effect.timeoutOrElse(call, {
      duration: options.timeoutMs,
      orElse: () =>
        Effect.fail(
          new HttpClientError.HttpClientError({
            reason: new HttpClientError.TransportError({ request, description: noAnswerInTimeMessage(options.baseUrl, options.timeoutMs) })
          })
        )
    }))

/**
 * `client` reading every answer whole before handing it on, refusing one over `maxAnswerBytes` with
 * {@link AnswerTooLarge} (whose message names the cap and `baseUrl`, as the Promise client's does), and
 * failing a call with no whole answer within `timeoutMs`.
 */
export const capAnswers = (options: AnswerLimits) =>
<E, R>(client: HttpClient.HttpClient.With<E, R>): HttpClient.HttpClient.With<E | HttpClientError.HttpClientError | AnswerTooLarge, R> =>
  bounded(options)(HttpClient.transformResponse(client, Effect.flatMap((response) => readCapped(response, options))))

/**
 * {@link capAnswers} for a consumer that takes only an `HttpClientError` (effect's RPC client): the
 * refusal is a `DecodeError` whose description is the {@link AnswerTooLarge} message and whose cause
 * is that error.
 */
export const capAnswersAsHttpError = (options: AnswerLimits) =>
<E, R>(client: HttpClient.HttpClient.With<E, R>): HttpClient.HttpClient.With<E | HttpClientError.HttpClientError, R> =>
  bounded(options)(HttpClient.transformResponse(client, Effect.flatMap((response) =>
    readCapped(response, options).pipe(
      Effect.catchTag("AnswerTooLarge", (tooLarge) =>
        Effect.fail(
          new HttpClientError.HttpClientError({
            reason: new HttpClientError.DecodeError({ request: response.request, response, description: tooLarge.message, cause: tooLarge })
          })
        ))
    ))))
