/**
 * The docs service assembled: REST API v2 (and /openapi.json) on `DOCS_PORT` (default 8789). Needs only
 * the database (`Database | PgClient | SqlClient`), so `svc start` can run it next to other services.
 * Indexing and API keys are managed by the `svc docs` commands against the same database; an empty
 * index is first filled with the suite's own dependencies' docs in the background, and versions an earlier
 * process left queued or indexing are indexed again (DefaultLibraries).
 */
import { NodeServices } from "@effect/platform-node"
import { apiRoutes, serve, withBackground } from "@svc/platform"
import { DocsApi } from "@svc/schema"
import { Config, Effect, Layer } from "effect"
import { ApiKeys } from "./ApiKeys.ts"
import { DocsAuthLive } from "./Auth.ts"
import * as DefaultLibraries from "./DefaultLibraries.ts"
import { ApiHandlers } from "./http.ts"
import { Indexer } from "./Indexer.ts"
import * as Refresher from "./Refresher.ts"
import { RefreshStore } from "./RefreshStore.ts"
import { RpcRoute } from "./rpc.ts"
import { Search } from "./Search.ts"
import { GitSettings } from "./sources/Git.ts"
import { maxSnippets } from "./sources/Source.ts"
import { WebSettings } from "./sources/WebFetch.ts"

export const ServicesLive = Layer.mergeAll(Search.layer, ApiKeys.layer, Indexer.layer)

/**
 * Every route of the service: the REST API v2 and the operators' RPC at /rpc; needs `Search`,
 * `ApiKeys` and `Indexer`. The rate limiter (in `DocsAuthLive`) is built with the routes, so each
 * server counts on its own.
 */
export const routes = Layer.mergeAll(
  apiRoutes({ api: DocsApi, handlers: ApiHandlers, openapi: true }).pipe(Layer.provide(DocsAuthLive)),
  RpcRoute
)

export const Port = Config.Port("DOCS_PORT").pipe(Config.withDefault(8789))

/**
 * The HTTP server, and in the background: the default documentation queued when the index is empty,
 * then every unfinished (queued, indexing) version indexed; with `DOCS_REFRESH_INTERVAL`, the
 * scheduled refresh of git and npm sources (Refresher.ts).
 */
/** The sources' settings are read at each add; read here too, so that a bad one stops the start, not the first add. */
const SourceSettingsChecked = Layer.effectDiscard(Effect.all([WebSettings, GitSettings, maxSnippets]))

export const layer = withBackground(
  serve(routes, { name: "docs-api", port: Port, portVariable: "DOCS_PORT" }),
  Layer.mergeAll(
    DefaultLibraries.layer,
    // with DOCS_REFRESH_INTERVAL: the scheduled refresh of git and npm sources, one pass per database
    Refresher.layer.pipe(Layer.provide([RefreshStore.layer, NodeServices.layer]))
  )
).pipe(Layer.provide(SourceSettingsChecked), Layer.provide(ServicesLive))
