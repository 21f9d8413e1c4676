/**
 * Whether a statement failed because the database cannot take work now, not because of the request
 * or the code — what a client should retry later (a 503 with `Retry-After`), never a 500:
 *
 * - it cannot be reached: stopped, restarting, the network (`ConnectionError`, SQLSTATE class 08);
 * - it answers but refuses: class 53, insufficient resources (53100 disk full, 53200 out of memory,
 *   53300 too many connections); 57P01-57P05, shutting down, crashed, starting up or in recovery
 *   ("the database system is in recovery mode" while a session's crash is cleaned up); class 58, an
 *   I/O error of the server.
 *
 * The driver classifies only some codes; these arrive as `UnknownError`s whose cause carries the
 * SQLSTATE as `code` (an outside sweep: killing one Postgres session turned 11 of 300 requests into
 * 500s, a full disk every request).
 */
import { SqlError } from "effect/sql"

const UNAVAILABLE_SQLSTATE = /^(08|53|57P|58)/

const sqlstateOf = (cause: unknown): string | undefined =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string" ? cause.code : undefined

export const isDatabaseUnavailable = (error: unknown): boolean =>
  SqlError.isSqlError(error) &&
  (error.reason._tag === "ConnectionError" || UNAVAILABLE_SQLSTATE.test(sqlstateOf(error.reason.cause) ?? ""))
