/**
 * What the HTTP API (`http.ts`) and the internal RPC (`rpc.ts`) both do beyond a single store call:
 * one implementation, two transports. Each transport only reads its request (URL, headers, body or
 * RPC payload) into these inputs and answers with what comes back.
 *
 * Every issue is named as on the HTTP API (`path` / `query` / `header` / `body`); the RPC renames
 * the locations that mean nothing there (see `rpc.ts`).
 */
import type { DefaultHeaders, DlqPage, Endpoint, PublishResult, RequestIssue, Topic, TopicList } from "@svc/schema"
import { InvalidRequest, MessageTooLarge, TOPIC_NAME_PATTERN, TopicNotFound } from "@svc/schema"
import { Clock, Effect, Option } from "effect"
import * as Crypto from "node:crypto"
import { refusal } from "./Destinations.ts"
import * as Pages from "./Pages.ts"
import type { DeliverySettings, PublishInput, PublishSettings } from "./Publish.ts"
import { checkUrl, lowercaseHeaders, lowerHeaderName, parsePublish, unknownSettingProblem, urlLengthProblem } from "./Publish.ts"
import { QueueConfig } from "./QueueConfig.ts"
import { Dlq } from "./store/Dlq.ts"
import { Groups } from "./store/Groups.ts"
import { Messages } from "./store/Messages.ts"
import type { DlqQuery, NewMessage } from "./store/Model.ts"
import { idIssue } from "./store/Model.ts"

/**
 * Most endpoints one URL group holds. Every publish to a group does its work per endpoint in the
 * request (the destination check, one row, one entry of the answer), so the cap bounds a publish:
 * 100 checks at {@link CHECK_CONCURRENCY} at a time stay within a few seconds even when every
 * lookup runs into its 3 s limit. A larger fan-out is several groups.
 */
export const MAX_GROUP_ENDPOINTS = 100

/** Destination checks (a DNS lookup each, up to 3 s) run this many at a time. */
export const CHECK_CONCURRENCY = 16

const invalid = (issues: ReadonlyArray<RequestIssue>) => new InvalidRequest({ issues: [...issues] })

// -----------------------------------------------------------------------------
// Configuration headers
// -----------------------------------------------------------------------------

/**
 * The rules of a publish's configuration, in one place: {@link parsePublish} (every value, every
 * forwarded header) plus the refusal of private or loopback callback URLs. Every publish runs it,
 * and so does `PATCH /v2/topics/<name>` on the default headers it would store, so a group never
 * holds defaults that its publishes would refuse. Issues of default headers are named
 * `headers.<Name>` in `body`, as in the PATCH body.
 */
export const checkConfiguration = Effect.fnUntraced(function*(input: PublishInput) {
  const settings = yield* QueueConfig
  const parsed = parsePublish({ ...input, now: input.now ?? (yield* Clock.currentTimeMillis) }, settings)
  const issues = [...parsed.issues]
  const callbacks = [["svc-callback", parsed.settings.callback], ["svc-failure-callback", parsed.settings.failureCallback]] as const
  const refused = yield* Effect.forEach(
    callbacks,
    ([key, callback]) =>
      callback === undefined
        ? Effect.succeed(undefined)
        : Effect.map(refusal(callback.url, settings.allowPrivate), (why) => why === undefined ? undefined : parsed.issueAt(key, why)),
    { concurrency: "unbounded" }
  )
  for (const issue of refused) if (issue !== undefined) issues.push(issue)
  return { settings: parsed.settings, issues }
})

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
  /** `POST /v2/enqueue/<queue>/<destination>`: the FIFO queue (checked by the caller). */
  readonly queueName?: string | undefined
}

interface Target {
  readonly url: string
  readonly topicName?: string
  readonly endpointName?: string
}

/**
 * Validates a publish (destination, configuration, private-address refusals) and reads its body:
 * the messages to enqueue, one per target, not yet stored. A publish stores them at once
 * ({@link publish}); a schedule checks its request with this when it is stored and fires through it.
 */
// Untraced: the hot path, as the HTTP route was.
export const preparePublish = Effect.fnUntraced(function*<E, R>(request: PublishRequest<E, R>) {
  const checked = yield* checkPublish(request)
  return yield* publishMessages(request, checked, yield* request.body)
})

/** What {@link checkPublish} found valid: where the message(s) go and how. */
export interface CheckedPublish {
  readonly targets: ReadonlyArray<Target>
  readonly settings: PublishSettings
}

/**
 * The first half of {@link preparePublish}: everything but the body (destination, configuration,
 * private-address refusals). A batch runs it once for elements that differ only in their bodies.
 */
export const checkPublish = Effect.fnUntraced(function*(request: Omit<PublishRequest<unknown, unknown>, "body">) {
  const settings = yield* QueueConfig
  const issues: Array<RequestIssue> = []
  const destinationIssue = (problem: string) => issues.push({ in: "path", parameter: "destination", problem })

  // Where the message(s) go: one URL, or every endpoint of a URL group.
  let targets: ReadonlyArray<Target> = []
  let defaults: DefaultHeaders = {}
  if (/^https?:\/\//i.test(request.destination)) {
    const checked = checkUrl(request.destination)
    if ("problem" in checked) destinationIssue(checked.problem)
    else {
      const url = new URL(checked.url)
      const passThrough = request.passThrough ?? []
      if (passThrough.length > 0) {
        url.search = (url.search === "" ? "" : `${url.search.slice(1)}&`) + passThrough.join("&")
      }
      const tooLong = urlLengthProblem(url.toString())
      if (tooLong !== undefined) destinationIssue(tooLong)
      else targets = [{ url: url.toString() }]
    }
  } else if (TOPIC_NAME_PATTERN.test(request.destination)) {
    const topic = yield* Groups.use((groups) => groups.get(request.destination))
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

  const parsed = yield* checkConfiguration({ headers: request.headers, query: request.query ?? [], defaults })
  for (const issue of parsed.issues) {
    // A group's stored default header (from before PATCH checked them) is the group's problem.
    issues.push(issue.in === "body" && issue.parameter.startsWith("headers.")
      ? {
        in: "path",
        parameter: "destination",
        problem: `default header ${issue.parameter.slice("headers.".length)} of the URL group ${request.destination}: ${issue.problem}`
      }
      : issue)
  }
  // Private and loopback destinations (SSRF), checked concurrently (a group has many endpoints).
  const refused = yield* Effect.forEach(
    targets,
    ({ url, topicName }) =>
      Effect.map(refusal(url, settings.allowPrivate), (why): RequestIssue | undefined =>
        why === undefined ? undefined : {
          in: "path",
          parameter: "destination",
          problem: topicName === undefined ? why : `endpoint ${url} of ${topicName}: ${why}`
        }),
    { concurrency: CHECK_CONCURRENCY }
  )
  for (const issue of refused) if (issue !== undefined) issues.push(issue)
  if (issues.length > 0) return yield* invalid(issues)
  const checked: CheckedPublish = { targets, settings: parsed.settings }
  return checked
})

/**
 * The second half of {@link preparePublish}: a checked publish with its body, under the body cap;
 * one message per target, and the deduplication id (given, or derived from the content).
 */
export const publishMessages = Effect.fnUntraced(function*(
  request: Pick<PublishRequest<unknown, unknown>, "destination" | "callerIp" | "queueName">,
  checked: CheckedPublish,
  body: Uint8Array
) {
  const settings = yield* QueueConfig
  if (body.length > settings.maxMessageBytes) return yield* new MessageTooLarge({ maxBytes: settings.maxMessageBytes })
  const { targets } = checked
  const deduplicationId = checked.settings.deduplicationId ??
    (checked.settings.contentBasedDeduplication
      ? contentDeduplicationId(request.destination, targets, request.queueName, checked.settings.delivery, body)
      : undefined)
  const messages: Array<NewMessage> = targets.map((target) => ({
    kind: "message",
    url: target.url,
    delivery: checked.settings.delivery,
    body,
    callback: checked.settings.callback,
    failureCallback: checked.settings.failureCallback,
    topicName: target.topicName,
    endpointName: target.endpointName,
    callerIp: request.callerIp,
    dedupId: deduplicationId,
    flowControl: checked.settings.flowControl,
    queueName: request.queueName
  }))
  const isGroup = targets.some((target) => target.topicName !== undefined)
  return { messages, deduplicationId, isGroup }
})

/**
 * `Svc-Content-Based-Deduplication: true`: the deduplication id of a publish derived from what it
 * delivers: the destination (a URL with its query, or a URL group's name), the FIFO queue, the
 * method, the headers sent to the destination (forwarded ones and the content type) and the body.
 * Two publishes that would deliver the same request share it; retries, timeouts, delays and
 * callbacks do not change what the destination receives and are left out.
 */
export const contentDeduplicationId = (
  destination: string,
  targets: ReadonlyArray<Target>,
  queueName: string | undefined,
  delivery: DeliverySettings,
  body: Uint8Array
): string => {
  const hash = Crypto.createHash("sha256")
  const where = targets.length === 1 && targets[0]!.topicName === undefined ? targets[0]!.url : destination
  const headers = Object.keys(delivery.headers).sort().map((name) => [name, delivery.headers[name]])
  hash.update(JSON.stringify([where, queueName ?? null, delivery.method, headers]))
  hash.update("\n")
  hash.update(body)
  return `content-${hash.digest("hex")}`
}

/**
 * Validates a publish ({@link preparePublish}) and enqueues one message per target: one object for
 * a URL, one entry per endpoint for a URL group.
 */
export const publish = Effect.fnUntraced(function*<E, R>(request: PublishRequest<E, R>) {
  const { messages, deduplicationId, isGroup } = yield* preparePublish(request)
  const published = yield* Messages.use((store) => store.publish(messages, deduplicationId))
  const result: PublishResult = isGroup ? published : published[0]!
  return result
})

// -----------------------------------------------------------------------------
// Dead-letter queue
// -----------------------------------------------------------------------------

export type { DlqQuery }

/** A page of the DLQ; a cursor must come from an earlier page, a limit is 1-100. */
export const listDlq = (query: DlqQuery): Effect.Effect<DlqPage, InvalidRequest, Dlq> =>
  Effect.gen(function*() {
    const issues: Array<RequestIssue> = []
    if (query.cursor !== undefined && !/^\d{1,18}$/.test(query.cursor)) {
      issues.push({ in: "query", parameter: "cursor", problem: "is not a cursor from an earlier page" })
    }
    if (query.limit !== undefined && !(Number.isInteger(query.limit) && query.limit >= 1 && query.limit <= 100)) {
      issues.push({ in: "query", parameter: "limit", problem: `must be an integer from 1 to 100, got ${query.limit}` })
    }
    if (
      query.responseStatus !== undefined &&
      !(Number.isInteger(query.responseStatus) && query.responseStatus >= 100 && query.responseStatus <= 599)
    ) {
      issues.push({ in: "query", parameter: "responseStatus", problem: `must be an HTTP status from 100 to 599, got ${query.responseStatus}` })
    }
    const badId = query.messageId === undefined ? undefined : idIssue(query.messageId, { in: "query", parameter: "messageId" }, "message id")
    if (badId !== undefined) issues.push(badId)
    if (issues.length > 0) return yield* invalid(issues)
    return yield* Dlq.use((dlq) => dlq.list(query))
  })

// -----------------------------------------------------------------------------
// URL groups
// -----------------------------------------------------------------------------

/** A page of URL groups by name (`Pages.ts`): a group holds up to {@link MAX_GROUP_ENDPOINTS} endpoints. */
export const listTopics = (query: Pages.PageQuery): Effect.Effect<TopicList, InvalidRequest, Groups> =>
  Effect.map(
    Pages.byKey({
      query,
      keyPattern: TOPIC_NAME_PATTERN,
      read: (page) => Groups.use((groups) => groups.list(page)),
      keyOf: (topic) => topic.name
    }),
    (page) => Pages.answer("topics", page)
  )

export const getTopic = (name: string): Effect.Effect<Topic, TopicNotFound, Groups> =>
  Effect.gen(function*() {
    const topic = yield* Groups.use((groups) => groups.get(name))
    if (Option.isNone(topic)) return yield* new TopicNotFound({ name })
    return topic.value
  })

/**
 * Adds (or moves) endpoints of a URL group, creating it; every URL is checked as a destination is
 * (concurrently, {@link CHECK_CONCURRENCY} at a time), and a name or URL may appear once per request. A group holds at most
 * {@link MAX_GROUP_ENDPOINTS}: a request naming more, or one that would make the group larger, is
 * refused before anything is stored.
 */
export const upsertEndpoints = (
  name: string,
  endpoints: ReadonlyArray<Endpoint>
): Effect.Effect<Topic, InvalidRequest, Groups | QueueConfig> =>
  Effect.gen(function*() {
    const settings = yield* QueueConfig
    const issues: Array<RequestIssue> = []
    // The HTTP route decodes the name from its path; an RPC payload arrives unchecked.
    if (!TOPIC_NAME_PATTERN.test(name)) {
      issues.push({ in: "path", parameter: "name", problem: "expected a group name of letters, digits, '.', '_' or '-'" })
    }
    if (endpoints.length === 0) {
      issues.push({ in: "body", parameter: "endpoints", problem: "must name at least one endpoint" })
    }
    if (endpoints.length > MAX_GROUP_ENDPOINTS) {
      // Refused before any lookup: checking thousands of hosts is the work the cap exists to bound.
      issues.push({
        in: "body",
        parameter: "endpoints",
        problem: `names ${endpoints.length} endpoints; a URL group holds at most ${MAX_GROUP_ENDPOINTS}`
      })
      return yield* invalid(issues)
    }
    const checkedEndpoints: Array<{ readonly index: number; readonly endpoint: Endpoint }> = []
    // A name or a URL given twice asks for two different endpoints under it: the later one would
    // silently win (the store moves a name to its newest URL, renames a URL to its newest name).
    const firstWith = new Map<string, number>()
    const once = (index: number, field: "name" | "url", value: string) => {
      const first = firstWith.get(`${field} ${value}`)
      if (first === undefined) firstWith.set(`${field} ${value}`, index)
      else {
        issues.push({
          in: "body",
          parameter: `endpoints[${index}].${field}`,
          problem: `${JSON.stringify(value)} is given twice (also endpoints[${first}].${field}): each ${field} once per request`
        })
      }
    }
    for (const [index, endpoint] of endpoints.entries()) {
      const checked = checkUrl(endpoint.url)
      if ("problem" in checked) {
        issues.push({ in: "body", parameter: `endpoints[${index}].url`, problem: checked.problem })
        continue
      }
      if (endpoint.name !== undefined && !TOPIC_NAME_PATTERN.test(endpoint.name)) {
        issues.push({ in: "body", parameter: `endpoints[${index}].name`, problem: "expected letters, digits, '.', '_' or '-'" })
      }
      if (endpoint.name !== undefined) once(index, "name", endpoint.name)
      once(index, "url", checked.url)
      checkedEndpoints.push({ index, endpoint: { ...endpoint, url: checked.url } })
    }
    const refused = yield* Effect.forEach(
      checkedEndpoints,
      ({ endpoint, index }) =>
        Effect.map(refusal(endpoint.url, settings.allowPrivate), (why): RequestIssue | undefined =>
          why === undefined ? undefined : { in: "body", parameter: `endpoints[${index}].url`, problem: why }),
      { concurrency: CHECK_CONCURRENCY }
    )
    for (const issue of refused) if (issue !== undefined) issues.push(issue)
    if (issues.length > 0) return yield* invalid(issues)
    const groups = yield* Groups
    return yield* groups.upsertEndpoints(name, checkedEndpoints.map(({ endpoint }) => endpoint), MAX_GROUP_ENDPOINTS).pipe(
      Effect.catchTag("GroupFull", (full) =>
        invalid([{
          in: "body",
          parameter: "endpoints",
          problem: `would make the URL group ${name} hold ${full.endpoints} endpoints; a URL group holds at most ${full.max}`
        }]))
    )
  })

/**
 * Stores a URL group's default headers, checked by the rules of a publish
 * ({@link checkConfiguration}) and, as a batch element's, refused when two names differ only in case
 * (`Svc-Retries` and `svc-retries`: the later silently won): nothing is stored when any is refused.
 */
export const setTopicHeaders = (
  name: string,
  headers: DefaultHeaders
): Effect.Effect<Topic, InvalidRequest | TopicNotFound, Groups | QueueConfig> =>
  Effect.gen(function*() {
    const ambiguous = lowercaseHeaders(headers).issues.map((issue): RequestIssue => ({
      ...issue,
      in: "body",
      parameter: `headers.${issue.parameter}`
    }))
    // Unknown Svc- names too: a publish ignores them in stored defaults, so they are refused here.
    const unknown = Object.keys(headers).flatMap((name): Array<RequestIssue> => {
      const lower = lowerHeaderName(name)
      const problem = lower.startsWith("svc-") ? unknownSettingProblem(lower, "header") : undefined
      return problem === undefined ? [] : [{ in: "body", parameter: `headers.${name}`, problem }]
    })
    const { issues } = yield* checkConfiguration({ headers: {}, query: [], defaults: headers })
    const refused = [...ambiguous, ...unknown, ...issues]
    if (refused.length > 0) return yield* invalid(refused)
    return yield* Groups.use((groups) => groups.setHeaders(name, headers))
  })
