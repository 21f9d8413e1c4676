/**
 * No 500 on any input at the queue's routes other than publish (issue 16, items 16-17; the publish
 * headers have their own fuzz test): the sweep's 500s (`/v2/dlq?url=%00`, `topicName=%00`,
 * `responseStatus=99999999999`) are 400s naming the parameter, and property-based requests
 * (fast-check) at the messages, DLQ, URL group, key, batch, events, bulk, schedule, flow-control, FIFO
 * queue and enqueue routes and at the internal RPC — hostile path
 * segments, query values, JSON bodies and non-JSON ones, unknown parameters — never get a 5xx, get
 * the suite's error body, and never see a stack, SQL or a path. A real queue on a fresh database,
 * over a socket; no worker, so nothing is ever delivered anywhere.
 */
import { assert, layer } from "@effect/vitest"
import { RequestFuzz } from "@svc/platform/testing"
import { QueueRpcs } from "@svc/schema"
import { Effect, Layer } from "effect"
import { call, publish, queueLayer, QueueUrl, TOKEN } from "./support.ts"

const { fc } = RequestFuzz

/** A group and a queued message that the fuzz can also hit by name and id. */
const Seeded = Layer.effectDiscard(Effect.gen(function*() {
  const group = yield* call("/v2/topics/g1/endpoints", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ endpoints: [{ name: "one", url: "http://127.0.0.1:9/one" }] })
  })
  if (group.status !== 200) return yield* Effect.die(new Error(`seed group: ${group.status} ${JSON.stringify(group.body)}`))
  const message = yield* publish("http://127.0.0.1:9/x")
  if (message.status !== 201) return yield* Effect.die(new Error(`seed message: ${message.status}`))
  messageIds.push(message.body.messageId)
  // a schedule, a queue and a flow-control key the fuzz can also hit by name
  const seeds = [
    yield* call("/v2/schedules/http://127.0.0.1:9/s", {
      method: "POST",
      headers: { "Svc-Cron": "0 0 1 1 *", "Svc-Schedule-Id": "s1" }
    }),
    yield* call("/v2/queues", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ queueName: "q1", parallelism: 1 })
    }),
    yield* publish("http://127.0.0.1:9/k", { headers: { "Svc-Flow-Control-Key": "k1", "Svc-Flow-Control-Value": "parallelism=1" } })
  ]
  for (const seed of seeds) {
    if (seed.status >= 300) return yield* Effect.die(new Error(`seed: ${seed.status} ${JSON.stringify(seed.body)}`))
  }
}))
const messageIds: Array<string> = []

// worker off: a message stays queued, nothing is sent; loopback allowed: no name is ever resolved
const TestLayer = Seeded.pipe(Layer.provideMerge(queueLayer({ worker: false, allowPrivate: true })))

const send = (path: string, init: RequestInit & { readonly token?: string | null } = {}) =>
  Effect.gen(function*() {
    const base = yield* QueueUrl
    const headers = new Headers(init.headers)
    if (init.token !== null) headers.set("authorization", `Bearer ${init.token ?? TOKEN}`)
    return yield* Effect.promise(async () => {
      const response = await fetch(base + path, { ...init, headers })
      const answer = await RequestFuzz.readAnswer(response)
      if ((init.method ?? "GET") === "HEAD") assert.isBelow(answer.status, 500, `HEAD ${path}`)
      else RequestFuzz.checkAnswer(`${init.method ?? "GET"} ${path}`, answer)
      return answer
    })
  })

/** Runs a fast-check property whose predicate is an Effect of the test's context. */
const property = <Ts extends [unknown, ...Array<unknown>]>(
  arbitraries: { [K in keyof Ts]: RequestFuzz.fc.Arbitrary<Ts[K]> },
  predicate: (...values: Ts) => Effect.Effect<unknown, never, QueueUrl>,
  numRuns: number
) =>
  Effect.gen(function*() {
    const context = yield* Effect.context<QueueUrl>()
    yield* Effect.promise(() =>
      fc.assert(
        fc.asyncProperty(...arbitraries, (...values: Ts) =>
          Effect.runPromiseWith(context)(Effect.asVoid(predicate(...values)))),
        RequestFuzz.fuzzParameters(numRuns)
      )
    )
  })

const expectInvalid = (path: string, parameter: string) =>
  Effect.map(call(path), (answer) => RequestFuzz.checkInvalid(`GET ${path}`, answer, parameter, "query"))

const DLQ_PARAMS = ["cursor", "limit", "url", "topicName", "responseStatus", "messageId"]

const EVENTS_PARAMS = ["messageId", "state", "url", "topicName", "fromDate", "toDate", "count", "cursor"]

/** A value of a bulk filter field: a plausible one or anything JSON holds. */
const filterValue = fc.oneof(
  fc.integer(),
  fc.double(),
  RequestFuzz.hostileString,
  fc.constant(null),
  fc.jsonValue({ maxDepth: 2 })
)

/** Bulk request bodies: ids and filters with hostile values (well-formed or not). */
const bulkBody = fc.record({
  messageIds: fc.oneof(fc.array(fc.oneof(fc.uuid(), RequestFuzz.hostileString), { maxLength: 5 }), filterValue),
  dlqIds: fc.oneof(fc.array(fc.oneof(fc.uuid(), RequestFuzz.hostileString), { maxLength: 5 }), filterValue),
  filter: fc.oneof(
    fc.record({
      url: filterValue,
      topicName: filterValue,
      queue: filterValue,
      fromDate: filterValue,
      toDate: filterValue,
      scheduleId: filterValue,
      flowControlKey: filterValue,
      responseStatus: filterValue
    }, { requiredKeys: [] }),
    filterValue
  )
}, { requiredKeys: [] }).map((value) => JSON.stringify(value))

/** A group name: the seeded one, a valid unknown one, or anything. */
const groupName = fc.oneof(
  fc.constant("g1"),
  fc.stringMatching(/^[A-Za-z0-9._-]{1,20}$/),
  RequestFuzz.pathSegment
)

/** An id: the seeded message's, a UUID, or anything. */
const id = fc.oneof(fc.constant("seeded"), fc.uuid(), RequestFuzz.pathSegment)

/** A URL: loopback with a hostile path, or anything at all (never a name that would be resolved). */
const url = fc.oneof(
  RequestFuzz.hostileString.map((path) => `http://127.0.0.1:9/${RequestFuzz.percentEncode(path)}`),
  RequestFuzz.hostileString.filter((value) => !/^\s*https?:/i.test(value))
)

const endpoints = fc.array(
  fc.record({ name: RequestFuzz.hostileString, url }, { requiredKeys: [] }),
  { maxLength: 4 }
)

/** Request bodies: well-formed payloads with hostile values, any JSON, and text that is not JSON. */
const body = fc.oneof(
  endpoints.map((endpoints) => JSON.stringify({ endpoints })),
  fc.dictionary(RequestFuzz.hostileString, fc.oneof(RequestFuzz.hostileString, fc.array(RequestFuzz.hostileString, { maxLength: 3 })), { maxKeys: 4 })
    .map((headers) => JSON.stringify({ headers })),
  fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value)),
  RequestFuzz.hostileString,
  fc.constantFrom("", "{", "[", "{\"endpoints\":", "null", "{\"endpoints\":null}", "{\"endpoints\":[null]}", "\u0000")
)

/** Request content types, among them the charsets a JSON route refuses (the suite's list). */
const { contentType } = RequestFuzz

const resolveId = (value: string) => value === "seeded" ? messageIds[0] ?? value : value

layer(TestLayer, { timeout: 180_000, excludeTestServices: true })("queue routes: no 500 on any input", (it) => {
  it.effect("the sweep's DLQ filters are 400 naming the parameter", () =>
    Effect.gen(function*() {
      yield* expectInvalid("/v2/dlq?url=%00", "url")
      yield* expectInvalid("/v2/dlq?topicName=%00", "topicName")
      yield* expectInvalid("/v2/dlq?responseStatus=99999999999", "responseStatus")
      yield* expectInvalid("/v2/dlq?responseStatus=600", "responseStatus")
      yield* expectInvalid("/v2/dlq?messageId=a%00", "messageId")
      yield* expectInvalid(`/v2/dlq?url=${"a".repeat(2049)}`, "url")
      // in range: answered
      const ok = yield* call("/v2/dlq?responseStatus=404&url=http%3A%2F%2F127.0.0.1%3A9%2Fx&topicName=g1&limit=5")
      assert.strictEqual(ok.status, 200)
      assert.deepStrictEqual(ok.body.messages, [])
    }))

  it.effect("a NUL in an endpoint name or URL, or in endpoints to remove, is 400 naming the field", () =>
    Effect.gen(function*() {
      for (const [method, payload, parameter] of [
        ["POST", { endpoints: [{ name: "a\u0000", url: "http://127.0.0.1:9/a" }] }, "endpoints[0].name"],
        ["POST", { endpoints: [{ url: "http://127.0.0.1:9/a\u0000" }] }, "endpoints[0].url"],
        ["DELETE", { endpoints: [{ name: "a\u0000" }] }, "endpoints[0].name"],
        ["DELETE", { endpoints: [{ url: "\u0000" }] }, "endpoints[0].url"]
      ] as const) {
        const { status, body } = yield* call("/v2/topics/g1/endpoints", {
          method,
          headers: { "content-type": "application/json" },
          body: JSON.stringify(payload)
        })
        assert.strictEqual(status, 400, `${method} ${JSON.stringify(payload)}: ${JSON.stringify(body)}`)
        assert.deepInclude(body.issues.map((issue: any) => [issue.in, issue.parameter]), ["body", parameter])
      }
    }))

  it.effect("property: GET /v2/dlq with any query parameters", () =>
    property([RequestFuzz.queryString(DLQ_PARAMS)], (query) => send(`/v2/dlq${query}`), 250))

  it.effect("property: GET /v2/events with any query parameters", () =>
    Effect.gen(function*() {
      yield* expectInvalid("/v2/events?url=%00", "url")
      yield* expectInvalid("/v2/events?count=99999999999", "count")
      yield* expectInvalid("/v2/events?fromDate=1e30", "fromDate")
      yield* expectInvalid("/v2/events?messageId=a%00", "messageId")
      yield* property([RequestFuzz.queryString(EVENTS_PARAMS)], (query) => send(`/v2/events${query}`), 250)
    }))

  it.effect("property: the bulk routes (DELETE /v2/messages, POST /v2/dlq/retry, DELETE /v2/dlq) with any body", () =>
    property(
      [
        fc.constantFrom(["DELETE", "/v2/messages"], ["POST", "/v2/dlq/retry"], ["DELETE", "/v2/dlq"]),
        fc.oneof(bulkBody, body),
        contentType
      ],
      ([method, path], body, contentType) =>
        send(path, { method, body, headers: contentType === "" ? {} : { "content-type": contentType } }),
      300
    ))

  it.effect("property: messages and DLQ entries by any id, every method of their routes", () =>
    property(
      [
        id,
        fc.constantFrom(
          ["GET", "/v2/messages/"],
          ["DELETE", "/v2/messages/"],
          ["GET", "/v2/dlq/"],
          ["DELETE", "/v2/dlq/"],
          ["POST", "/v2/dlq/", "/retry"]
        ),
        RequestFuzz.queryString([])
      ],
      (id, [method, prefix, suffix], query) =>
        send(`${prefix}${id === "seeded" ? resolveId(id) : id}${suffix ?? ""}${query}`, { method }),
      250
    ))

  it.effect("property: URL groups by any name, with any body", () =>
    property(
      [
        groupName,
        fc.constantFrom(
          ["GET", ""],
          ["POST", "/endpoints"],
          ["DELETE", "/endpoints"],
          ["PATCH", ""],
          ["DELETE", ""]
        ),
        body,
        contentType
      ],
      (name, [method, suffix], body, contentType) =>
        send(`/v2/topics/${name}${suffix}`, {
          method,
          ...(method === "GET" ? {} : { body }),
          headers: contentType === "" ? {} : { "content-type": contentType }
        }),
      300
    ))

  it.effect("property: any route, any method, any token", () =>
    property(
      [
        fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"),
        fc.constantFrom("/v2/topics", "/v2/keys", "/v2/keys/rotate", "/v2/dlq", "/v2/messages", "/health", "/openapi.json", "/v2", "/rpc", ""),
        fc.array(RequestFuzz.pathSegment, { maxLength: 2 }),
        RequestFuzz.queryString(["limit", "cursor", "svc_token"]),
        fc.constantFrom<string | null>(TOKEN, null, "wrong", "", "Bearer"),
        body
      ],
      (method, prefix, segments, query, token, body) =>
        send(`${prefix}${segments.map((segment) => `/${segment}`).join("")}${query}`, {
          method,
          token,
          ...(method === "GET" || method === "HEAD" ? {} : { body })
        }),
      250
    ))

  it.effect("property: POST /v2/publish/<any destination> with any pass-through query (no Svc-* configuration: the publish-header fuzz has those)", () =>
    property(
      [
        fc.oneof(
          fc.constant("g1"),
          RequestFuzz.pathSegment,
          RequestFuzz.hostileString.map((path) => `http://127.0.0.1:9/${RequestFuzz.percentEncode(path)}`),
          RequestFuzz.hostileString.map((path) => RequestFuzz.percentEncode(`http://127.0.0.1:9/${path}`))
        ),
        RequestFuzz.queryString(["a", "b"]).filter((query) => !/[?&]svc/i.test(query)),
        fc.oneof(RequestFuzz.hostileString, fc.uint8Array({ maxLength: 64 }))
      ],
      (destination, query, body) => send(`/v2/publish/${destination}${query}`, { method: "POST", body: body as BodyInit }),
      150
    ))

  it.effect("property: the internal RPC with hostile payloads", () => {
    const value = fc.oneof(RequestFuzz.hostileString, fc.integer(), fc.double(), fc.constant(99999999999), fc.constant(null))
    const payload = fc.oneof(
      fc.tuple(fc.constantFrom("GetMessage"), fc.record({ messageId: RequestFuzz.hostileString })),
      fc.tuple(fc.constantFrom("RetryDlq", "DeleteDlq"), fc.record({ dlqId: RequestFuzz.hostileString })),
      fc.tuple(fc.constantFrom("GetTopic", "DeleteTopic"), fc.record({ name: fc.oneof(groupName, RequestFuzz.hostileString) })),
      fc.tuple(fc.constantFrom("ListTopics"), fc.constant({})),
      fc.tuple(
        fc.constantFrom("ListDlq"),
        fc.oneof(
          // one filter at a time: a bad one next to it would hide it behind the decode failure
          fc.constantFrom("cursor", "url", "topicName", "messageId").chain((key) =>
            RequestFuzz.hostileString.map((text) => ({ [key]: text }))
          ),
          fc.constantFrom("limit", "responseStatus").chain((key) => value.map((number) => ({ [key]: number }))),
          fc.dictionary(fc.constantFrom(...DLQ_PARAMS), value, { maxKeys: 3 })
        )
      ),
      fc.tuple(
        fc.constantFrom("UpsertEndpoints"),
        fc.record({ name: fc.oneof(groupName, RequestFuzz.hostileString), endpoints })
      ),
      fc.tuple(fc.constantFrom("Nope", "Publish", ""), fc.jsonValue({ maxDepth: 2 }))
    )
    return property(
      [payload, fc.boolean()],
      ([tag, payload], envelope) =>
        Effect.gen(function*() {
          const base = yield* QueueUrl
          yield* Effect.promise(async () => {
            const response = await fetch(`${base}/rpc`, {
              method: "POST",
              headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/ndjson" },
              body: envelope
                ? `${JSON.stringify({ _tag: "Request", id: "1", tag, payload, headers: [] })}\n`
                : `${JSON.stringify(payload)}\n`
            })
            RequestFuzz.checkRpcAnswer(
              `RPC ${tag} ${JSON.stringify(payload).slice(0, 300)}`,
              await RequestFuzz.readAnswer(response),
              { malformed: !envelope || !QueueRpcs.requests.has(tag) }
            )
          })
        }),
      250
    )
  })

  it.effect("property: POST /v2/batch with hostile elements, any JSON and non-JSON bodies", () => {
    const element = fc.record({
      destination: fc.oneof(url, groupName, fc.constant("http://127.0.0.1:9/b")),
      body: fc.oneof(RequestFuzz.hostileString, fc.base64String({ maxLength: 40 })),
      bodyEncoding: fc.oneof(fc.constantFrom("utf8", "base64"), RequestFuzz.hostileString),
      headers: fc.dictionary(
        fc.oneof(fc.constantFrom("Svc-Retries", "Svc-Delay", "Svc-Not-Before", "Svc-Retry-Delay", "Svc-Content-Based-Deduplication", "Svc-Deduplication-Id", "Svc-Callback", "Svc-Flow-Control-Key", "Svc-Flow-Control-Value", "Content-Type"), RequestFuzz.hostileString),
        fc.oneof(RequestFuzz.hostileString, fc.constantFrom("1", "true", "pow(2, retried) * 1000", "parallelism=2")),
        { maxKeys: 4 }
      ),
      queue: fc.oneof(fc.constantFrom("q1"), RequestFuzz.hostileString)
    }, { requiredKeys: [] })
    const batchBody = fc.oneof(
      fc.array(element, { maxLength: 5 }).map((elements) => JSON.stringify(elements)),
      fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }).map((values) => JSON.stringify(values)),
      fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value)),
      RequestFuzz.hostileString,
      fc.constantFrom("", "[", "[null]", "[{}]", "[[]]", "{\"destination\":\"x\"}", "\u0000")
    )
    return property([batchBody], (payload) => send("/v2/batch", { method: "POST", headers: { "content-type": "application/json" }, body: payload }), 250)
  })

  it.effect("property: schedules, flow-control keys, FIFO queues and enqueue, by any name, with any configuration query and body", () => {
    // The configuration of these routes in its query-parameter form (the headers' parsing is the
    // publish-header fuzz's): here every value can be hostile, NUL and non-ASCII included.
    const CONFIG = [
      "svc-cron", "svc-schedule-id", "svc-flow-control-key", "svc-flow-control-value", "svc-retries", "svc-delay",
      "svc-callback", "svc-method", "svc-timeout", "limit", "cursor"
    ]
    const name = fc.oneof(fc.constantFrom("s1", "k1", "q1"), fc.stringMatching(/^[A-Za-z0-9._-]{1,20}$/), RequestFuzz.pathSegment)
    const destination = fc.oneof(
      fc.constantFrom("g1", "http://127.0.0.1:9/x"),
      RequestFuzz.hostileString.map((path) => RequestFuzz.percentEncode(`http://127.0.0.1:9/${path}`)),
      RequestFuzz.pathSegment
    )
    const queueBody = fc.oneof(
      fc.record({
        queueName: fc.oneof(fc.constant("q1"), RequestFuzz.hostileString),
        parallelism: fc.oneof(fc.integer(), fc.double(), RequestFuzz.hostileString, fc.constant(null))
      }, { requiredKeys: [] }).map((value) => JSON.stringify(value)),
      body
    )
    return property(
      [
        fc.constantFrom(
          ["GET", "/v2/schedules"],
          ["GET", "/v2/schedules/{name}"],
          ["DELETE", "/v2/schedules/{name}"],
          ["POST", "/v2/schedules/{name}/pause"],
          ["POST", "/v2/schedules/{name}/resume"],
          ["POST", "/v2/schedules/{destination}"],
          ["GET", "/v2/flow-control"],
          ["GET", "/v2/flow-control/{name}"],
          ["POST", "/v2/flow-control/{name}/pause"],
          ["POST", "/v2/flow-control/{name}/resume"],
          ["POST", "/v2/queues"],
          ["GET", "/v2/queues"],
          ["GET", "/v2/queues/{name}"],
          ["DELETE", "/v2/queues/{name}"],
          ["POST", "/v2/queues/{name}/pause"],
          ["POST", "/v2/queues/{name}/resume"],
          ["POST", "/v2/enqueue/{name}/{destination}"]
        ),
        name,
        destination,
        RequestFuzz.queryString(CONFIG),
        queueBody,
        contentType
      ],
      ([method, route], name, destination, query, payload, contentType) =>
        send(`${route.replace("{name}", name).replace("{destination}", destination)}${query}`, {
          method,
          ...(method === "GET" ? {} : { body: payload }),
          headers: contentType === "" ? {} : { "content-type": contentType }
        }),
      400
    )
  })
})
