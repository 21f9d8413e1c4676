/**
 * Every internal RPC group carries this middleware: a defect in a procedure (a database failure, a
 * bug) is logged in full on the server and reaches the client only as "internal error", like a 500
 * `internal_error` of the HTTP APIs. Without it the RPC server would send the defect's message and
 * cause (a Postgres error's text, say) to the caller. The implementation is `RpcDefects.layer` in
 * `@svc/platform`.
 */
import { RpcMiddleware } from "effect/rpc"
import { ServiceUnavailable } from "./Errors.ts"

/**
 * A database that cannot be reached or cannot take work now is not a defect to the caller: it fails
 * the procedure with `ServiceUnavailable` (typed, as the HTTP APIs answer it 503), which every
 * procedure may therefore fail with.
 */
export class RpcDefects extends RpcMiddleware.Service<RpcDefects>()("@svc/schema/RpcDefects", { error: ServiceUnavailable }) {}

/** What a caller is told when the database is unavailable, over HTTP (503) and RPC alike. */
export const DATABASE_UNAVAILABLE_MESSAGE = "The database is unavailable: try again shortly"

/** The one message a client sees for a defect. */
export const RPC_DEFECT_MESSAGE = "internal error: the server logged the details"
