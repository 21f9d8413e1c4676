/**
 * The liveness record every service answers at `GET /health` (spec/1 "Liveness record"), as an
 * `HttpApiGroup` a service's `HttpApi` adds so the route and its shape are in its OpenAPI document.
 * (The HTTP bootstrap answers `/health` the same way for a service that does not add the group.)
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"

export const Liveness = Schema.Struct({
  status: Schema.Literal("ok")
}).annotate({ identifier: "Liveness", description: "Constant `ok` while the process serves requests" })
export type Liveness = typeof Liveness.Type

export class HealthGroup extends HttpApiGroup.make("health").add(
  HttpApiEndpoint.get("health", "/health", { success: Liveness })
) {}

/** A dependency's state in a readiness answer. */
export const CheckState = Schema.Literals(["up", "down"]).annotate({ identifier: "CheckState" })

/** `GET /ready` when the service can do its work (200). */
export const ReadinessRecord = Schema.Struct({
  status: Schema.Literals(["ready", "degraded"]).annotate({
    description: "`degraded`: a dependency the service can do without is down (listings: the image cache's object storage)"
  }),
  checks: Schema.Record(Schema.String, CheckState).annotate({ description: "Each dependency probed (`database`, `objectStorage`), at most 3 s each" })
}).annotate({ identifier: "Readiness", description: "Whether the service can do its work now" })

/** `GET /ready` when it cannot (503, `Retry-After`): a dependency it needs is down, or shutdown has begun. */
export const NotReady = Schema.Struct({
  code: Schema.Literal("service_unavailable"),
  message: Schema.String,
  status: Schema.Literals(["unavailable", "stopping"]),
  checks: Schema.optionalKey(Schema.Record(Schema.String, CheckState))
}).annotate({
  identifier: "NotReady",
  description: "Not ready: a dependency the service needs is down (`unavailable`, Retry-After: 5) or it is shutting down (`stopping`, Retry-After: 1)",
  httpApiStatus: 503
})

/**
 * `GET /ready` (HEAD too) for an OpenAPI document. Every server of the suite answers it (platform
 * `Readiness.ts`); a service that serves its own route (`Readiness.route`) documents it by adding
 * this group to its document-only `HttpApi` (`OpenApiDocument.ts`), as listings, the queue and
 * docs-api do (an `HttpApi` it implements would route `/ready` a second time).
 */
export class ReadinessGroup extends HttpApiGroup.make("readiness").add(
  HttpApiEndpoint.get("ready", "/ready", { success: ReadinessRecord, error: NotReady })
) {}
