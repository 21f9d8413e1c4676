/**
 * The suite's own status API, served by `svc start all` (one process running every landed service):
 * one liveness probe for the process and the list of services it runs.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ApiConventions } from "./Errors.ts"
import { HealthGroup } from "./Health.ts"

export const RunningService = Schema.Struct({
  name: Schema.String,
  description: Schema.String
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
