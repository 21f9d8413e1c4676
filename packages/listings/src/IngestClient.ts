/**
 * A client of `ListingsRpcs` for the `svc listings ingest` command: triggers runs and prints their
 * progress as the server streams it.
 */
import { ServiceClient } from "@svc/platform"
import { type IngestEvent, ListingsRpcs } from "@svc/schema"
import { Effect, Layer, type Redacted, Stream } from "effect"
import { RpcClient, RpcSerialization } from "effect/rpc"

export const trigger = (options: {
  readonly url: string
  readonly token: Redacted.Redacted<string>
  readonly sources?: ReadonlyArray<string> | undefined
  readonly wait: boolean
  readonly onEvent: (event: IngestEvent) => Effect.Effect<void>
}) =>
  Effect.gen(function*() {
    const client = yield* RpcClient.make(ListingsRpcs)
    yield* client.TriggerIngest({ wait: options.wait, ...(options.sources ? { sources: options.sources } : {}) }).pipe(
      Stream.runForEach(options.onEvent)
    )
  }).pipe(
    Effect.scoped,
    Effect.provide(
      RpcClient.layerProtocolHttp({ url: options.url }).pipe(
        Layer.provide(RpcSerialization.layerNdjson),
        // A refusal (401/503, checked before the RPC) fails with its status and the server's message.
        Layer.provide(ServiceClient.bearerHttpClient(options.token))
      )
    )
  )

/** One line per event, for a terminal. */
export const describe = (event: IngestEvent): string => {
  switch (event._tag) {
    case "Run":
      return event.run.status === "started"
        ? `${event.run.sourceId}: started`
        : `${event.run.sourceId}: skipped (${event.run.reason === "disabled" ? "disabled" : "already running"})`
    case "Progress":
      return `${event.sourceId}: ${event.offersFetched} read, ${event.offersUpserted} upserted, ${event.recordsRejected} rejected`
    case "Finished":
      return `${event.sourceId}: ${event.outcome.ok ? "done" : "FAILED"} - ${event.outcome.offersFetched} read, ` +
        `${event.outcome.offersUpserted} upserted, ${event.outcome.recordsRejected} rejected, ` +
        `${event.outcome.offersExpired} expired in ${(event.outcome.durationMs / 1000).toFixed(1)} s`
  }
}
