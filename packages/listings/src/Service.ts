/**
 * The listings service assembled: HTTP (the API, /images, /rpc, /openapi.json) on `LISTINGS_PORT`
 * (default 8787) and the ingest scheduler, sharing one set of services. Needs only the database
 * (`Database | PgClient | SqlClient`), so `svc start` can run it next to other services.
 */
import { apiRoutes, Readiness, serve, withBackground } from "@svc/platform"
import { ListingsApi } from "@svc/schema"
import { Config, Effect, Layer } from "effect"
import type { HttpClient } from "effect/http"
import { ApiHandlers, ImagesRoute, OpenApiRoute } from "./http.ts"
import { ImageCacher, ImageStore } from "./Images.ts"
import { ImportServices } from "./ImportServices.ts"
import { Ingest, IngestOnStart, IngestScheduler } from "./Ingest.ts"
import { IngestRuns } from "./IngestRuns.ts"
import { Leases } from "./Leases.ts"
import { GuardedHttpClient, ListingsConfig } from "./ListingsConfig.ts"
import { OfferStore } from "./OfferStore.ts"
import { Offers } from "./Offers.ts"
import { RpcRoute } from "./rpc.ts"
import { SourceHealthLookup } from "./SourceHealth.ts"
import { Sources } from "./Sources.ts"

export { GuardedHttpClient }

/** The services behind the routes, given the configuration layers (config, sources, image store). */
export const makeServices = <E, R>(
  deps: Layer.Layer<ListingsConfig | Sources | ImageStore, E, R>,
  cacher: Layer.Layer<ImageCacher, Config.ConfigError, any> = ImageCacher.layer,
  httpClient: Layer.Layer<HttpClient.HttpClient, never, ListingsConfig> = GuardedHttpClient
) =>
  Layer.mergeAll(Offers.layer, SourceHealthLookup.layer, ImportServices.layer, Ingest.layerNoDeps).pipe(
    Layer.provideMerge(Layer.mergeAll(OfferStore.layer, Leases.layer, IngestRuns.layer)),
    Layer.provideMerge(cacher as typeof ImageCacher.layer),
    Layer.provide(httpClient),
    Layer.provideMerge(deps)
  )

/**
 * Every route of the service but `/ready` (which needs the database at build). Each is in the
 * OpenAPI document: `ListingsApi`'s by construction, the others listed in `ListingsOpenApi.ts`
 * (@svc/schema); `test/openapi.test.ts` compares {@link served} with the document.
 */
export const routes = Layer.mergeAll(
  apiRoutes({ api: ListingsApi, handlers: ApiHandlers }),
  ImagesRoute,
  RpcRoute,
  OpenApiRoute
)

/**
 * Every setting of the service that reads no storage, read at once: `svc start` reads them before it
 * starts the database, so that a bad one stops the start in a moment and makes no data folder (the
 * embedded cluster was created and migrated first). The layers below read them again.
 */
export const SettingsChecked = Layer.mergeAll(
  ListingsConfig.layer,
  Sources.layer,
  Layer.effectDiscard(Effect.all([ImageCacher.settings, IngestOnStart]))
)

/** The configuration layers from the environment. */
export const ConfigLive = Layer.mergeAll(Sources.layer, ImageStore.layerConfig).pipe(
  Layer.provideMerge(ListingsConfig.layer)
)

export const ServicesLive = makeServices(ConfigLive)

export const Port = Config.Port("LISTINGS_PORT").pipe(Config.withDefault(8787))

/**
 * `GET /ready`: the database (required) and, when images are cached, the object storage (not
 * required: without it offers, sources and uncached images still answer, so `degraded`, 200).
 */
export const ReadyRoute = Readiness.route(Effect.gen(function*() {
  const database = yield* Readiness.database
  const images = yield* ImageStore
  return images.probe === undefined ? [database] : [database, { name: "objectStorage", probe: images.probe, required: false }]
}))

/** What the server serves: every route. */
export const served = Layer.merge(routes, ReadyRoute)

/** HTTP server and scheduler. */
export const layer = withBackground(
  serve(served, { name: "listings", port: Port, portVariable: "LISTINGS_PORT" }),
  IngestScheduler
).pipe(
  Layer.provide(ServicesLive)
)
