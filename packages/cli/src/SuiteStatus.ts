/**
 * The status server of `svc start all`: `GET /health`, `GET /ready`, `GET /services` and
 * `GET /openapi.json` on `SVC_PORT` (8786).
 */
import { apiRoutes, Host, openApiRoute, Readiness, serve } from "@svc/platform"
import { SuiteApi, suiteOpenApi } from "@svc/schema"
import { Config, Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import type { SuiteService } from "./Services.ts"

/** Its port's setting and variable. */
export const Server = { port: Config.Port("SVC_PORT").pipe(Config.withDefault(8786)), portVariable: "SVC_PORT" }

/** What the status server knows of a service: `port` (its setting) lets `/ready` ask the service's own. */
export type StatusService = Pick<SuiteService, "name" | "description"> & { readonly port?: Config.Config<number> | undefined }

/** How long the status server waits for a service's `/ready` (its probes take at most PROBE_TIMEOUT). */
const SERVICE_READY_TIMEOUT_MS = 10_000

/** Where this process's own servers are reached: HOST, or loopback when HOST is every interface. */
const ownHost = (host: string): string =>
  host === "" || host === "0.0.0.0" ? "127.0.0.1" : host === "::" ? "[::1]" : host.includes(":") ? `[${host}]` : host

/**
 * `GET /ready` of the whole process: every service's own `/ready`, asked over loopback at once. 200
 * `{"status":"ready"|"degraded","services":{"listings":"ready",…}}` when each is ready or degraded; else
 * 503 naming the services that are not (`unavailable`, `stopping`, or `unreachable` when one does not
 * answer in time).
 */
const readyRoute = (services: ReadonlyArray<StatusService>) =>
  Layer.unwrap(Effect.gen(function*() {
    const host = ownHost(yield* Host)
    const targets = yield* Effect.forEach(
      services.flatMap((service) => service.port === undefined ? [] : [{ name: service.name, port: service.port }]),
      ({ name, port }) => Effect.map(port, (port) => ({ name, url: `http://${host}:${port}/ready` }))
    )
    const ask = (url: string) =>
      Effect.tryPromise(async (signal) => {
        const response = await fetch(url, { signal: AbortSignal.any([signal, AbortSignal.timeout(SERVICE_READY_TIMEOUT_MS)]) })
        const body = await response.json() as { readonly status?: unknown }
        return typeof body.status === "string" ? body.status : "unreachable"
      }).pipe(Effect.orElseSucceed(() => "unreachable"))
    return HttpRouter.add(
      "GET",
      "/ready",
      Effect.gen(function*() {
        const states = yield* Effect.forEach(targets, ({ name, url }) => Effect.map(ask(url), (state) => [name, state] as const), {
          concurrency: "unbounded"
        })
        const missing = states.filter(([, state]) => state !== "ready" && state !== "degraded").map(([name]) => name)
        const status = missing.length > 0 ? "unavailable" : states.some(([, state]) => state === "degraded") ? "degraded" : "ready"
        const body = { status, services: Object.fromEntries(states) }
        return missing.length > 0
          ? HttpServerResponse.jsonUnsafe(
            { code: "service_unavailable", message: `Not ready: ${missing.join(", ")}`, ...body },
            { status: 503, headers: { "retry-after": String(Readiness.RETRY_AFTER_SECONDS) } }
          )
          : HttpServerResponse.jsonUnsafe(body)
      })
    )
  }))

/**
 * Every route of the status server: `SuiteApi`'s (`/health`, `/services`), `GET /ready` and
 * `GET /openapi.json`, whose document (`suiteOpenApi` in @svc/schema) lists each of them
 * (`test/suiteOpenApi.test.ts` compares the two).
 */
export const routes = (services: ReadonlyArray<StatusService>) =>
  Layer.mergeAll(
    apiRoutes({
      api: SuiteApi,
      handlers: Layer.mergeAll(
        HttpApiBuilder.group(
          SuiteApi,
          "health",
          (handlers) => handlers.handle("health", () => Effect.succeed({ status: "ok" as const }))
        ),
        HttpApiBuilder.group(SuiteApi, "suite", (handlers) =>
          handlers.handle("services", () =>
            Effect.map(
              Effect.forEach(services, ({ description, name, port }) =>
                port === undefined
                  ? Effect.succeed({ name, description })
                  // the port configured, not the default: read as the service read it at its start
                  : Effect.map(Effect.orDie(port), (port) => ({ name, description, port }))),
              (services) => ({ services })
            )))
      )
    }),
    openApiRoute(suiteOpenApi),
    readyRoute(services)
  )

/**
 * The status server. It listens at once, beside the services (a taken `SVC_PORT` fails the start at
 * once, as any service's taken port does), and attaches its routes only once `whenRunning` is done
 * (every service built): until then every request is answered 503 `The server is starting or
 * stopping` with `Retry-After: 1` (platform `serve`), so `/health` answering 200 means every service
 * listens. With its routes at once, it answered ~10 s before listings and uploads (which wait for
 * their object storage), and a newcomer's next curl was refused.
 */
export const layer = (
  services: ReadonlyArray<StatusService>,
  whenRunning: Effect.Effect<void> = Effect.void
) =>
  serve(
    Layer.flatMap(Layer.effectDiscard(whenRunning), () =>
      routes(services).pipe(
        Layer.tap(() => Effect.logInfo(`Every service is up: ${services.map(({ name }) => name).join(", ")}`))
      )),
    { name: "suite", ...Server }
  )
