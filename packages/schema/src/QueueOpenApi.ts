/**
 * The queue's OpenAPI document (`GET /openapi.json`): `QueueApi`'s, plus every route the queue
 * serves outside it, described as `HttpApi` endpoints **for the document only** (nothing here is
 * implemented or decoded):
 *
 * - the raw routes `POST /v2/publish/<destination>`, `POST /v2/batch`,
 *   `POST /v2/schedules/<destination>`, `POST /v2/enqueue/<queue>/<destination>`, which `@svc/queue`
 *   serves by hand (`http.ts`: the destination is a URL with slashes, the configuration open-ended
 *   header families, the body any bytes);
 * - `GET /ready`: readiness, the platform's route (`Readiness.route`, the database probed);
 * - `POST /rpc`: the internal RPC group `QueueRpcs` (NDJSON, behind QUEUE_TOKEN);
 * - `GET /openapi.json`: this document.
 *
 * A route the queue serves outside `QueueApi` is documented by adding its endpoint to
 * {@link QueueRawRoutesApi} (merged by `OpenApiDocument.ts`, the suite's one rule): that is the one
 * place (routes added to `QueueApi` itself are in the document already). `test/unit/openapi.test.ts`
 * in `@svc/queue` compares the routes the server's router holds with the document's operations.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { InvalidRequest, UnsupportedMediaType } from "./Errors.ts"
import { ReadinessGroup } from "./Health.ts"
import { DocumentGroup, internalRpcEndpoint, openApiDocument } from "./OpenApiDocument.ts"
import { BatchResult, MessageTooLarge, PublishResult, QueueApi, QueueAuth, QueueRpcs } from "./Queue.ts"
import { BatchRequest, BatchTooLarge } from "./QueueBatch.ts"
import { CreatedSchedule } from "./QueueSchedules.ts"

/** A header of the raw routes: optional, a string on the wire, described for the document. */
const header = (description: string) => Schema.optional(Schema.String.annotate({ description }))

/** The headers of a callback (`Svc-Callback-*`) or failure callback (`Svc-Failure-Callback-*`). */
const callbackHeaders = (prefix: "svc-callback" | "svc-failure-callback", name: string, what: string) => ({
  [prefix]: header(`URL told ${what} (a new signed message, retried until 2xx)`),
  [`${prefix}-retries`]: header(`retries of the ${name} (default 3)`),
  [`${prefix}-delay`]: header(`wait before the ${name}'s first attempt, like Svc-Delay`),
  [`${prefix}-timeout`]: header("per attempt, like Svc-Timeout (default 30s)"),
  [`${prefix}-method`]: header(`the ${name}'s HTTP method (default POST)`)
})

/**
 * The configuration headers of a publish (each also accepted as a query parameter named by the
 * lowercased header; the query parameter wins). Header families (`Svc-Forward-<Name>`,
 * `Svc-Callback-Forward-<Name>`, `Svc-Failure-Callback-Forward-<Name>`) are named in the
 * operations' descriptions: OpenAPI has no parameter pattern. A new publish header is one line here.
 */
const PublishHeaderParameters = {
  "svc-retries": header("retries after the first attempt, 0 to QUEUE_MAX_RETRIES (default QUEUE_DEFAULT_RETRIES, 3)"),
  "svc-delay": header("wait before the first attempt: 500ms, 10s, 5m, 2h, 1d, 1h30m or bare seconds (default 0)"),
  "svc-timeout": header("per attempt; no answer in time counts as a failure (default QUEUE_DEFAULT_TIMEOUT, 30 s)"),
  "svc-method": header("GET, POST, PUT, PATCH, DELETE, HEAD or OPTIONS (default POST)"),
  "svc-header-forward": header("true: forward every incoming header except Authorization, Host, hop-by-hop and Svc-*"),
  "svc-deduplication-id": header("a repeat within QUEUE_DEDUP_WINDOW enqueues nothing and answers the first messageId"),
  "svc-flow-control-key": header("1-100 letters, digits, '.', '_', '-' or ':': messages sharing it share its limits"),
  "svc-flow-control-value": header("the key's limits: parallelism=<n>, rate=<n>, period=<duration> (at least parallelism or rate)"),
  "svc-not-before": header("unix seconds before which the message is not delivered; the later of it and Svc-Delay wins"),
  "svc-content-based-deduplication": header("true: deduplicate by destination, method, delivered headers and body within QUEUE_DEDUP_WINDOW"),
  "svc-retry-delay": header("ms before each retry as an expression of retried, e.g. pow(2, retried) * 1000 (capped at QUEUE_RETRY_MAX_DELAY)"),
  ...callbackHeaders("svc-callback", "callback", "the destination's answer"),
  ...callbackHeaders("svc-failure-callback", "failure callback", "that every retry failed")
}

/** Every setting a publish reads besides the forward families, lowercase: the queue refuses any other `svc-` name. */
export const PUBLISH_SETTINGS: ReadonlyArray<string> = Object.keys(PublishHeaderParameters)

const destination = Schema.String.annotate({
  description: "A full http(s) URL, as is (slashes included) or URL-encoded, or a URL group name; other query parameters stay part of the URL"
})

/** Any bytes, delivered as they are with their Content-Type. */
const AnyBody = Schema.Uint8Array.pipe(HttpApiSchema.asUint8Array())

/** What a publish (or an enqueue) answers. */
const Published = PublishResult.annotate({
  description: "a URL destination: its message; a URL group: one message per endpoint"
}).pipe(HttpApiSchema.status(201))

/**
 * A raw route's operation: its summary and description, and its body as the route takes it — any
 * content type, possibly empty (the schema above can only say `application/octet-stream`, required).
 */
const rawOperation = (summary: string, description: string) =>
  OpenApi.annotations({
    summary,
    description,
    transform: (operation) => ({
      ...operation,
      requestBody: {
        description: "Any bytes (possibly none), delivered byte for byte with their Content-Type; at most QUEUE_MAX_MESSAGE_BYTES",
        content: { "*/*": { schema: { type: "string", format: "binary" } } },
        required: false
      }
    })
  })

const families = "Svc-Forward-<Name> sends header <Name> to the destination; Svc-Callback-Forward-<Name> and " +
  "Svc-Failure-Callback-Forward-<Name> to the (failure) callback. Any other Svc- name is refused (400 naming it), " +
  "but the queue's own delivery headers (Svc-Message-Id, Svc-Retried, Svc-Signature, Svc-Topic-Name, Svc-Schedule-Id), " +
  "which are dropped. The token may also be the query parameter svc_token."

export class QueueRawRoutesGroup extends HttpApiGroup.make("publish").add(
  HttpApiEndpoint.post("publish", "/v2/publish/:destination", {
    params: { destination },
    headers: PublishHeaderParameters,
    payload: AnyBody,
    success: Published,
    error: [InvalidRequest, MessageTooLarge]
  }).annotateMerge(rawOperation(
    "Publish a message",
    `Stores the body for the destination and delivers it until it answers 2xx or the retries are used up. ${families}`
  )),
  HttpApiEndpoint.post("enqueue", "/v2/enqueue/:queue/:destination", {
    params: {
      queue: Schema.String.annotate({ description: "A FIFO queue name (created with parallelism 1 when unknown)" }),
      destination
    },
    headers: PublishHeaderParameters,
    payload: AnyBody,
    success: Published,
    error: [InvalidRequest, MessageTooLarge]
  }).annotateMerge(rawOperation(
    "Publish into a FIFO queue",
    `A publish (every header and query parameter of one) delivered in the queue's order. ${families}`
  )),
  HttpApiEndpoint.post("batch", "/v2/batch", {
    payload: BatchRequest,
    success: BatchResult.pipe(HttpApiSchema.status(201)),
    error: [InvalidRequest, BatchTooLarge, MessageTooLarge, UnsupportedMediaType]
  }).annotateMerge(OpenApi.annotations({
    summary: "Publish many messages in one request",
    description: "All or nothing, in one transaction: a bad element refuses the whole batch (400 naming each element " +
      "by index) and nothing is stored. Element i of the answer is what POST /v2/publish answers for element i. " +
      "At most QUEUE_MAX_BATCH_MESSAGES elements and QUEUE_MAX_BATCH_BYTES bytes. A Content-Type other than " +
      "application/json, or a charset other than UTF-8, is 415 before the body is read."
  })),
  HttpApiEndpoint.post("createSchedule", "/v2/schedules/:destination", {
    params: { destination },
    headers: {
      "svc-cron": Schema.String.annotate({
        description: "5 fields (minute hour day-of-month month day-of-week), optionally prefixed CRON_TZ=<IANA zone>"
      }),
      "svc-schedule-id": header("create or replace the schedule with this id (1-100 letters, digits, '.', '_', '-')"),
      ...PublishHeaderParameters
    },
    payload: AnyBody,
    success: CreatedSchedule.pipe(HttpApiSchema.status(201)),
    error: InvalidRequest
  }).annotateMerge(rawOperation(
    "Create or replace a schedule",
    `Publishes the same request on every tick of Svc-Cron (every publish header but Svc-Deduplication-Id). ${families}`
  ))
) {}

export class QueueInternalRpcGroup extends HttpApiGroup.make("internal").add(
  internalRpcEndpoint({
    name: "QueueRpcs",
    rpcs: QueueRpcs,
    description: "What `svc queue` and the suite's services call (`@svc/queue` RpcClient.ts): the HTTP API's operations " +
      "as procedures, behind QUEUE_TOKEN like every queue route; a call without it is refused, its body read only " +
      "up to 64 KiB."
  })
).middleware(QueueAuth).annotateMerge(OpenApi.annotations({ title: "Internal" })) {}

/** Only for its OpenAPI document (see the module comment). */
export const QueueRawRoutesApi = HttpApi.make("queueRawRoutes")
  .add(QueueRawRoutesGroup.middleware(QueueAuth))
  .add(ReadinessGroup)
  .add(QueueInternalRpcGroup)
  .add(DocumentGroup)

/**
 * The queue's document: `QueueApi`'s (its title, description, routes and schemas) with the routes
 * of {@link QueueRawRoutesApi} merged in.
 */
export const queueOpenApi = (): OpenApi.OpenAPISpec => openApiDocument(QueueApi, QueueRawRoutesApi)
