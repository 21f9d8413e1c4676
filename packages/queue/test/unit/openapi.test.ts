/**
 * `GET /openapi.json` as the queue serves it (its routes over the memory stores, through an
 * in-memory web handler): titled for the queue, valid by `@readme/openapi-parser` (OpenAPI 3.1
 * schema and semantics), and it documents every route the server answers and none it does not: the
 * routes the server's router is given (`served`, what `Service.layerNoDeps` serves, recorded as they
 * are added: `servedRoutes` in @svc/platform/testing) are exactly the document's operations — the
 * raw publish, enqueue and schedule-create routes (their `Svc-*` headers as parameters), /ready,
 * /rpc and the document itself included.
 */
import { assert, describe, it } from "@effect/vitest"
import { toWebHandler } from "@svc/platform"
import { assertDocumentsRoutes, servedRoutes } from "@svc/platform/testing"
import { Effect, Layer, Option, Redacted } from "effect"
import type { HttpRouter } from "effect/http"
import { SqlClient } from "effect/sql"
import { routes } from "../../src/http.ts"
import { QueueConfig } from "../../src/QueueConfig.ts"
import { served } from "../../src/Service.ts"
import * as Stores from "../../src/store/Stores.ts"

const stores = Stores.layerMemory.pipe(
  Layer.provideMerge(QueueConfig.layerWith({ token: Option.some(Redacted.make("unit-token")) }))
)

const document = Effect.scoped(Effect.gen(function*() {
  const context = yield* Layer.build(stores)
  const app = routes.pipe(Layer.provideMerge(Layer.succeedContext(context)))
  // As in http.test.ts: the raw routes' per-request needs are in `context`, merged above.
  const { handler, dispose } = toWebHandler(app as Layer.Layer<Layer.Success<typeof app>, never, HttpRouter.HttpRouter>)
  yield* Effect.addFinalizer(() => Effect.promise(dispose))
  const response = yield* Effect.promise(() => handler(new Request("http://queue.test/openapi.json")))
  assert.strictEqual(response.status, 200)
  return yield* Effect.promise(() => response.json() as Promise<Record<string, any>>)
}))

/**
 * The raw routes take the rest of the path (`/v2/publish/*`: a destination is a URL with slashes),
 * which the document names as path parameters.
 */
const RAW_ROUTES = {
  "post /v2/publish/*": "post /v2/publish/{destination}",
  "post /v2/enqueue/*": "post /v2/enqueue/{queue}/{destination}",
  "post /v2/schedules/*": "post /v2/schedules/{destination}"
}

/**
 * The routes of {@link served} over the memory stores. `/ready`'s database check is made at build
 * and only probed per request: a stand-in that is never run takes the database's place.
 */
const servedByTheQueue = Effect.scoped(Effect.gen(function*() {
  const context = yield* Layer.build(stores)
  return yield* servedRoutes(served, { wildcards: RAW_ROUTES }).pipe(
    Effect.provide(context),
    Effect.provideService(SqlClient.SqlClient, (() => Effect.void) as unknown as SqlClient.SqlClient)
  )
}))

/** Every route the queue serves (README), as method and OpenAPI path. */
const ROUTES = [
  "get /health",
  "get /ready",
  "post /rpc",
  "get /openapi.json",
  "post /v2/publish/{destination}",
  "post /v2/batch",
  "post /v2/enqueue/{queue}/{destination}",
  "get /v2/messages/{messageId}",
  "delete /v2/messages/{messageId}",
  "get /v2/dlq",
  "delete /v2/dlq",
  "post /v2/dlq/retry",
  "delete /v2/messages",
  "get /v2/events",
  "get /v2/dlq/{dlqId}",
  "post /v2/dlq/{dlqId}/retry",
  "delete /v2/dlq/{dlqId}",
  "get /v2/topics",
  "get /v2/topics/{name}",
  "patch /v2/topics/{name}",
  "delete /v2/topics/{name}",
  "post /v2/topics/{name}/endpoints",
  "delete /v2/topics/{name}/endpoints",
  "get /v2/keys",
  "post /v2/keys/rotate",
  "post /v2/schedules/{destination}",
  "get /v2/schedules",
  "get /v2/schedules/{scheduleId}",
  "delete /v2/schedules/{scheduleId}",
  "post /v2/schedules/{scheduleId}/pause",
  "post /v2/schedules/{scheduleId}/resume",
  "get /v2/flow-control",
  "get /v2/flow-control/{key}",
  "post /v2/flow-control/{key}/pause",
  "post /v2/flow-control/{key}/resume",
  "post /v2/queues",
  "get /v2/queues",
  "get /v2/queues/{name}",
  "delete /v2/queues/{name}",
  "post /v2/queues/{name}/pause",
  "post /v2/queues/{name}/resume"
]

describe("the queue's OpenAPI document", () => {
  it.live("is titled for the queue, valid, and has every route the server answers, and none it does not", () =>
    Effect.gen(function*() {
      const spec = yield* document
      assert.strictEqual(spec.info.title, "svc queue")
      const routes = yield* servedByTheQueue
      yield* assertDocumentsRoutes(spec, routes)
      // what the router holds, spelt out: a new route must be added here and to the document
      assert.sameMembers(routes, ROUTES)
    }))

  it.live("/ready, /rpc (behind QUEUE_TOKEN, naming its procedures) and the document itself", () =>
    Effect.gen(function*() {
      const spec = yield* document
      assert.sameMembers(Object.keys(spec.paths["/ready"].get.responses), ["200", "503"])
      const rpc = spec.paths["/rpc"].post
      assert.deepStrictEqual(rpc.security, [{ bearer: [] }])
      assert.includeMembers(Object.keys(rpc.responses), ["200", "400", "401", "413", "415", "503"])
      assert.match(rpc.description, /Procedures: Publish, GetMessage, .*DeleteDlqEntries\./)
      assert.deepStrictEqual(spec.paths["/openapi.json"].get.security, [])
    }))

  it.live("the raw routes: Svc-* headers as parameters, any body, the publish answers and refusals", () =>
    Effect.gen(function*() {
      const spec = yield* document
      const publish = spec.paths["/v2/publish/{destination}"].post
      const parameters = publish.parameters.map((parameter: any) => `${parameter.in} ${parameter.name}`)
      assert.includeMembers(parameters, [
        "path destination",
        "header svc-retries",
        "header svc-delay",
        "header svc-timeout",
        "header svc-method",
        "header svc-header-forward",
        "header svc-deduplication-id",
        "header svc-callback",
        "header svc-failure-callback-retries",
        "header svc-flow-control-key",
        "header svc-flow-control-value"
      ])
      assert.match(publish.description, /Svc-Forward-<Name>/)
      assert.deepStrictEqual(Object.keys(publish.requestBody.content), ["*/*"])
      assert.isFalse(publish.requestBody.required)
      assert.sameMembers(Object.keys(publish.responses), ["201", "400", "401", "413", "503"])
      assert.deepStrictEqual(publish.security, [{ bearer: [] }])
      const schedule = spec.paths["/v2/schedules/{destination}"].post
      const cron = schedule.parameters.find((parameter: any) => parameter.name === "svc-cron")
      assert.deepInclude(cron, { in: "header", required: true })
      const enqueue = spec.paths["/v2/enqueue/{queue}/{destination}"].post
      assert.deepStrictEqual(enqueue.responses["201"], publish.responses["201"])
      // a JSON body is refused 415 for another media type or a charset other than UTF-8: the batch and every
      // QueueApi route with a JSON body (QueueJsonBody) say so
      assert.includeMembers(Object.keys(spec.paths["/v2/batch"].post.responses), ["201", "400", "401", "413", "415"])
      assert.includeMembers(Object.keys(spec.paths["/v2/queues"].post.responses), ["200", "400", "413", "415"])
    }))
})
