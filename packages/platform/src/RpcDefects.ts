/**
 * The implementation of `RpcDefects` (declared in @svc/schema on every internal RPC group): a
 * procedure's defect is logged here in full, with the procedure's name, and the client gets only
 * `RPC_DEFECT_MESSAGE`. The RPC server itself logs nothing and would send the defect's message and
 * cause, so this is where a database failure inside an RPC stops.
 */
import { DATABASE_UNAVAILABLE_MESSAGE, RPC_DEFECT_MESSAGE, RpcDefects, ServiceUnavailable } from "@svc/schema"
import { Cause, Effect, Layer } from "effect"
import { isDatabaseUnavailable } from "./DatabaseUnavailable.ts"

export const layer = Layer.succeed(
  RpcDefects,
  RpcDefects.of((effect, { rpc }) =>
    Effect.catchCause(effect, (cause) => {
      if (!Cause.hasDies(cause)) return Effect.failCause(cause)
      const unavailable = cause.reasons.some((reason) => reason._tag === "Die" && isDatabaseUnavailable(reason.defect))
      return Effect.logError(`RPC ${rpc._tag} failed`, cause).pipe(
        Effect.andThen(
          unavailable
            ? Effect.fail(new ServiceUnavailable({ message: DATABASE_UNAVAILABLE_MESSAGE }))
            : Effect.die(new Error(RPC_DEFECT_MESSAGE))
        )
      )
    })
  )
)
