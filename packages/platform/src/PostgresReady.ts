/**
 * "Ready" for a Postgres server means a query answers, not that its port accepts a TCP connection:
 * a postmaster listens before its startup process has finished, and meanwhile refuses every session
 * with SQLSTATE 57P03 (`cannot_connect_now`: "the database system is starting up", also "… is
 * shutting down", "… in recovery mode", "… not yet accepting connections"). Those refusals pass, so
 * they are retried on a bounded `Schedule`; any other failure (a wrong password, no such database)
 * is final at once.
 */
import { PgClient } from "@effect/sql-pg"
import { Duration, Effect, type Redacted, Schedule } from "effect"
import { SqlClient } from "effect/sql"

/** The SQLSTATE Postgres gave for a failed statement or session, if it gave one. */
export const sqlState = (error: unknown): string | undefined => {
  for (let cause = error, depth = 0; cause !== null && typeof cause === "object" && depth < 8; depth++) {
    // Postgres' own error fields carry a severity; Node's socket errors (code "EPIPE") do not.
    if ("severity" in cause && "code" in cause && typeof cause.code === "string") return cause.code
    cause = "reason" in cause ? cause.reason : "cause" in cause ? cause.cause : undefined
  }
  return undefined
}

/** The error code of a failed socket (`ECONNREFUSED`, …), if the failure was one. */
export const socketErrorCode = (error: unknown): string | undefined => {
  for (let cause = error, depth = 0; cause !== null && typeof cause === "object" && depth < 8; depth++) {
    if ("code" in cause && typeof cause.code === "string" && cause.code.startsWith("E") && !("severity" in cause)) {
      return cause.code
    }
    cause = "reason" in cause ? cause.reason : "cause" in cause ? cause.cause : undefined
  }
  return undefined
}

/**
 * The server's own words for a failed statement or session ("relation "x" does not exist", "the
 * database system is starting up"), without the statement text: `SqlError.message` only says "Query
 * failed", the Postgres error sits below it.
 */
export const postgresReason = (error: unknown): string => {
  for (let cause = error, depth = 0; cause !== null && typeof cause === "object" && depth < 8; depth++) {
    if ("severity" in cause && "message" in cause) return String(cause.message)
    if (!("reason" in cause) && !("cause" in cause) && "code" in cause && "message" in cause) return String(cause.message)
    cause = "reason" in cause ? cause.reason : "cause" in cause ? cause.cause : undefined
  }
  return error instanceof Error ? error.message : String(error)
}

/** SQLSTATE 57P03: the server is starting up (or shutting down, or recovering) and takes no sessions yet. */
export const isStartingUp = (error: unknown): boolean => sqlState(error) === "57P03"

export interface AwaitReadyOptions {
  /** How long start-up refusals are retried (default 60 seconds). */
  readonly within?: Duration.Input | undefined
  /** Also retry a refused TCP connection (a server we just spawned, not yet listening). */
  readonly retryRefused?: boolean | undefined
  /** Checked before each retry: false stops retrying (e.g. the spawned server has exited). */
  readonly keepTrying?: (() => boolean) | undefined
}

/** One `SELECT 1` on a connection of its own. */
export const ping = (url: Redacted.Redacted<string>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`SELECT 1`
  }).pipe(
    Effect.provide(PgClient.layer({ url, maxConnections: 1, applicationName: "svc-ready" })),
    Effect.scoped
  )

/**
 * Succeeds once a query answers on `url`. Start-up refusals (57P03), and with `retryRefused` a refused
 * connection, are retried every 100 ms for at most `within`; then, or for any other failure, the
 * last error is returned.
 */
export const awaitReady = (url: Redacted.Redacted<string>, options: AwaitReadyOptions = {}) =>
  ping(url).pipe(
    Effect.retry({
      schedule: Schedule.spaced("100 millis").pipe(
        Schedule.upTo({ duration: options.within ?? Duration.seconds(60) })
      ),
      while: (error) =>
        (options.keepTrying?.() ?? true) &&
        (isStartingUp(error) || (options.retryRefused === true && socketErrorCode(error) === "ECONNREFUSED"))
    }),
    Effect.withSpan("Postgres.awaitReady")
  )
