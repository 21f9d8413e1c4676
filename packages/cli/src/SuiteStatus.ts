/** The status server of `svc start all`: `GET /health` and `GET /services` on `SVC_PORT` (8786). */
import { serveApi } from "@svc/platform"
import { SuiteApi } from "@svc/schema"
import { Config, Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import type { SuiteService } from "./Services.ts"

/** Its port's setting and variable. */
export const Server = { port: Config.Port("SVC_PORT").pipe(Config.withDefault(8786)), portVariable: "SVC_PORT" }

export const layer = (services: ReadonlyArray<Pick<SuiteService, "name" | "description">>) =>
  serveApi({
    name: "suite",
    api: SuiteApi,
    ...Server,
    openapi: true,
    handlers: Layer.mergeAll(
      HttpApiBuilder.group(SuiteApi, "health", (handlers) => handlers.handle("health", () => Effect.succeed({ status: "ok" as const }))),
      HttpApiBuilder.group(SuiteApi, "suite", (handlers) =>
        handlers.handle("services", () =>
          Effect.succeed({ services: services.map(({ name, description }) => ({ name, description })) })))
    )
  })
