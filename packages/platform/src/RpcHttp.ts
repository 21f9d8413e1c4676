/**
 * The HTTP effect of an internal RPC server (`POST /rpc`, NDJSON), the same for every service.
 *
 * Its answers are buffered without a bound. effect's server writes the answer to a request it cannot
 * decode while it is still reading the body, into a queue of 16 that nothing drains before the whole
 * body is read: a body holding 17 such requests never got an answer, and its connection stayed open
 * (an outside sweep, on all three services). The body is bounded (the server's body limit) and every
 * caller holds the admin token, so what the buffer holds is bounded by what that caller sent, plus the
 * progress events of a streamed procedure its caller reads slowly.
 */
import type { Rpc, RpcGroup } from "effect/rpc"
import { RpcServer } from "effect/rpc"

export const rpcHttpEffect = <Rpcs extends Rpc.Any>(group: RpcGroup.RpcGroup<Rpcs>) =>
  RpcServer.toHttpEffect(group, { streamBufferSize: "unbounded" })
