/**
 * A client of `DocsRpcs` for the `svc docs` commands when they operate a running docs-api
 * (`DOCS_URL`, `DOCS_ADMIN_TOKEN`) instead of the database directly.
 */
import { ServiceClient } from "@svc/platform"
import { type AddLibrary, DocsRpcs, type IndexEvent } from "@svc/schema"
import { Effect, Layer, type Redacted, Stream } from "effect"
import { RpcClient, type RpcClientError, RpcSerialization } from "effect/rpc"

export interface Remote {
  /** The docs-api base URL, e.g. http://localhost:8789 */
  readonly url: string
  readonly token: Redacted.Redacted<string>
}

const clientLayer = (remote: Remote) =>
  RpcClient.layerProtocolHttp({ url: `${remote.url.replace(/\/+$/, "")}/rpc` }).pipe(
    Layer.provide(RpcSerialization.layerNdjson),
    // A refusal (401/503, checked before the RPC) fails with its status and the server's message.
    Layer.provide(ServiceClient.bearerHttpClient(remote.token))
  )

/** The operations of `svc docs` against the docs-api at `remote`. */
export const operations = (remote: Remote) => {
  const withClient = <A, E>(use: (client: RpcClient.FromGroup<typeof DocsRpcs, RpcClientError.RpcClientError>) => Effect.Effect<A, E>) =>
    Effect.flatMap(RpcClient.make(DocsRpcs), use).pipe(Effect.scoped, Effect.provide(clientLayer(remote)))
  return {
    /** Adds (or refreshes) and follows the run: `onEvent` for each event; the last event (`Done`). */
    add: (
      payload: typeof AddLibrary.payloadSchema.Type,
      onEvent: (event: IndexEvent) => Effect.Effect<void>) =>
      withClient((client) => client.AddLibrary(payload).pipe(Stream.tap(onEvent), Stream.runLast)),
    refresh: (libraryId: string, onEvent: (event: IndexEvent) => Effect.Effect<void>) =>
      withClient((client) => client.Refresh({ libraryId }).pipe(Stream.tap(onEvent), Stream.runLast)),
    remove: (libraryId: string) => withClient((client) => client.Remove({ libraryId })),
    list: withClient((client) => client.List())
  }
}
