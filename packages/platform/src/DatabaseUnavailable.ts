/**
 * Whether a statement failed because the database cannot take work now, not because of the request
 * or the code — what a client should retry later (a 503 with `Retry-After`), never a 500:
 *
 * - it cannot be reached: stopped, restarting, the network (the driver's `ConnectionError`);
 * - it answers but refuses: out of disk, memory or connections (53100, 53200, 53300, and 53000 in
 *   general); shutting down, crashed, starting up or in recovery (57P01, 57P02, 57P03, 57P05 — "the
 *   database system is in recovery mode" while a killed session's crash is cleaned up); an I/O error
 *   of the server (58000, 58030); a connection failure (08000, 08001, 08003, 08004, 08006).
 *
 * Codes of the same classes that belong to one request or a bug stay 500s: a protocol violation
 * (08P01), a query over `temp_file_limit` (53400), a dropped database (57P04), a missing file (58P01).
 * The driver classifies only some codes; the others arrive as `UnknownError`s whose cause carries the
 * SQLSTATE (an outside sweep: killing one Postgres session turned 11 of 300 requests into 500s, a full
 * disk every request).
 */
import { SqlError } from "effect/sql"
import { sqlState } from "./PostgresReady.ts"

const UNAVAILABLE = new Set([
  "08000", "08001", "08003", "08004", "08006",
  "53000", "53100", "53200", "53300",
  "57P01", "57P02", "57P03", "57P05",
  "58000", "58030"
])

export const isDatabaseUnavailable = (error: unknown): boolean =>
  SqlError.isSqlError(error) && (
    // the driver files every 08 code under ConnectionError, a protocol violation (a bug) too
    (error.reason._tag === "ConnectionError" && sqlState(error) !== "08P01") || UNAVAILABLE.has(sqlState(error) ?? "")
  )
