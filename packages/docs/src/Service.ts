/**
 * The docs service assembled: REST API v2 (and /openapi.json) on `DOCS_PORT` (default 8789). Needs only
 * the database (`Database | PgClient | SqlClient`), so `svc start` can run it next to other services.
 * Indexing runs from the `svc docs` commands against the same database.
 */
import { apiRoutes, serve } from "@svc/platform"
import { DocsApi } from "@svc/schema"
import { Config, Layer } from "effect"
import { ApiHandlers } from "./http.ts"
import { Search } from "./Search.ts"

export const ServicesLive = Search.layer

/** Every route of the service. */
export const routes = apiRoutes({ api: DocsApi, handlers: ApiHandlers, openapi: true })

export const Port = Config.Port("DOCS_PORT").pipe(Config.withDefault(8789))

/** The HTTP server. */
export const layer = serve(routes, { name: "docs-api", port: Port }).pipe(Layer.provide(ServicesLive))
