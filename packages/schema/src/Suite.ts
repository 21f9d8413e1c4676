/**
 * The suite's own status API, served by `svc start all` (one process running every landed service):
 * one liveness probe for the process, its readiness (every service's own) and the list of services it
 * runs. Its document (`suiteOpenApi`) lists every route of the status server: `SuiteApi`'s, and
 * `GET /ready` and `GET /openapi.json`, which it serves by hand (`SuiteRawRoutesApi`,
 * `OpenApiDocument.ts`'s rule).
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ApiConventions } from "./Errors.ts"
import { HealthGroup } from "./Health.ts"
import { DocumentGroup, openApiDocument } from "./OpenApiDocument.ts"

export const RunningService = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  /** The port it listens on, as configured (`LISTINGS_PORT`, …). */
  port: Schema.optional(Schema.Int)
}).annotate({ identifier: "RunningService" })

export const RunningServices = Schema.Struct({ services: Schema.Array(RunningService) })

export class SuiteGroup extends HttpApiGroup.make("suite").add(
  HttpApiEndpoint.get("services", "/services", { success: RunningServices })
) {}

export class SuiteApi extends HttpApi.make("suite")
  .add(HealthGroup)
  .add(SuiteGroup)
  .annotateMerge(ApiConventions)
  .annotateMerge(OpenApi.annotations({
    title: "svc status",
    description: "The status server of `svc start all`: the process's liveness and the services it runs."
  }))
{}

/** A service's state in the status server's `/ready`: its own `/ready` status, or `unreachable`. */
const ServiceState = Schema.String.annotate({
  description: "The service's own `/ready` status (`ready`, `degraded`, `unavailable`, `stopping`), or `unreachable` when it does not answer in 10 s"
})

/** `GET /ready` of the status server when every service is ready or degraded (200). */
export const SuiteReadiness = Schema.Struct({
  status: Schema.Literals(["ready", "degraded"]),
  services: Schema.Record(Schema.String, ServiceState)
}).annotate({ identifier: "SuiteReadiness", description: "Every service's own readiness, asked over loopback at once" })

/** `GET /ready` of the status server when a service is not (503, `Retry-After: 5`). */
export const SuiteNotReady = Schema.Struct({
  code: Schema.Literal("service_unavailable"),
  message: Schema.String,
  status: Schema.Literal("unavailable"),
  services: Schema.Record(Schema.String, ServiceState)
}).annotate({
  identifier: "SuiteNotReady",
  description: "A service is not ready or does not answer: named in `message` (Retry-After: 5)",
  httpApiStatus: 503
})

export class SuiteReadinessGroup extends HttpApiGroup.make("readiness").add(
  HttpApiEndpoint.get("ready", "/ready", { success: SuiteReadiness, error: SuiteNotReady })
) {}

/** Only for the status server's OpenAPI document: the routes it serves outside `SuiteApi`. */
export const SuiteRawRoutesApi = HttpApi.make("suiteRawRoutes")
  .add(SuiteReadinessGroup)
  .add(DocumentGroup)

/** The status server's document: `SuiteApi`'s with the routes of {@link SuiteRawRoutesApi} merged in. */
export const suiteOpenApi = (): OpenApi.OpenAPISpec => openApiDocument(SuiteApi, SuiteRawRoutesApi)
