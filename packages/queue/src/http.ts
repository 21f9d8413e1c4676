/**
 * The queue's HTTP routes: `POST /v2/publish/<destination>` (a raw route: open-ended header
 * families, any body) and the `QueueApi` groups (messages, DLQ, URL groups, signing keys).
 */
import type { RequestIssue } from "@svc/schema"
import {
  InvalidRequest,
  MessageTooLarge,
  QueueApi,
  QueueAuth,
  ServiceUnavailable,
  TopicNotFound,
  Unauthorized
} from "@svc/schema"
import { apiRoutes } from "@svc/platform"
import { ByteSize, Effect, Layer, Option, Redacted } from "effect"
import { HttpIncomingMessage, HttpRouter, HttpServerError, HttpServerResponse } from "effect/http"
import type { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import * as Crypto from "node:crypto"
import { refusal } from "./Destinations.ts"
import { canonicalHeaderName, checkUrl, parsePublish } from "./Publish.ts"
import { QueueConfig, type QueueSettings } from "./QueueConfig.ts"
import type { NewMessage } from "./Store.ts"
import { Store } from "./Store.ts"

// -----------------------------------------------------------------------------
// Authentication
// -----------------------------------------------------------------------------

const digest = (value: string) => Crypto.createHash("sha256").update(value).digest()

/** Constant-time comparison of a presented token with QUEUE_TOKEN (hashes: equal lengths). */
export const authorize = (
  settings: QueueSettings,
  presented: string | undefined
): Effect.Effect<void, ServiceUnavailable | Unauthorized> => {
  if (Option.isNone(settings.token)) {
    return Effect.fail(
      new ServiceUnavailable({ message: "QUEUE_TOKEN is not set: publishing and the queue API are disabled" })
    )
  }
  if (presented === undefined || presented === "") return Effect.fail(new Unauthorized({ message: "A bearer token is required" }))
  return Crypto.timingSafeEqual(digest(Redacted.value(settings.token.value)), digest(presented))
    ? Effect.void
    : Effect.fail(new Unauthorized({ message: "The token is not valid" }))
}

export const QueueAuthLive = Layer.effect(
  QueueAuth,
  Effect.gen(function*() {
    const settings = yield* QueueConfig
    return QueueAuth.of({
      bearer: (httpEffect, { credential }) =>
        Effect.andThen(authorize(settings, Redacted.value(credential)), httpEffect)
    })
  })
)

// -----------------------------------------------------------------------------
// Publish
// -----------------------------------------------------------------------------

const PREFIX = "/v2/publish/"
const GROUP_NAME = /^[A-Za-z0-9._-]{1,100}$/

/** Splits the raw request URL into the destination and the queue's own query parameters. */
const splitTarget = (rawUrl: string) => {
  const question = rawUrl.indexOf("?")
  const path = question < 0 ? rawUrl : rawUrl.slice(0, question)
  const search = question < 0 ? "" : rawUrl.slice(question + 1)
  let destination = path.slice(path.indexOf(PREFIX) + PREFIX.length)
  if (/^https?%3a/i.test(destination)) {
    try {
      destination = decodeURIComponent(destination)
    } catch {
      // left as is: reported as an invalid destination
    }
  }
  const config: Array<readonly [string, string]> = []
  const passThrough: Array<string> = []
  let token: string | undefined
  for (const part of search === "" ? [] : search.split("&")) {
    if (part === "") continue
    const eq = part.indexOf("=")
    const decode = (text: string) => {
      try {
        return decodeURIComponent(text.replace(/\+/g, " "))
      } catch {
        return text
      }
    }
    const name = decode(eq < 0 ? part : part.slice(0, eq))
    const value = eq < 0 ? "" : decode(part.slice(eq + 1))
    const lower = name.toLowerCase()
    if (lower === "svc_token") token = value
    else if (lower.startsWith("svc-")) config.push([name, value])
    else passThrough.push(part)
  }
  return { destination, config, passThrough, token }
}

const bearer = (header: string | undefined): string | undefined => {
  const match = header === undefined ? null : /^Bearer\s+(.+)$/i.exec(header.trim())
  return match?.[1]
}

const invalid = (issues: ReadonlyArray<RequestIssue>) => new InvalidRequest({ issues: [...issues] })

export const PublishRoute = HttpRouter.add(
  "POST",
  "/v2/publish/*",
  Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest) {
    const settings = yield* QueueConfig
    const store = yield* Store
    const target = splitTarget(request.url)
    yield* authorize(settings, bearer(request.headers["authorization"]) ?? target.token)

    const issues: Array<RequestIssue> = []
    const destinationIssue = (problem: string) => issues.push({ in: "path", parameter: "destination", problem })
    // Where the message(s) go: one URL, or every endpoint of a URL group.
    let targets: Array<{ readonly url: string; readonly topicName?: string; readonly endpointName?: string }> = []
    let defaults = {}
    if (/^https?:\/\//i.test(target.destination)) {
      const checked = checkUrl(target.destination)
      if ("problem" in checked) destinationIssue(checked.problem)
      else {
        const url = new URL(checked.url)
        if (target.passThrough.length > 0) {
          url.search = (url.search === "" ? "" : `${url.search.slice(1)}&`) + target.passThrough.join("&")
        }
        targets = [{ url: url.toString() }]
      }
    } else if (GROUP_NAME.test(target.destination)) {
      const topic = yield* store.getTopic(target.destination)
      if (Option.isNone(topic)) destinationIssue(`no URL group is named ${JSON.stringify(target.destination)}`)
      else if (topic.value.endpoints.length === 0) destinationIssue(`the URL group ${target.destination} has no endpoints`)
      else {
        defaults = topic.value.headers
        targets = topic.value.endpoints.map((endpoint) => ({
          url: endpoint.url,
          topicName: topic.value.name,
          ...(endpoint.name === undefined ? {} : { endpointName: endpoint.name })
        }))
      }
    } else {
      destinationIssue(
        `expected a full http(s) URL or a URL group name, got ${JSON.stringify(target.destination.slice(0, 200))}`
      )
    }

    const parsed = parsePublish({ headers: request.headers, query: target.config, defaults }, settings)
    issues.push(...parsed.issues)
    // Private and loopback destinations (SSRF), for the destination(s) and the callbacks.
    for (const { url, topicName } of targets) {
      const why = yield* refusal(url, settings.allowPrivate)
      if (why !== undefined) {
        issues.push(topicName === undefined
          ? { in: "path", parameter: "destination", problem: why }
          : { in: "path", parameter: "destination", problem: `endpoint ${url} of ${topicName}: ${why}` })
      }
    }
    for (const [name, callback] of [["svc-callback", parsed.settings.callback], ["svc-failure-callback", parsed.settings.failureCallback]] as const) {
      if (callback === undefined) continue
      const why = yield* refusal(callback.url, settings.allowPrivate)
      if (why !== undefined) {
        const inQuery = target.config.some(([key]) => key.toLowerCase() === name)
        issues.push({ in: inQuery ? "query" : "header", parameter: inQuery ? name : canonicalHeaderName(name), problem: why })
      }
    }
    if (issues.length > 0) return yield* invalid(issues)

    const declared = Number(request.headers["content-length"])
    if (Number.isFinite(declared) && declared > settings.maxMessageBytes) {
      return yield* new MessageTooLarge({ maxBytes: settings.maxMessageBytes })
    }
    const body = new Uint8Array(
      yield* request.arrayBuffer.pipe(
        Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(settings.maxMessageBytes)),
        Effect.catch((error): Effect.Effect<never, MessageTooLarge | HttpServerError.HttpServerError> =>
          HttpServerError.isHttpServerError(error) && error.reason._tag === "RequestParseError" &&
            error.reason.reason === "BodyTooLarge"
            ? Effect.fail(new MessageTooLarge({ maxBytes: settings.maxMessageBytes }))
            : Effect.fail(error)
        )
      )
    )
    if (body.length > settings.maxMessageBytes) return yield* new MessageTooLarge({ maxBytes: settings.maxMessageBytes })

    const callerIp = Option.getOrUndefined(request.remoteAddress)
    const messages: Array<NewMessage> = targets.map((destination) => ({
      kind: "message",
      url: destination.url,
      delivery: parsed.settings.delivery,
      body,
      callback: parsed.settings.callback,
      failureCallback: parsed.settings.failureCallback,
      topicName: destination.topicName,
      endpointName: destination.endpointName,
      callerIp,
      dedupId: parsed.settings.deduplicationId
    }))
    const published = yield* store.publish(messages, parsed.settings.deduplicationId)
    const isGroup = targets.some((destination) => destination.topicName !== undefined)
    return HttpServerResponse.jsonUnsafe(isGroup ? published : published[0], { status: 201 })
  })
)

// -----------------------------------------------------------------------------
// The QueueApi groups
// -----------------------------------------------------------------------------

const MessagesHandlers = HttpApiBuilder.group(QueueApi, "messages", Effect.fn(function*(handlers) {
  const store = yield* Store
  return handlers
    .handle("get", ({ params }) => store.getMessage(params.messageId).pipe(Effect.catchTag("SqlError", Effect.die)))
    .handle("cancel", ({ params }) => store.cancel(params.messageId).pipe(Effect.catchTag("SqlError", Effect.die)))
}))

const DlqHandlers = HttpApiBuilder.group(QueueApi, "dlq", Effect.fn(function*(handlers) {
  const store = yield* Store
  return handlers
    .handle("list", ({ query }) =>
      query.cursor !== undefined && !/^\d{1,18}$/.test(query.cursor)
        ? Effect.fail(invalid([{ in: "query", parameter: "cursor", problem: "is not a cursor from an earlier page" }]))
        : store.listDlq(query).pipe(Effect.catchTag("SqlError", Effect.die)))
    .handle("get", ({ params }) => store.getDlq(params.dlqId).pipe(Effect.catchTag("SqlError", Effect.die)))
    .handle("retry", ({ params }) => store.retryDlq(params.dlqId).pipe(Effect.catchTag("SqlError", Effect.die)))
    .handle("delete", ({ params }) => store.deleteDlq(params.dlqId).pipe(Effect.catchTag("SqlError", Effect.die)))
}))

const TopicsHandlers = HttpApiBuilder.group(QueueApi, "topics", Effect.fn(function*(handlers) {
  const store = yield* Store
  const settings = yield* QueueConfig
  return handlers
    .handle("list", () => Effect.map(store.listTopics, (topics) => ({ topics })).pipe(Effect.catchTag("SqlError", Effect.die)))
    .handle("get", ({ params }) =>
      store.getTopic(params.name).pipe(
        Effect.catchTag("SqlError", Effect.die),
        Effect.flatMap(Option.match({
          onNone: () => Effect.fail(new TopicNotFound({ name: params.name })),
          onSome: Effect.succeed
        }))
      ))
    .handle("upsertEndpoints", ({ params, payload }) =>
      Effect.gen(function*() {
        const issues: Array<RequestIssue> = []
        if (payload.endpoints.length === 0) {
          issues.push({ in: "body", parameter: "endpoints", problem: "must name at least one endpoint" })
        }
        const endpoints = []
        for (const [i, endpoint] of payload.endpoints.entries()) {
          const checked = checkUrl(endpoint.url)
          if ("problem" in checked) {
            issues.push({ in: "body", parameter: `endpoints[${i}].url`, problem: checked.problem })
            continue
          }
          const why = yield* refusal(checked.url, settings.allowPrivate)
          if (why !== undefined) issues.push({ in: "body", parameter: `endpoints[${i}].url`, problem: why })
          if (endpoint.name !== undefined && !/^[A-Za-z0-9._-]{1,100}$/.test(endpoint.name)) {
            issues.push({ in: "body", parameter: `endpoints[${i}].name`, problem: "expected letters, digits, '.', '_' or '-'" })
          }
          endpoints.push({ ...endpoint, url: checked.url })
        }
        if (issues.length > 0) return yield* invalid(issues)
        return yield* store.upsertEndpoints(params.name, endpoints)
      }).pipe(Effect.catchTag("SqlError", Effect.die)))
    .handle("removeEndpoints", ({ params, payload }) =>
      store.removeEndpoints(params.name, payload.endpoints).pipe(Effect.catchTag("SqlError", Effect.die)))
    .handle("setHeaders", ({ params, payload }) =>
      Effect.gen(function*() {
        // The Svc-* defaults must be valid configuration headers, as on a publish.
        const { issues } = parsePublish({ headers: {}, query: [], defaults: payload.headers }, settings)
        if (issues.length > 0) {
          return yield* invalid(issues.map((issue) => ({ ...issue, in: "body", parameter: `headers.${issue.parameter}` })))
        }
        return yield* store.setTopicHeaders(params.name, payload.headers)
      }).pipe(Effect.catchTag("SqlError", Effect.die)))
    .handle("delete", ({ params }) => store.deleteTopic(params.name).pipe(Effect.catchTag("SqlError", Effect.die)))
}))


const KeysHandlers = HttpApiBuilder.group(QueueApi, "keys", Effect.fn(function*(handlers) {
  const store = yield* Store
  return handlers
    .handle("get", () => store.signingKeys.pipe(Effect.catchTag("SqlError", Effect.die)))
    .handle("rotate", () =>
      store.rotateKeys.pipe(
        Effect.tap(() => Effect.logInfo("Signing keys rotated")),
        Effect.catchTag("SqlError", Effect.die)
      ))
}))

const HealthHandlers = HttpApiBuilder.group(QueueApi, "health", (handlers) =>
  handlers.handle("health", () => Effect.succeed({ status: "ok" as const })))

/** Every route of the queue; needs `Store` and `QueueConfig`. */
export const routes = Layer.mergeAll(
  apiRoutes({
    api: QueueApi,
    handlers: Layer.mergeAll(MessagesHandlers, DlqHandlers, TopicsHandlers, KeysHandlers, HealthHandlers).pipe(
      Layer.provide(QueueAuthLive)
    ),
    openapi: true
  }),
  PublishRoute
)
