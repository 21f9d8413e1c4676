/** The status server of `svc start all`: `GET /health` and `GET /services` on `SVC_PORT` (8786). */
import { serveApi } from "@svc/platform"
import { SuiteApi } from "@svc/schema"
import { Config, Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import type { SuiteService } from "./Services.ts"

/** Its port's setting and variable. */
export const Server = { port: Config.Port("SVC_PORT").pipe(Config.withDefault(8786)), portVariable: "SVC_PORT" }

/**
 * The status server. It listens at once, beside the services (a taken `SVC_PORT` fails the start at
 * once, as any service's taken port does), and attaches its routes only once `whenRunning` is done
 * (every service built): until then every request is answered 503 `The server is starting or
 * stopping` with `Retry-After: 1` (platform `serve`), so `/health` answering 200 means every service
 * listens. With its routes at once, it answered ~10 s before listings and uploads (which wait for
 * their object storage), and a newcomer's next curl was refused.
 */
export const layer = (
  services: ReadonlyArray<Pick<SuiteService, "name" | "description">>,
  whenRunning: Effect.Effect<void> = Effect.void
) =>
  serveApi({
    name: "suite",
    api: SuiteApi,
    ...Server,
    openapi: true,
    handlers: Layer.flatMap(Layer.effectDiscard(whenRunning), () =>
      Layer.mergeAll(
        HttpApiBuilder.group(SuiteApi, "health", (handlers) => handlers.handle("health", () => Effect.succeed({ status: "ok" as const }))),
        HttpApiBuilder.group(SuiteApi, "suite", (handlers) =>
          handlers.handle("services", () =>
            Effect.succeed({ services: services.map(({ name, description }) => ({ name, description })) })))
      ).pipe(
        Layer.tap(() => Effect.logInfo(`Every service is up: ${services.map(({ name }) => name).join(", ")}`))
      ))
  })
