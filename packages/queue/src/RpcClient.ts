/**
 * A client of the queue's internal RPC (`QueueRpcs` at POST /rpc), used by `svc queue`. Every
 * procedure is typed by the shared definition in `@svc/schema`; a refused token comes back as
 * `Unauthorized` (or `ServiceUnavailable` when the queue has no QUEUE_TOKEN), an unreachable queue
 * as `RpcClientError`.
 *
 * ```ts
 * const program = Effect.gen(function*() {
 *   const queue = yield* QueueRpcClient
 *   const { messages } = yield* queue.ListDlq({ limit: 20 })
 *   for (const message of messages) yield* queue.RetryDlq({ dlqId: message.dlqId })
 * }).pipe(Effect.provide(QueueRpcClient.layer({ baseUrl: "http://localhost:8788", token: process.env.QUEUE_TOKEN! })))
 * ```
 */
import type { DlqMessage, QueueEvent, Schedule, Topic } from "@svc/schema"
import { QueueRpcs } from "@svc/schema"
import { ServiceClient } from "@svc/platform"
import { Context, Layer, Redacted } from "effect"
import type { RpcClientError } from "effect/rpc"
import { RpcClient, RpcSerialization } from "effect/rpc"
import { capAnswersAsHttpError, checkLimits, DEFAULT_MAX_ANSWER_BYTES, DEFAULT_TIMEOUT_MS } from "./AnswerCap.ts"

export class QueueRpcClient extends Context.Service<
  QueueRpcClient,
  RpcClient.FromGroup<typeof QueueRpcs, RpcClientError.RpcClientError>
>()("@svc/queue/QueueRpcClient") {
  /**
   * A client of the queue at `baseUrl` (e.g. `http://localhost:8788`) with `token` (QUEUE_TOKEN), on
   * `fetch`. An answer larger than `maxAnswerBytes` (default 320 MiB, as the other clients) is refused
   * unread past that: an `RpcClientError` whose cause is `AnswerTooLarge`; a call with no whole answer
   * within `timeoutMs` (default 60 s) fails with an `RpcClientError` saying so. A `maxAnswerBytes` or
   * `timeoutMs` that is not a whole number from 1 is a defect of the layer.
   */
  static readonly layer = (options: {
    readonly baseUrl: string
    readonly token: string | Redacted.Redacted<string>
    readonly maxAnswerBytes?: number | undefined
    readonly timeoutMs?: number | undefined
  }) => {
    const token = typeof options.token === "string" ? Redacted.make(options.token) : options.token
    const baseUrl = options.baseUrl.replace(/\/+$/, "")
    const limits = {
      baseUrl,
      maxAnswerBytes: options.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES,
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS
    }
    // The token goes in the HTTP Authorization header, where the server's QueueRpcAuth reads it; an
    // error answer (a 431 for an oversized token, a 404 for a wrong URL) keeps its status and message
    // instead of reading as "Received empty HTTP response". Every answer, an error's too, is read
    // through the cap first: the NDJSON reader would otherwise buffer an endless line whole.
    const authenticated = ServiceClient.bearerHttpClient(token, { transformClient: capAnswersAsHttpError(limits) })
    return Layer.effect(QueueRpcClient, RpcClient.make(QueueRpcs)).pipe(
      Layer.provide(RpcClient.layerProtocolHttp({ url: `${baseUrl}/rpc` })),
      Layer.provide(RpcSerialization.layerNdjson),
      Layer.provide(authenticated),
      Layer.provide(Layer.effectDiscard(checkLimits("QueueRpcClient", limits)))
    )
  }
}

const time = (epochMs: number) => new Date(epochMs).toISOString()

/** One line per dead-lettered message, for a terminal. */
export const describeDlq = (message: DlqMessage): string => {
  const outcome = message.responseStatus !== undefined
    ? `answered ${message.responseStatus}`
    : `error: ${message.lastError ?? "unknown"}`
  const group = message.topicName === undefined
    ? ""
    : ` (group ${message.topicName}${message.endpointName === undefined ? "" : `/${message.endpointName}`})`
  return `${message.dlqId}  ${message.method} ${message.url}${group}  ${outcome} after ${message.retried} retries, ` +
    `failed ${time(message.failedAt)}`
}

/** One line per URL group: its name and endpoints. */
export const describeTopic = (topic: Topic): string => {
  const endpoints = topic.endpoints.map((endpoint) => endpoint.name === undefined ? endpoint.url : `${endpoint.name}=${endpoint.url}`)
  return `${topic.name}  ${endpoints.length} endpoint${endpoints.length === 1 ? "" : "s"}` +
    (endpoints.length === 0 ? "" : `: ${endpoints.join(", ")}`)
}

/** A URL group in full: the summary line, then one line per default header. */
export const describeTopicDetails = (topic: Topic): ReadonlyArray<string> => [
  describeTopic(topic),
  ...Object.entries(topic.headers).map(([name, value]) =>
    `  header ${name}: ${typeof value === "string" ? value : value.join(", ")}`
  ),
  `  created ${time(topic.createdAt)}, updated ${time(topic.updatedAt)}`
]

/** One line per schedule: id, cron, destination, the next fire (or paused) and the last one. */
export const describeSchedule = (schedule: Schedule): string => {
  const next = schedule.paused ? "paused" : schedule.nextFireTimes[0] === undefined ? "no next fire" : `next ${time(schedule.nextFireTimes[0])}`
  const last = schedule.lastFire === undefined
    ? "never fired"
    : `last ${time(schedule.lastFire.tick)}: ${
      schedule.lastFire.error === undefined ? `${schedule.lastFire.messageIds.length} message(s)` : `refused (${schedule.lastFire.error})`
    }`
  return `${schedule.scheduleId}  ${schedule.cron}  ${schedule.destination}  ${next}, ${last}`
}

/** A schedule in full: the summary line, its next fire times and its stored headers. */
export const describeScheduleDetails = (schedule: Schedule): ReadonlyArray<string> => [
  describeSchedule(schedule),
  ...schedule.nextFireTimes.map((at) => `  fires ${time(at)}`),
  ...Object.entries(schedule.header).map(([name, value]) => `  header ${name}: ${value}`),
  `  created ${time(schedule.createdAt)}, updated ${time(schedule.updatedAt)}`
]

/** One line per event of the events log: when, what, which message and destination, and the details it has. */
export const describeEvent = (event: QueueEvent): string => {
  const group = event.topicName === undefined
    ? ""
    : ` (group ${event.topicName}${event.endpointName === undefined ? "" : `/${event.endpointName}`})`
  const details = [
    event.responseStatus === undefined ? undefined : `answered ${event.responseStatus}`,
    event.error === undefined ? undefined : `error: ${event.error}`,
    event.retried === undefined || event.retried === 0 ? undefined : `${event.retried} retries`,
    event.nextDeliveryTime === undefined ? undefined : `due ${time(event.nextDeliveryTime)}`,
    event.callbackMessageId === undefined ? undefined : `callback ${event.callbackMessageId}`
  ].filter((detail) => detail !== undefined)
  return `${time(event.time)}  ${event.state}  ${event.messageId}  ${event.url}${group}` +
    (details.length === 0 ? "" : `  ${details.join(", ")}`)
}
