/**
 * The queue service as one layer: the HTTP API and the internal RPC (`POST /rpc`) on `QUEUE_PORT`
 * (default 8788), the pruning of events and idle flow-control keys and, unless
 * `QUEUE_WORKER=false`, the delivery worker. `GET /ready` probes the database (platform Readiness.ts). Needs only the database (`PgClient`), so `svc start`
 * and the process entry (`main.ts`) provide `Database.layer`.
 */
import { Readiness, serve, withBackground } from "@svc/platform"
import { Config, Effect, Layer, Option } from "effect"
import * as Pruning from "./Pruning.ts"
import { QUERY_AS_SENT, routes } from "./http.ts"
import { QueueConfig } from "./QueueConfig.ts"
import { RpcRoute } from "./rpc.ts"
import * as Scheduler from "./Scheduler.ts"
import * as Stores from "./store/Stores.ts"
import * as Worker from "./Worker.ts"

export const Port = Config.Port("QUEUE_PORT").pipe(Config.withDefault(8788))

/**
 * Every setting of the queue, read at once: `svc start` reads them before it starts the database, so
 * that a bad one stops the start in a moment and makes no data folder.
 */
export const SettingsChecked = Layer.merge(QueueConfig.layer, Layer.effectDiscard(Scheduler.CatchUp))

/** The worker, and beside it the schedule firing loop, when `QUEUE_WORKER` is not false. */
export const WorkerIfEnabled = Layer.unwrap(
  Effect.map(QueueConfig, (settings) => settings.worker ? Layer.merge(Worker.layer, Scheduler.layer) : Layer.empty)
)

/**
 * A warning at start when `QUEUE_TOKEN` is unset: publish, the API and the RPC then answer 503, and
 * a newcomer learned it only from the first request.
 */
export const WarnWithoutToken = Layer.effectDiscard(
  Effect.flatMap(QueueConfig, (settings) =>
    Option.isNone(settings.token)
      ? Effect.logWarning("QUEUE_TOKEN is not set: publish, the API and the RPC answer 503 until the queue is started with one")
      : Effect.void)
)

/**
 * What the server serves: every route (the HTTP API, the raw routes, /openapi.json, /rpc and
 * `GET /ready`, the database probed). Each is in the OpenAPI document (`QueueOpenApi.ts` in
 * @svc/schema); `test/unit/openapi.test.ts` compares these routes with the document.
 */
export const served = Layer.mergeAll(routes, RpcRoute, Readiness.route(Effect.all([Readiness.database])))

/** HTTP and worker on the given (or configured) port, with the stores and `QueueConfig` built by the caller. */
export const layerNoDeps = (options?: { readonly port?: number | Config.Config<number>; readonly host?: string }) =>
  withBackground(
    serve(served, {
      name: "queue",
      port: options?.port ?? Port,
      portVariable: "QUEUE_PORT",
      // a publish's destination keeps its own query as sent (`?x=%FF` included); the other routes'
      // queries are checked as every server's are (`GET /v2/dlq?url=%FF` is a 400)
      queryAsSent: QUERY_AS_SENT,
      ...(options?.host === undefined ? {} : { host: options.host })
    }),
    Layer.mergeAll(WorkerIfEnabled, Pruning.layer, WarnWithoutToken)
  )

/** The whole service; needs `PgClient` (e.g. `Database.layer`). */
export const layer = layerNoDeps().pipe(Layer.provide(Stores.layer), Layer.provideMerge(QueueConfig.layer))
