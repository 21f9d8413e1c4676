/**
 * The implementation of `RpcDefects` (declared in @svc/schema on every internal RPC group): a
 * procedure's defect is logged here in full, with the procedure's name, and the client gets only
 * `RPC_DEFECT_MESSAGE`. The RPC server itself logs nothing and would send the defect's message and
 * cause, so this is where a database failure inside an RPC stops.
 */
import { RPC_DEFECT_MESSAGE, RpcDefects } from "@svc/schema"
import { Cause, Effect, Layer } from "effect"

export const layer = Layer.succeed(
  RpcDefects,
  RpcDefects.of((effect, { rpc }) =>
    Effect.catchCause(effect, (cause) => {
      if (!Cause.hasDies(cause)) return Effect.failCause(cause)
      return Effect.logError(`RPC ${rpc._tag} failed`, cause).pipe(
        Effect.andThen(Effect.die(new Error(RPC_DEFECT_MESSAGE)))
      )
    })
  )
)
