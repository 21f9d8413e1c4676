/**
 * Readiness: `GET /ready` on every server of the suite, beside the liveness `GET /health`.
 *
 * `/health` answers `{"status":"ok"}` while the process serves requests (spec/1's liveness record), a
 * database outage included: restarting the process would not bring Postgres back. `/ready` says whether
 * the service can do its work now, probing the dependencies it needs (each probe bounded by
 * {@link PROBE_TIMEOUT}, all at once), so a load balancer or Kubernetes stops sending it traffic:
 *
 * - 200 `{"status":"ready","checks":{"database":"up"}}`;
 * - 200 `{"status":"degraded","checks":{"database":"up","objectStorage":"down"}}` when only a dependency
 *   the service can do without is down (listings without its image cache: offers still answer);
 * - 503 `{"code":"service_unavailable","message":"Not ready: database unavailable","status":"unavailable",
 *   "checks":{"database":"down"}}` with `Retry-After: 5` when a dependency it needs is down;
 * - 503 `{"code":"service_unavailable",…,"status":"stopping"}` once shutdown has begun (Http.ts answers
 *   that for every server, and `{"status":"ready","checks":{}}` for one without dependencies).
 *
 * A probe's failure is never shown (it may hold an address or a user name): the check is `down`, and
 * the cause goes to the log at debug level.
 */
import { Duration, Effect, Exit, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"

/** How long one probe may take before its dependency counts as down. */
export const PROBE_TIMEOUT = Duration.seconds(3)

/** The `Retry-After` of a 503 from `/ready`. */
export const RETRY_AFTER_SECONDS = 5

/** A dependency and how to tell it is there. */
export interface Check {
  /** Its name in `checks` (`database`, `objectStorage`). */
  readonly name: string
  /** Succeeds when the dependency answers. */
  readonly probe: Effect.Effect<unknown, unknown>
  /** false: the service still does most of its work without it (`degraded`, 200). Default true. */
  readonly required?: boolean | undefined
}

export type CheckState = "up" | "down"

export interface Report {
  readonly status: "ready" | "degraded" | "unavailable"
  readonly checks: Record<string, CheckState>
  /** The required checks that are down. */
  readonly missing: ReadonlyArray<string>
}

/** Runs every probe at once, each bounded by {@link PROBE_TIMEOUT}. */
export const run = (checks: ReadonlyArray<Check>): Effect.Effect<Report> =>
  Effect.forEach(checks, (check) =>
    check.probe.pipe(
      Effect.timeout(PROBE_TIMEOUT),
      Effect.exit,
      Effect.tap((exit) =>
        Exit.isFailure(exit) ? Effect.logDebug(`Readiness: ${check.name} is down`, exit.cause) : Effect.void
      ),
      Effect.map((exit) => ({ check, state: Exit.isSuccess(exit) ? "up" as const : "down" as const }))
    ), { concurrency: "unbounded" }).pipe(
      Effect.map((results): Report => {
        const missing = results.filter(({ check, state }) => state === "down" && check.required !== false).map(({ check }) => check.name)
        return {
          status: missing.length > 0 ? "unavailable" : results.some(({ state }) => state === "down") ? "degraded" : "ready",
          checks: Object.fromEntries(results.map(({ check, state }) => [check.name, state])),
          missing
        }
      })
    )

/** The answer of `/ready` for a report. */
export const response = (report: Report): HttpServerResponse.HttpServerResponse =>
  report.status === "unavailable"
    ? HttpServerResponse.jsonUnsafe({
      code: "service_unavailable",
      message: `Not ready: ${report.missing.join(", ")} unavailable`,
      status: report.status,
      checks: report.checks
    }, { status: 503, headers: { "retry-after": String(RETRY_AFTER_SECONDS) } })
    : HttpServerResponse.jsonUnsafe({ status: report.status, checks: report.checks })

/** The answer of `/ready` once shutdown has begun. */
export const stopping = (): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.jsonUnsafe({
    code: "service_unavailable",
    message: "The server is shutting down",
    status: "stopping"
  }, { status: 503, headers: { "retry-after": "1" } })

/**
 * The `GET /ready` route (HEAD too) of a service, its checks made once when the routes are built:
 * `Readiness.route(Effect.all([Readiness.database]))`.
 */
export const route = <E, R>(checks: Effect.Effect<ReadonlyArray<Check>, E, R>) =>
  Layer.unwrap(Effect.map(checks, (made) => HttpRouter.add("GET", "/ready", Effect.map(run(made), response))))

/** The database: a `SELECT 1` on the pool. */
export const database: Effect.Effect<Check, never, SqlClient.SqlClient> = Effect.map(SqlClient.SqlClient, (sql) => ({
  name: "database",
  probe: sql`SELECT 1`
}))
