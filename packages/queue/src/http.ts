/**
 * The queue's HTTP routes: `POST /v2/publish/<destination>` (a raw route: open-ended header
 * families, any body) and the `QueueApi` groups (messages, DLQ, URL groups, signing keys). What
 * they share with the internal RPC (`rpc.ts`) beyond a single store call lives in `Operations.ts`.
 */
import {
  BatchRequest,
  BatchTooLarge,
  FLOW_CONTROL_KEY_PATTERN,
  InvalidRequest,
  MAX_JSON_BODY_BYTES,
  MessageTooLarge,
  QUEUE_NAME_PATTERN,
  QueueApi,
  QueueAuth,
  QueueJsonBody,
  queueOpenApi,
  RequestTooLarge,
  UnsupportedMediaType
} from "@svc/schema"
import type { RequestIssue } from "@svc/schema"
import { apiRoutes, BearerAuth, JsonBody, openApiRoute } from "@svc/platform"
import { ByteSize, Effect, Layer, Option, Result, Schema } from "effect"
import { HttpIncomingMessage, HttpMethod, HttpRouter, HttpServerError, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import * as Batch from "./Batch.ts"
import * as Bulk from "./Bulk.ts"
import { listEvents } from "./EventOperations.ts"
import * as Operations from "./Operations.ts"
import * as Pages from "./Pages.ts"
import { FORWARDED_SETTING } from "./Publish.ts"
import * as ScheduleOperations from "./ScheduleOperations.ts"
import { QueueConfig, type QueueSettings } from "./QueueConfig.ts"
import { Dlq } from "./store/Dlq.ts"
import { FlowControls } from "./store/FlowControl.ts"
import { Groups } from "./store/Groups.ts"
import { Queues } from "./store/Queues.ts"
import { Messages } from "./store/Messages.ts"
import { SigningKeys } from "./store/SigningKeys.ts"

// -----------------------------------------------------------------------------
// Authentication
// -----------------------------------------------------------------------------

/** `QUEUE_TOKEN`'s check (the suite's one bearer check): unset → 503, missing or wrong → 401. */
export const queueAuth = (settings: QueueSettings) =>
  BearerAuth.make({ variable: "QUEUE_TOKEN", surface: "The queue API (publishing included)", token: settings.token })

export const QueueAuthLive = Layer.effect(
  QueueAuth,
  Effect.map(QueueConfig, (settings) => QueueAuth.of({ bearer: queueAuth(settings).httpApi }))
)

// -----------------------------------------------------------------------------
// JSON bodies
// -----------------------------------------------------------------------------

/**
 * `QueueJsonBody`: a `QueueApi` endpoint's JSON body is declared UTF-8 (`JsonBody.charsetProblem`: 415
 * unread otherwise), passes `JsonBody.parse` (the rules of `POST /v2/batch`) and is a JSON object
 * before effect decodes it. The body read here is the one the payload decoder reads (node's request
 * caches it). "Expected" in the payload's own words: its `RequestObject` message ("expected a JSON
 * object with messageIds, filter or both").
 */
export const QueueJsonBodyLive = Layer.succeed(
  QueueJsonBody,
  QueueJsonBody.of((httpEffect, { endpoint }) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const contentType = (request.headers["content-type"] ?? "application/json").split(";")[0]!.trim().toLowerCase()
      const payload = endpoint.payload.get(contentType)
      // No JSON payload here: effect answers (no body to read, or 415 for another content type).
      if (!HttpMethod.hasBody(request.method) || payload?.encoding._tag !== "Json") return yield* httpEffect
      const charset = JsonBody.charsetProblem(request.headers["content-type"])
      if (charset !== undefined) return yield* new UnsupportedMediaType({ message: charset })
      const message = payload.schemas[0]?.ast.annotations?.message
      const expected = typeof message === "string" ? message.replace(/^expected /, "") : "a JSON object"
      const bytes = yield* readCapped(request, MAX_JSON_BODY_BYTES, () => new RequestTooLarge({ maxBytes: MAX_JSON_BODY_BYTES })).pipe(
        // a body that cannot be read at all (the client went away mid-body): the request ends here
        Effect.catchTag("HttpServerError", Effect.die)
      )
      const parsed = JsonBody.parse(bytes, expected)
      if (Result.isFailure(parsed)) return yield* new InvalidRequest({ issues: [parsed.failure] })
      const json = parsed.success
      if (typeof json !== "object" || json === null || Array.isArray(json)) {
        return yield* new InvalidRequest({
          issues: [{ in: "body", parameter: "", problem: `expected ${expected}, got ${JSON.stringify(json).slice(0, 100)}` }]
        })
      }
      return yield* httpEffect
    })
  )
)

// -----------------------------------------------------------------------------
// Publish
// -----------------------------------------------------------------------------

/**
 * The destination a path segment names. A URL written out (`https://host/a%20b`) is taken as sent:
 * its escapes are its own. Anything else is decoded once: a URL percent-encoded whole
 * (`https%3A%2F%2F…`, as the clients send one), and a group name, which has no `%` of its own, so
 * that a refusal quotes what the caller wrote (`"not a url"`, not `"not%20a%20url"`). A segment that
 * does not decode is left as is, and refused as a destination.
 */
const destinationIn = (segment: string): string => {
  if (/^https?:/i.test(segment)) return segment
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

/** Splits the raw request URL into the destination and the queue's own query parameters. */
const splitTarget = (rawUrl: string) => {
  const question = rawUrl.indexOf("?")
  const path = question < 0 ? rawUrl : rawUrl.slice(0, question)
  const search = question < 0 ? "" : rawUrl.slice(question + 1)
  // As sent: the route reads its destination from it (`destinationIn`), after any part of its own.
  // That is everything after the route's two segments, however they were spelt: the router matched
  // `/V2/%70ublish/` too, where a search for "/v2/publish/" cut a destination out of the wrong place.
  // An absolute-form target (`POST http://host/v2/publish/…`) is read from its path.
  const origin = path.startsWith("/") ? "" : /^[a-z][a-z\d+.-]*:(?:\/\/[^/]*)?/i.exec(path)?.[0] ?? ""
  const destination = path.slice(origin.length).split("/").slice(3).join("/")
  const config: Array<readonly [string, string]> = []
  const passThrough: Array<string> = []
  // A queue parameter (svc-...) is percent-encoded UTF-8: one that does not decode is refused, as
  // taking its text literally would store something other than what was meant (`%FF%FE`).
  const issues: Array<RequestIssue> = []
  // A queue parameter given twice (its name compared case-insensitively, as the header forms' are)
  // would be settled by order, the last one winning: `svc-delay=1d&svc-delay=2d` delayed by 2d.
  const given = new Map<string, string>()
  const twice = new Set<string>()
  let token: string | undefined
  let tokens = 0
  for (const part of search === "" ? [] : search.split("&")) {
    if (part === "") continue
    const eq = part.indexOf("=")
    const decode = (text: string) => {
      try {
        return decodeURIComponent(text.replace(/\+/g, " "))
      } catch {
        return undefined
      }
    }
    const rawName = eq < 0 ? part : part.slice(0, eq)
    const rawValue = eq < 0 ? "" : part.slice(eq + 1)
    const name = decode(rawName)
    const value = decode(rawValue)
    const lower = (name ?? rawName).toLowerCase()
    const undecodable = (text: string) =>
      `holds ${JSON.stringify(text.slice(0, 100))}, which is not percent-encoded UTF-8 (a %XX sequence that is not UTF-8, or a lone %)`
    // The token given twice is no token (the last would have won: `svc_token=right&svc_token=wrong`
    // passed, the reverse did not), and a 400 for a caller the bearer header authorises.
    if (lower === "svc_token") {
      tokens += 1
      if (tokens === 2) issues.push({ in: "query", parameter: "svc_token", problem: "is given twice: give it once" })
      token = tokens === 1 ? value ?? rawValue : undefined
    } else if (!lower.startsWith("svc-")) passThrough.push(part)
    else if (name === undefined) issues.push({ in: "query", parameter: rawName, problem: `the name ${undecodable(rawName)}` })
    else if (value === undefined) issues.push({ in: "query", parameter: name, problem: undecodable(rawValue) })
    else if (/\s/u.test(name)) {
      // `svc-retries%20=5` or `svc-retries+=5` (a '+' is a space) was no setting at all: dropped from
      // the destination and applied nowhere, so a near-miss of a name gave the defaults without a word
      issues.push({
        in: "query",
        parameter: name,
        problem: `the name holds white space (a '+' in a query string is a space): give it as ${JSON.stringify(name.replace(/\s/gu, ""))}`
      })
    } else if (given.has(lower)) {
      const first = given.get(lower)!
      if (!twice.has(lower)) {
        twice.add(lower)
        issues.push({
          in: "query",
          parameter: first,
          problem: first === name
            ? "is given twice: give it once"
            : `is given twice, as ${JSON.stringify(first)} and ${JSON.stringify(name)}: names are case-insensitive (as the headers' are), give one`
        })
      }
    } else {
      given.set(lower, name)
      config.push([name, value])
    }
  }
  return { destination, config, passThrough, token, issues }
}

/**
 * The `Svc-*` settings sent as more than one header line. Node joins the lines with ", ", so two
 * `Svc-Callback` lines read as one URL `…/a,%20http://…/b` and two `Svc-Deduplication-Id` lines as
 * the id "x1, y1" (an outside sweep); refused, as the query form refuses a parameter given twice. A
 * forwarded header keeps HTTP's list semantics: its lines reach the destination as one list.
 */
const repeatedSettings = (request: HttpServerRequest.HttpServerRequest): Array<RequestIssue> => {
  const raw = (request.source as { readonly rawHeaders?: unknown }).rawHeaders
  if (!Array.isArray(raw)) return []
  const firstSpelling = new Map<string, string>()
  const repeated = new Set<string>()
  for (let i = 0; i < raw.length; i += 2) {
    const name = String(raw[i])
    const lower = name.toLowerCase()
    if (!lower.startsWith("svc-") || FORWARDED_SETTING.test(lower)) continue
    if (firstSpelling.has(lower)) repeated.add(lower)
    else firstSpelling.set(lower, name)
  }
  return [...repeated].map((lower) => ({ in: "header", parameter: firstSpelling.get(lower)!, problem: "is given more than once: send one" }))
}

/**
 * A raw route's target (`splitTarget`) once the caller's token is checked; a queue parameter that
 * does not decode, or a setting given twice, is a 400.
 */
const authorizedTarget = (request: HttpServerRequest.HttpServerRequest, settings: QueueSettings) =>
  Effect.gen(function*() {
    const target = splitTarget(request.url)
    yield* queueAuth(settings).check(BearerAuth.tokenOf(request.headers["authorization"]) ?? target.token)
    const issues = [...target.issues, ...repeatedSettings(request)]
    if (issues.length > 0) return yield* new InvalidRequest({ issues })
    return target
  })

/**
 * A request body under `maxBytes`, else `tooLarge`: refused from its Content-Length before reading,
 * and cut off while reading when it has none.
 */
const readCapped = <E>(request: HttpServerRequest.HttpServerRequest, maxBytes: number, tooLarge: () => E) =>
  Effect.gen(function*() {
    const declared = Number(request.headers["content-length"])
    if (Number.isFinite(declared) && declared > maxBytes) return yield* Effect.fail(tooLarge())
    return new Uint8Array(
      yield* request.arrayBuffer.pipe(
        Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(maxBytes)),
        Effect.catch((error): Effect.Effect<never, E | HttpServerError.HttpServerError> =>
          HttpServerError.isHttpServerError(error) && error.reason._tag === "RequestParseError" &&
            error.reason.reason === "BodyTooLarge"
            ? Effect.fail(tooLarge())
            : Effect.fail(error)
        )
      )
    )
  })

/** The body of a publish (or schedule), read only once the request is valid, under the cap. */
const cappedBody = (request: HttpServerRequest.HttpServerRequest, settings: QueueSettings) =>
  readCapped(request, settings.maxMessageBytes, () => new MessageTooLarge({ maxBytes: settings.maxMessageBytes }))

/**
 * The routes that read their query as sent (`splitTarget`): a destination's own query, `?x=%FF`
 * included, is passed on to it, and their `svc-` parameters are checked here. The platform checks
 * every other route's query (`serve`'s `queryAsSent`).
 */
export const QUERY_AS_SENT: ReadonlyArray<string> = ["/v2/publish/*", "/v2/enqueue/*", "/v2/schedules/*"]

export const PublishRoute = HttpRouter.add(
  "POST",
  "/v2/publish/*",
  Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest) {
    const settings = yield* QueueConfig
    const target = yield* authorizedTarget(request, settings)

    // Read only once the publish is valid; the cap holds whether or not Content-Length is declared.
    const body = cappedBody(request, settings)
    const published = yield* Operations.publish({
      destination: destinationIn(target.destination),
      passThrough: target.passThrough,
      headers: request.headers,
      query: target.config,
      body,
      callerIp: Option.getOrUndefined(request.remoteAddress)
    })
    return HttpServerResponse.jsonUnsafe(published, { status: 201 })
  })
)

const decodeBatch = Schema.decodeUnknownEffect(BatchRequest)

/**
 * `POST /v2/batch`: a JSON array of publishes (`BatchElement`), all stored or none (Batch.ts). The
 * body is capped at `QUEUE_MAX_BATCH_BYTES` before it is read, the element count checked before
 * the elements are decoded.
 */
export const BatchRoute = HttpRouter.add(
  "POST",
  "/v2/batch",
  Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest) {
    const settings = yield* QueueConfig
    yield* queueAuth(settings).check(BearerAuth.tokenOf(request.headers["authorization"]) ?? splitTarget(request.url).token)
    // JSON, or no Content-Type at all (read as JSON), as the API's other JSON bodies; in UTF-8
    const mediaType = request.headers["content-type"]?.split(";")[0]!.trim().toLowerCase()
    const unsupported = mediaType !== undefined && mediaType !== "" && mediaType !== "application/json"
      ? `Content-Type ${JSON.stringify(mediaType.slice(0, 100))} is not supported: send application/json`
      : JsonBody.charsetProblem(request.headers["content-type"])
    if (unsupported !== undefined) return yield* new UnsupportedMediaType({ message: unsupported })
    const bytes = yield* readCapped(request, settings.maxBatchBytes, () => new BatchTooLarge({ maxBytes: settings.maxBatchBytes }))
    const expected = "a JSON array of messages ({\"destination\", \"body\", \"headers\"})"
    const parsed = JsonBody.parse(bytes, expected)
    if (Result.isFailure(parsed)) return yield* new InvalidRequest({ issues: [parsed.failure] })
    const json = parsed.success
    if (!Array.isArray(json)) return yield* new InvalidRequest({ issues: [{ in: "body", parameter: "", problem: `expected ${expected}` }] })
    const sizeIssue = Batch.batchSizeIssue(json.length, settings.maxBatchMessages)
    if (sizeIssue !== undefined) return yield* new InvalidRequest({ issues: [sizeIssue] })
    // A decoding failure is a 400 naming each bad field by its path ("[3].bodyEncoding"): the first
    // pass stops at the first problem (a third cheaper on a valid batch), a refused batch is decoded
    // again to name them all.
    const elements = yield* decodeBatch(json, { onExcessProperty: "error" }).pipe(
      Effect.catch(() => decodeBatch(json, { errors: "all", onExcessProperty: "error" }))
    )
    const published = yield* Batch.publishBatch(elements, { callerIp: Option.getOrUndefined(request.remoteAddress) })
    return HttpServerResponse.jsonUnsafe(published, { status: 201 })
  })
)

/** `POST /v2/schedules/<destination>` with `Svc-Cron`: creates (or, with `Svc-Schedule-Id`, replaces) a schedule. */
export const CreateScheduleRoute = HttpRouter.add(
  "POST",
  "/v2/schedules/*",
  Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest) {
    const settings = yield* QueueConfig
    const target = yield* authorizedTarget(request, settings)
    const created = yield* ScheduleOperations.createSchedule({
      destination: destinationIn(target.destination),
      passThrough: target.passThrough,
      headers: request.headers,
      query: target.config,
      body: cappedBody(request, settings),
      callerIp: Option.getOrUndefined(request.remoteAddress)
    })
    return HttpServerResponse.jsonUnsafe(created, { status: 201 })
  })
)

/**
 * `POST /v2/enqueue/<queue>/<destination>`: a publish (every header and parameter of one) into a
 * FIFO queue, created with parallelism 1 when unknown.
 */
export const EnqueueRoute = HttpRouter.add(
  "POST",
  "/v2/enqueue/*",
  Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest) {
    const settings = yield* QueueConfig
    const target = yield* authorizedTarget(request, settings)
    const slash = target.destination.indexOf("/")
    const queueName = slash < 0 ? target.destination : target.destination.slice(0, slash)
    const destination = slash < 0 ? "" : destinationIn(target.destination.slice(slash + 1))
    if (!QUEUE_NAME_PATTERN.test(queueName)) {
      return yield* new InvalidRequest({
        issues: [{
          in: "path",
          parameter: "queue",
          problem: `expected a queue name of 1-100 letters, digits, '.', '_' or '-' before the destination, got ${
            JSON.stringify(queueName.slice(0, 100))
          }`
        }]
      })
    }
    const published = yield* Operations.publish({
      destination,
      passThrough: target.passThrough,
      headers: request.headers,
      query: target.config,
      body: cappedBody(request, settings),
      callerIp: Option.getOrUndefined(request.remoteAddress),
      queueName
    })
    return HttpServerResponse.jsonUnsafe(published, { status: 201 })
  })
)

// -----------------------------------------------------------------------------
// The QueueApi groups
// -----------------------------------------------------------------------------

const MessagesHandlers = HttpApiBuilder.group(QueueApi, "messages", Effect.fn(function*(handlers) {
  const messages = yield* Messages
  return handlers
    .handle("get", ({ params }) => messages.get(params.messageId))
    .handle("cancel", ({ params }) => messages.cancel(params.messageId))
    .handle("cancelMany", ({ payload }) => Bulk.cancelMessages(payload))
}))

const DlqHandlers = HttpApiBuilder.group(QueueApi, "dlq", Effect.fn(function*(handlers) {
  const dlq = yield* Dlq
  return handlers
    .handle("list", ({ query }) => Operations.listDlq(query))
    .handle("get", ({ params }) => dlq.get(params.dlqId))
    .handle("retry", ({ params }) => dlq.retry(params.dlqId))
    .handle("delete", ({ params }) => dlq.delete(params.dlqId))
    .handle("retryMany", ({ payload }) => Bulk.retryDlq(payload))
    .handle("deleteMany", ({ payload }) => Bulk.deleteDlq(payload))
}))

const EventsHandlers = HttpApiBuilder.group(QueueApi, "events", (handlers) =>
  handlers.handle("list", ({ query }) => listEvents(query)))

const TopicsHandlers = HttpApiBuilder.group(QueueApi, "topics", Effect.fn(function*(handlers) {
  const groups = yield* Groups
  return handlers
    .handle("list", ({ query }) => Operations.listTopics(query))
    .handle("get", ({ params }) => Operations.getTopic(params.name))
    .handle("upsertEndpoints", ({ params, payload }) => Operations.upsertEndpoints(params.name, payload.endpoints))
    .handle("removeEndpoints", ({ params, payload }) => groups.removeEndpoints(params.name, payload.endpoints))
    .handle("setHeaders", ({ params, payload }) =>
      // Checked by the rules of a publish (Operations.checkConfiguration): nothing stored when refused.
      Operations.setTopicHeaders(params.name, payload.headers))
    .handle("delete", ({ params }) => groups.delete(params.name))
}))

const KeysHandlers = HttpApiBuilder.group(QueueApi, "keys", Effect.fn(function*(handlers) {
  const keys = yield* SigningKeys
  return handlers
    .handle("get", () => keys.get)
    .handle("rotate", ({ request }) =>
      Effect.gen(function*() {
        // a body that could hold options (`{"dryRun":true}`) or is not JSON at all rotated all the same;
        // read under the cap of every queue request (11 MiB of blanks was read whole, then rotated)
        const bytes = yield* readCapped(request, MAX_JSON_BODY_BYTES, () => new RequestTooLarge({ maxBytes: MAX_JSON_BODY_BYTES })).pipe(
          Effect.catchTag("HttpServerError", () => Effect.succeed(new TextEncoder().encode("x")))
        )
        const body = new TextDecoder().decode(bytes).trim()
        if (body !== "" && body !== "{}") {
          return yield* new InvalidRequest({ issues: [{ in: "body", parameter: "", problem: "POST /v2/keys/rotate takes no body (send none, or {})" }] })
        }
        return yield* keys.rotate.pipe(Effect.tap(() => Effect.logInfo("Signing keys rotated")))
      }))
}))

const SchedulesHandlers = HttpApiBuilder.group(QueueApi, "schedules", (handlers) =>
  handlers
    .handle("list", ({ query }) => ScheduleOperations.listSchedules(query))
    .handle("get", ({ params }) => ScheduleOperations.getSchedule(params.scheduleId))
    .handle("delete", ({ params }) => ScheduleOperations.deleteSchedule(params.scheduleId))
    .handle("pause", ({ params }) => ScheduleOperations.pauseSchedule(params.scheduleId))
    .handle("resume", ({ params }) => ScheduleOperations.resumeSchedule(params.scheduleId)))

const FlowControlHandlers = HttpApiBuilder.group(QueueApi, "flowControl", Effect.fn(function*(handlers) {
  const flows = yield* FlowControls
  return handlers
    .handle("list", ({ query }) =>
      Effect.map(
        Pages.byKey({ query, keyPattern: FLOW_CONTROL_KEY_PATTERN, read: flows.list, keyOf: (flow) => flow.flowControlKey }),
        (page) => Pages.answer("flowControls", page)
      ))
    .handle("get", ({ params }) => flows.get(params.key))
    .handle("pause", ({ params }) => flows.setPaused(params.key, true))
    .handle("resume", ({ params }) => flows.setPaused(params.key, false))
}))

const QueuesHandlers = HttpApiBuilder.group(QueueApi, "queues", Effect.fn(function*(handlers) {
  const queues = yield* Queues
  return handlers
    .handle("upsert", ({ payload }) => queues.upsert(payload.queueName, payload.parallelism))
    .handle("list", ({ query }) =>
      Effect.map(
        Pages.byKey({ query, keyPattern: QUEUE_NAME_PATTERN, read: queues.list, keyOf: (queue) => queue.name }),
        (page) => Pages.answer("queues", page)
      ))
    .handle("get", ({ params }) => queues.get(params.name))
    .handle("delete", ({ params }) => queues.delete(params.name))
    .handle("pause", ({ params }) => queues.setPaused(params.name, true))
    .handle("resume", ({ params }) => queues.setPaused(params.name, false))
}))

const HealthHandlers = HttpApiBuilder.group(QueueApi, "health", (handlers) =>
  handlers.handle("health", () => Effect.succeed({ status: "ok" as const })))

/**
 * `GET /openapi.json`: `QueueApi`'s document with the routes served outside it merged in (the raw
 * routes above, /ready, /rpc, the document itself: `QueueOpenApi.ts` in `@svc/schema`, where such a
 * route is documented). Made once.
 */
export const OpenApiRoute = openApiRoute(queueOpenApi)

/** Every route of the queue; needs the stores (`Stores.layer` or `Stores.layerMemory`) and `QueueConfig`. */
export const routes = Layer.mergeAll(
  apiRoutes({
    api: QueueApi,
    handlers: Layer.mergeAll(MessagesHandlers, DlqHandlers, TopicsHandlers, KeysHandlers, HealthHandlers, SchedulesHandlers,
      FlowControlHandlers, QueuesHandlers, EventsHandlers).pipe(
      Layer.provide([QueueAuthLive, QueueJsonBodyLive])
    )
  }),
  OpenApiRoute,
  PublishRoute,
  BatchRoute,
  CreateScheduleRoute,
  EnqueueRoute
)
