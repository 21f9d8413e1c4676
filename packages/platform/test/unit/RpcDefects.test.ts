import { assert, describe, it } from "@effect/vitest"
import { DATABASE_UNAVAILABLE_MESSAGE, RPC_DEFECT_MESSAGE, RpcDefects as RpcDefectsTag } from "@svc/schema"
import { Cause, Effect, Exit, Layer, Logger, Schema, Stream } from "effect"
import { Rpc, RpcGroup, RpcTest } from "effect/rpc"
import { RpcDefects } from "../../src/index.ts"
import { databaseDown } from "../../src/testing/databaseDown.ts"

class NotFound extends Schema.TaggedError<NotFound>()("NotFound", { id: Schema.String }) {}

const Group = RpcGroup.make(
  Rpc.make("Get", { payload: { id: Schema.String }, success: Schema.String, error: NotFound }),
  Rpc.make("Follow", { success: Schema.Number, stream: true }),
  Rpc.make("Down", { success: Schema.String })
).middleware(RpcDefectsTag)

const secret = 'relation "queue.secret_table" does not exist: SELECT password FROM queue.secret_table'

const Handlers = Group.toLayer({
  Get: ({ id }) => id === "missing" ? Effect.fail(new NotFound({ id })) : Effect.die(new Error(secret)),
  Follow: () => Stream.concat(Stream.make(1, 2), Stream.die(new Error(secret))),
  // what a store dies with when Postgres is stopped (atDatabaseBoundary makes it a defect)
  Down: () => Effect.die(databaseDown())
})

const logged: Array<string> = []
const Capture = Logger.layer([Logger.make((options) => logged.push(Cause.pretty(options.cause)))])

const client = RpcTest.makeClient(Group)
const run = <A, E>(use: (rpc: Effect.Success<typeof client>) => Effect.Effect<A, E>) =>
  Effect.scoped(Effect.flatMap(client, use)).pipe(Effect.provide(Layer.mergeAll(Handlers, RpcDefects.layer, Capture)))

describe("RpcDefects", () => {
  it.effect("a defect reaches the client as the fixed message and is logged in full on the server", () =>
    Effect.gen(function*() {
      logged.length = 0
      const exit = yield* run((rpc) => Effect.exit(rpc.Get({ id: "x" })))
      assert.isTrue(Exit.isFailure(exit))
      const text = Exit.isFailure(exit) ? Cause.pretty(exit.cause) : ""
      assert.include(text, RPC_DEFECT_MESSAGE)
      assert.notInclude(text, "secret_table")
      assert.isTrue(logged.some((line) => line.includes("secret_table")))
    }))

  it.effect("a database that cannot be reached is a typed ServiceUnavailable, not an internal error; the cause is logged", () =>
    Effect.gen(function*() {
      logged.length = 0
      const error = yield* run((rpc) => Effect.flip(rpc.Down()))
      assert.strictEqual(error._tag, "ServiceUnavailable")
      assert.strictEqual(error.message, DATABASE_UNAVAILABLE_MESSAGE)
      assert.isTrue(logged.some((line) => line.includes("ECONNREFUSED")))
    }))

  it.effect("a typed failure passes unchanged", () =>
    Effect.gen(function*() {
      const error = yield* run((rpc) => Effect.flip(rpc.Get({ id: "missing" })))
      assert.deepStrictEqual(error, new NotFound({ id: "missing" }))
    }))

  it.effect("a stream that dies midway: the items sent stay, the defect is the fixed message", () =>
    Effect.gen(function*() {
      logged.length = 0
      const items: Array<number> = []
      const exit = yield* run((rpc) => Effect.exit(Stream.runForEach(rpc.Follow(), (n) => Effect.sync(() => items.push(n)))))
      assert.deepStrictEqual(items, [1, 2])
      const text = Exit.isFailure(exit) ? Cause.pretty(exit.cause) : ""
      assert.include(text, RPC_DEFECT_MESSAGE)
      assert.notInclude(text, "secret_table")
      assert.isTrue(logged.some((line) => line.includes("secret_table")))
    }))
})
