/**
 * The internal RPC group (`QueueRpcs`) at POST /rpc (NDJSON over HTTP), behind `QUEUE_TOKEN`.
 *
 * The handlers are the HTTP API's: the same store calls and `Operations` (publish, DLQ page, URL
 * groups). The token check is the HTTP API's `queueAuth`, run by the `QueueRpcAuth` middleware for
 * every procedure, so a refusal reaches the client as a typed `Unauthorized` / `ServiceUnavailable`.
 * A caller without the token is answered that way from a body of at most
 * {@link UNAUTHENTICATED_BODY_BYTES} (an RPC request is a few hundred bytes); a larger or unsized body
 * is refused with a plain 401 before it is read, so nobody without the token makes the process read
 * and parse up to the RPC's 16 MiB per request, and so is a body that is not a well-formed call.
 */
import { BearerAuth, RpcDefects, RpcHttp } from "@svc/platform"
import { InvalidRequest, QueueRpcAuth, QueueRpcs } from "@svc/schema"
import { Effect, Exit, Layer } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { RpcSerialization } from "effect/rpc"
import { queueAuth } from "./http.ts"
import * as Batch from "./Batch.ts"
import * as Bulk from "./Bulk.ts"
import { listEvents } from "./EventOperations.ts"
import * as Operations from "./Operations.ts"
import { lowercaseHeaders } from "./Publish.ts"
import * as ScheduleOperations from "./ScheduleOperations.ts"
import { QueueConfig } from "./QueueConfig.ts"
import { Dlq } from "./store/Dlq.ts"
import { Groups } from "./store/Groups.ts"
import { Messages } from "./store/Messages.ts"

/**
 * The shared operations name parameters as the HTTP API carries them (path, query); in an RPC
 * they are all fields of the payload. Header issues stay: `Publish` takes the same headers.
 */
const inPayload = <E>(error: E): E =>
  error instanceof InvalidRequest
    ? new InvalidRequest({ issues: error.issues.map((issue) => issue.in === "header" ? issue : { ...issue, in: "body" }) }) as E
    : error

/**
 * A payload's headers as node gives a request's: names lowercase, which is what the publish parser
 * reads. Two names differing only in case are ambiguous: refused (`Publish.lowercaseHeaders`).
 */
const requestHeaders = (
  headers: Readonly<Record<string, string>> | undefined
): Effect.Effect<Record<string, string>, InvalidRequest> => {
  const { headers: lowercase, issues } = lowercaseHeaders(headers ?? {})
  return issues.length > 0 ? Effect.fail(new InvalidRequest({ issues: [...issues] })) : Effect.succeed(lowercase)
}

// A database failure is a defect of the stores (their boundary) here as on the HTTP API: logged in full, never sent.
export const RpcHandlers = QueueRpcs.toLayer(Effect.gen(function*() {
  const messages = yield* Messages
  const dlq = yield* Dlq
  const groups = yield* Groups
  return QueueRpcs.of({
    Publish: ({ destination, body, headers }) =>
      requestHeaders(headers).pipe(
        Effect.flatMap((lowercase) => Operations.publish({ destination, headers: lowercase, body: Effect.succeed(body ?? new Uint8Array()) })),
        Effect.mapError(inPayload)
      ),
    PublishBatch: ({ messages: elements }) => Batch.publishBatch(elements).pipe(Effect.mapError(inPayload)),
    GetMessage: ({ messageId }) => messages.get(messageId),
    ListDlq: (query) => Operations.listDlq(query).pipe(Effect.mapError(inPayload)),
    RetryDlq: ({ dlqId }) => dlq.retry(dlqId),
    DeleteDlq: ({ dlqId }) => dlq.delete(dlqId),
    ListTopics: (query) => Operations.listTopics(query).pipe(Effect.mapError(inPayload)),
    GetTopic: ({ name }) => Operations.getTopic(name),
    DeleteTopic: ({ name }) => groups.delete(name),
    UpsertEndpoints: ({ name, endpoints }) => Operations.upsertEndpoints(name, endpoints).pipe(Effect.mapError(inPayload)),
    AddSchedule: ({ body, cron, destination, headers, scheduleId }) =>
      requestHeaders(headers).pipe(
        Effect.flatMap((lowercase) =>
          ScheduleOperations.createSchedule({
            destination,
            headers: { ...lowercase, "svc-cron": cron, ...(scheduleId === undefined ? {} : { "svc-schedule-id": scheduleId }) },
            body: Effect.succeed(body ?? new Uint8Array())
          })
        ),
        // The RPC's one error is InvalidRequest: a body over the cap is an issue of `body`.
        Effect.catchTag("MessageTooLarge", (error) => Effect.fail(new InvalidRequest({ issues: [{ in: "body", parameter: "body", problem: error.message }] }))),
        Effect.mapError(inPayload),
        // The cron and the id are fields of this payload, not headers.
        Effect.mapError((error) =>
          new InvalidRequest({
            issues: error.issues.map((issue) =>
              issue.parameter === "Svc-Cron" ? { ...issue, in: "body" as const, parameter: "cron" }
              : issue.parameter === "Svc-Schedule-Id" ? { ...issue, in: "body" as const, parameter: "scheduleId" }
              : issue
            )
          })
        )
      ),
    ListSchedules: (query) => ScheduleOperations.listSchedules(query).pipe(Effect.mapError(inPayload)),
    GetSchedule: ({ scheduleId }) => ScheduleOperations.getSchedule(scheduleId),
    PauseSchedule: ({ scheduleId }) => ScheduleOperations.pauseSchedule(scheduleId),
    ResumeSchedule: ({ scheduleId }) => ScheduleOperations.resumeSchedule(scheduleId),
    DeleteSchedule: ({ scheduleId }) => ScheduleOperations.deleteSchedule(scheduleId),
    ListEvents: (query) => listEvents(query).pipe(Effect.mapError(inPayload)),
    CancelMessages: (request) => Bulk.cancelMessages(request),
    RetryDlqEntries: (request) => Bulk.retryDlq(request),
    DeleteDlqEntries: (request) => Bulk.deleteDlq(request)
  })
}))

/** `QUEUE_TOKEN` as on the HTTP API: constant-time; unset → ServiceUnavailable; wrong or missing → Unauthorized. */
export const RpcAuthLive = Layer.effect(
  QueueRpcAuth,
  Effect.gen(function*() {
    const settings = yield* QueueConfig
    return QueueRpcAuth.of(queueAuth(settings).rpc)
  })
)

/** The largest body read from a caller without the token (to answer it a typed refusal). */
export const UNAUTHENTICATED_BODY_BYTES = 64 * 1024

/** POST /rpc: the RPC server of `QueueRpcs`. Needs the stores and `QueueConfig`. */
export const RpcRoute = HttpRouter.use((router) =>
  Effect.gen(function*() {
    const auth = queueAuth(yield* QueueConfig)
    const httpEffect = yield* RpcHttp.rpcHttpEffect(QueueRpcs)
    yield* router.add(
      "POST",
      "/rpc",
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const refused = yield* Effect.exit(auth.check(BearerAuth.tokenOf(request.headers["authorization"])))
        const declared = Number(request.headers["content-length"] ?? Number.NaN)
        if (Exit.isSuccess(refused)) return yield* httpEffect
        // NaN (chunked, no length) is not a size that may be read either
        if (!(declared <= UNAUTHENTICATED_BODY_BYTES)) return yield* Effect.failCause(refused.cause)
        // A well-formed call gets its typed refusal; one the server would refuse as malformed (an
        // unknown procedure, a payload of the wrong shape) gets the plain refusal: its 400 named every
        // procedure and the payloads' fields to a caller without the token (an outside sweep)
        return yield* httpEffect.pipe(
          Effect.catch(() => Effect.failCause(refused.cause)),
          Effect.flatMap((response) => response.status >= 400 ? Effect.failCause(refused.cause) : Effect.succeed(response))
        )
      })
    )
  })
).pipe(Layer.provide([RpcHandlers, RpcAuthLive, RpcDefects.layer, RpcSerialization.layerNdjson]))
