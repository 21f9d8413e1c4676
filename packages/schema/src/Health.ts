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
