/**
 * What the HTTP API (`http.ts`) and the internal RPC (`rpc.ts`) both do beyond a single `Store` call:
 * one implementation, two transports. Each transport only reads its request (URL, headers, body or
 * RPC payload) into these inputs and answers with what comes back.
 *
 * Every issue is named as on the HTTP API (`path` / `query` / `header` / `body`); the RPC renames
 * the locations that mean nothing there (see `rpc.ts`).
 */
import type { DlqPage, Endpoint, PublishResult, RequestIssue, Topic } from "@svc/schema"
import { InvalidRequest, MessageTooLarge, TopicNotFound } from "@svc/schema"
import { Effect, Option } from "effect"
import type { SqlError } from "effect/sql"
import { refusal } from "./Destinations.ts"
import { canonicalHeaderName, checkUrl, parsePublish } from "./Publish.ts"
import { QueueConfig } from "./QueueConfig.ts"
import type { NewMessage } from "./Store.ts"
import { Store } from "./Store.ts"

const GROUP_NAME = /^[A-Za-z0-9._-]{1,100}$/

const invalid = (issues: ReadonlyArray<RequestIssue>) => new InvalidRequest({ issues: [...issues] })

// -----------------------------------------------------------------------------
// Publish
// -----------------------------------------------------------------------------

export interface PublishRequest<E, R> {
  /** A full http(s) URL or a URL group name. */
  readonly destination: string
  /** Raw `key=value` query parts appended to a URL destination (HTTP: the non-`svc-*` parameters). */
  readonly passThrough?: ReadonlyArray<string> | undefined
  /** Request headers, names lowercase: the `svc-*` configuration, `content-type`, forwarded ones. */
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  /** `svc-*` query parameters (HTTP only); they win over the headers. */
  readonly query?: ReadonlyArray<readonly [string, string]> | undefined
  /**
   * The body, read only once everything else is valid (so a refused publish never reads a large
   * body); it may fail with its own errors (the HTTP body cap).
   */
  readonly body: Effect.Effect<Uint8Array, E, R>
  readonly callerIp?: string | undefined
}

interface Target {
  readonly url: string
  readonly topicName?: string
  readonly endpointName?: string
}

/**
 * Validates a publish (destination, configuration, private-address refusals), reads its body and
 * enqueues one message per target: one object for a URL, one entry per endpoint for a URL group.
 */
// Untraced: the hot path, as the HTTP route was.
export const publish = Effect.fnUntraced(function*<E, R>(request: PublishRequest<E, R>) {
  const settings = yield* QueueConfig
  const store = yield* Store
  const issues: Array<RequestIssue> = []
  const destinationIssue = (problem: string) => issues.push({ in: "path", parameter: "destination", problem })

  // Where the message(s) go: one URL, or every endpoint of a URL group.
  let targets: ReadonlyArray<Target> = []
  let defaults = {}
  if (/^https?:\/\//i.test(request.destination)) {
    const checked = checkUrl(request.destination)
    if ("problem" in checked) destinationIssue(checked.problem)
    else {
      const url = new URL(checked.url)
      const passThrough = request.passThrough ?? []
      if (passThrough.length > 0) {
        url.search = (url.search === "" ? "" : `${url.search.slice(1)}&`) + passThrough.join("&")
      }
      targets = [{ url: url.toString() }]
    }
  } else if (GROUP_NAME.test(request.destination)) {
    const topic = yield* store.getTopic(request.destination)
    if (Option.isNone(topic)) destinationIssue(`no URL group is named ${JSON.stringify(request.destination)}`)
    else if (topic.value.endpoints.length === 0) destinationIssue(`the URL group ${request.destination} has no endpoints`)
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
      `expected a full http(s) URL or a URL group name, got ${JSON.stringify(request.destination.slice(0, 200))}`
    )
  }

  const query = request.query ?? []
  const parsed = parsePublish({ headers: request.headers, query, defaults }, settings)
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
      const inQuery = query.some(([key]) => key.toLowerCase() === name)
      issues.push({ in: inQuery ? "query" : "header", parameter: inQuery ? name : canonicalHeaderName(name), problem: why })
    }
  }
  if (issues.length > 0) return yield* invalid(issues)

  const body = yield* request.body
  if (body.length > settings.maxMessageBytes) return yield* new MessageTooLarge({ maxBytes: settings.maxMessageBytes })

  const messages: Array<NewMessage> = targets.map((target) => ({
    kind: "message",
    url: target.url,
    delivery: parsed.settings.delivery,
    body,
    callback: parsed.settings.callback,
    failureCallback: parsed.settings.failureCallback,
    topicName: target.topicName,
    endpointName: target.endpointName,
    callerIp: request.callerIp,
    dedupId: parsed.settings.deduplicationId
  }))
  const published = yield* store.publish(messages, parsed.settings.deduplicationId)
  const isGroup = targets.some((target) => target.topicName !== undefined)
  const result: PublishResult = isGroup ? published : published[0]!
  return result
})

// -----------------------------------------------------------------------------
// Dead-letter queue
// -----------------------------------------------------------------------------

export interface DlqQuery {
  readonly cursor?: string | undefined
  readonly limit?: number | undefined
  readonly url?: string | undefined
  readonly topicName?: string | undefined
  readonly responseStatus?: number | undefined
  readonly messageId?: string | undefined
}

/** A page of the DLQ; a cursor must come from an earlier page, a limit is 1-100. */
export const listDlq = (query: DlqQuery): Effect.Effect<DlqPage, InvalidRequest | SqlError.SqlError, Store> =>
  Effect.gen(function*() {
    const issues: Array<RequestIssue> = []
    if (query.cursor !== undefined && !/^\d{1,18}$/.test(query.cursor)) {
      issues.push({ in: "query", parameter: "cursor", problem: "is not a cursor from an earlier page" })
    }
    if (query.limit !== undefined && !(Number.isInteger(query.limit) && query.limit >= 1 && query.limit <= 100)) {
      issues.push({ in: "query", parameter: "limit", problem: `must be an integer from 1 to 100, got ${query.limit}` })
    }
    if (issues.length > 0) return yield* invalid(issues)
    const store = yield* Store
    return yield* store.listDlq(query)
  })

// -----------------------------------------------------------------------------
// URL groups
// -----------------------------------------------------------------------------

export const getTopic = (name: string): Effect.Effect<Topic, TopicNotFound | SqlError.SqlError, Store> =>
  Effect.gen(function*() {
    const store = yield* Store
    const topic = yield* store.getTopic(name)
    if (Option.isNone(topic)) return yield* new TopicNotFound({ name })
    return topic.value
  })

/** Adds (or moves) endpoints of a URL group, creating it; every URL is checked as a destination is. */
export const upsertEndpoints = (
  name: string,
  endpoints: ReadonlyArray<Endpoint>
): Effect.Effect<Topic, InvalidRequest | SqlError.SqlError, Store | QueueConfig> =>
  Effect.gen(function*() {
    const settings = yield* QueueConfig
    const issues: Array<RequestIssue> = []
    // The HTTP route decodes the name from its path; an RPC payload arrives unchecked.
    if (!GROUP_NAME.test(name)) {
      issues.push({ in: "path", parameter: "name", problem: "expected a group name of letters, digits, '.', '_' or '-'" })
    }
    if (endpoints.length === 0) {
      issues.push({ in: "body", parameter: "endpoints", problem: "must name at least one endpoint" })
    }
    const checkedEndpoints: Array<Endpoint> = []
    for (const [i, endpoint] of endpoints.entries()) {
      const checked = checkUrl(endpoint.url)
      if ("problem" in checked) {
        issues.push({ in: "body", parameter: `endpoints[${i}].url`, problem: checked.problem })
        continue
      }
      const why = yield* refusal(checked.url, settings.allowPrivate)
      if (why !== undefined) issues.push({ in: "body", parameter: `endpoints[${i}].url`, problem: why })
      if (endpoint.name !== undefined && !GROUP_NAME.test(endpoint.name)) {
        issues.push({ in: "body", parameter: `endpoints[${i}].name`, problem: "expected letters, digits, '.', '_' or '-'" })
      }
      checkedEndpoints.push({ ...endpoint, url: checked.url })
    }
    if (issues.length > 0) return yield* invalid(issues)
    const store = yield* Store
    return yield* store.upsertEndpoints(name, checkedEndpoints)
  })
