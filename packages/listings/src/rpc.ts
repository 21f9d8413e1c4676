/**
 * The internal RPC group (`ListingsRpcs`) at POST /rpc (NDJSON over HTTP), behind `ADMIN_TOKEN`.
 * `TriggerIngest` streams: one `Run` event per source, then, with `wait`, `Progress` events about
 * every 500 ms and one `Finished` event per started run.
 */
import { RpcDefects, RpcHttp } from "@svc/platform"
import { type IngestEvent, ListingsRpcs } from "@svc/schema"
import { Duration, Effect, Layer, Option, Schedule, Stream } from "effect"
import { HttpRouter } from "effect/http"
import { RpcSerialization } from "effect/rpc"
import { adminAuth } from "./Auth.ts"
import { Ingest } from "./Ingest.ts"
import { SourceHealthLookup } from "./SourceHealth.ts"

const spacedForever = Schedule.spaced(Duration.millis(500))

export const RpcHandlers = ListingsRpcs.toLayer(Effect.gen(function*() {
  const ingest = yield* Ingest
  const health = yield* SourceHealthLookup
  return ListingsRpcs.of({
    TriggerIngest: ({ sources, wait }) =>
      Stream.unwrap(Effect.gen(function*() {
        const handles = yield* ingest.trigger({ sources, trigger: "manual" })
        const runs = Stream.fromIterable(handles.map((handle): IngestEvent => ({ _tag: "Run", run: handle.run })))
        if (!wait) return runs
        const follow = handles.flatMap((handle) =>
          Option.match(handle.outcome, {
            onNone: () => [],
            onSome: (outcome) => [
              Stream.fromEffect(outcome).pipe(
                Stream.map((outcome): IngestEvent => ({ _tag: "Finished", sourceId: handle.run.sourceId, outcome })),
                Stream.merge(
                  Stream.fromEffectSchedule(handle.progress, spacedForever).pipe(
                    Stream.map((progress): IngestEvent => ({ _tag: "Progress", sourceId: handle.run.sourceId, ...progress }))
                  ),
                  { haltStrategy: "left" }
                )
              )
            ]
          })
        )
        return Stream.concat(runs, Stream.mergeAll(follow, { concurrency: "unbounded" }))
      })),
    SourceHealth: () => health.list
  })
}))


/** POST /rpc: the token check, then the RPC server. Needs Ingest, SourceHealthLookup, ListingsConfig. */
export const RpcRoute = HttpRouter.use((router) =>
  Effect.gen(function*() {
    const auth = yield* adminAuth
    const httpEffect = yield* RpcHttp.rpcHttpEffect(ListingsRpcs)
    yield* router.add("POST", "/rpc", auth.route(httpEffect))
  })
).pipe(Layer.provide([RpcHandlers, RpcDefects.layer, RpcSerialization.layerNdjson]))
