/**
 * Every internal RPC group carries this middleware: a defect in a procedure (a database failure, a
 * bug) is logged in full on the server and reaches the client only as "internal error", like a 500
 * `internal_error` of the HTTP APIs. Without it the RPC server would send the defect's message and
 * cause (a Postgres error's text, say) to the caller. The implementation is `RpcDefects.layer` in
 * `@svc/platform`.
 */
import { RpcMiddleware } from "effect/rpc"

export class RpcDefects extends RpcMiddleware.Service<RpcDefects>()("@svc/schema/RpcDefects") {}

/** The one message a client sees for a defect. */
export const RPC_DEFECT_MESSAGE = "internal error: the server logged the details"
