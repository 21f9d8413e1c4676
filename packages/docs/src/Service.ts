/**
 * The docs service assembled: REST API v2 (and /openapi.json, /ready, /rpc) on `DOCS_PORT` (default 8789). Needs only
 * the database (`Database | PgClient | SqlClient`), so `svc start` can run it next to other services.
 * Indexing and API keys are managed by the `svc docs` commands against the same database; an empty
 * index is first filled with the suite's own dependencies' docs in the background, and versions an earlier
 * process left queued or indexing are indexed again (DefaultLibraries).
 */
import { NodeServices } from "@effect/platform-node"
import { apiRoutes, Readiness, serve, withBackground } from "@svc/platform"
import { DocsApi, MAX_ID_LENGTH, MAX_QUESTION_LENGTH, MAX_TOPIC_LENGTH } from "@svc/schema"
import { Config, Effect, Layer } from "effect"
import { ApiKeys } from "./ApiKeys.ts"
import { DocsAuthConfig, DocsAuthLive } from "./Auth.ts"
import * as DefaultLibraries from "./DefaultLibraries.ts"
import { ApiHandlers, OpenApiRoute } from "./http.ts"
import { Indexer } from "./Indexer.ts"
import * as Refresher from "./Refresher.ts"
import { RefreshStore } from "./RefreshStore.ts"
import { RpcRoute } from "./rpc.ts"
import { Search } from "./Search.ts"
import { GitSettings } from "./sources/Git.ts"
import { SourceRoots } from "./sources/Roots.ts"
import { maxSnippets } from "./sources/Source.ts"
import { WebSettings } from "./sources/WebFetch.ts"

export const ServicesLive = Layer.mergeAll(Search.layer, ApiKeys.layer, Indexer.layer)

/**
 * Every route of the service but `/ready` (which needs the database at build): the REST API v2, its
 * OpenAPI document and the operators' RPC at /rpc; needs `Search`, `ApiKeys` and `Indexer`. The rate
 * limiter (in `DocsAuthLive`) is built with the routes, so each server counts on its own.
 */
export const routes = Layer.mergeAll(
  apiRoutes({ api: DocsApi, handlers: ApiHandlers }).pipe(Layer.provide(DocsAuthLive)),
  OpenApiRoute,
  RpcRoute
)

/** `GET /ready`: the database answers (platform Readiness.ts). */
export const ReadyRoute = Readiness.route(Effect.all([Readiness.database]))

/**
 * What the server serves: every route. Each is in the OpenAPI document;
 * `test/openapiDocument.test.ts` compares these routes with the document.
 */
export const served = Layer.merge(routes, ReadyRoute)

export const Port = Config.Port("DOCS_PORT").pipe(Config.withDefault(8789))

/**
 * The request line and headers docs-api reads: its text parameters at their limits (a context's
 * question, topic and library id; a search's name and question hold less) in characters UTF-8 writes
 * in 3 bytes, each byte percent-encoded (9 characters a character), and 8 KiB of headers. Node's
 * 16 KiB refused a 1,990-character Chinese question (18 kB encoded) with a 431, where the API's limit
 * is 2,000 characters; through the MCP tools the agent was told to keep it "under 2000 characters".
 */
export const MAX_HEAD_BYTES = (MAX_QUESTION_LENGTH + MAX_TOPIC_LENGTH + MAX_ID_LENGTH) * 9 + 8 * 1024

/**
 * Every setting docs-api reads, read at once: `svc start` reads them before it starts the database (a
 * bad one stops the start in a moment, with no data folder made), and the layer below again. The
 * sources' settings are read at each add too: here, a bad one stops the start, not the first add.
 */
export const SettingsChecked = Layer.effectDiscard(Effect.all([
  WebSettings,
  GitSettings,
  maxSnippets,
  DocsAuthConfig,
  SourceRoots,
  DefaultLibraries.DefaultPackages,
  DefaultLibraries.ResumeInterval,
  Refresher.RefreshInterval
]))

/**
 * The HTTP server, and in the background: the default documentation queued when the index is empty,
 * then every unfinished (queued, indexing) version indexed; with `DOCS_REFRESH_INTERVAL`, the
 * scheduled refresh of git and npm sources (Refresher.ts).
 */
export const layer = withBackground(
  serve(served, { name: "docs-api", port: Port, portVariable: "DOCS_PORT", maxHeadBytes: MAX_HEAD_BYTES }),
  Layer.mergeAll(
    DefaultLibraries.layer,
    // with DOCS_REFRESH_INTERVAL: the scheduled refresh of git and npm sources, one pass per database
    Refresher.layer.pipe(Layer.provide([RefreshStore.layer, NodeServices.layer]))
  )
).pipe(Layer.provide(SettingsChecked), Layer.provide(ServicesLive))
