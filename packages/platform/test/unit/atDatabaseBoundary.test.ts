import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Schema } from "effect"
import { SqlError } from "effect/sql"
import { atDatabaseBoundary } from "../../src/Database.ts"

class Missing {
  readonly _tag = "Missing"
}

const died = (exit: Exit.Exit<unknown, unknown>) => Exit.isFailure(exit) && Cause.hasDies(exit.cause)

describe("atDatabaseBoundary", () => {
  it.effect("a database failure, an undecodable row and a missing row become defects", () =>
    Effect.gen(function*() {
      const sqlFailure = new SqlError.SqlError({
        reason: new SqlError.ConnectionError({ cause: new Error("connection lost"), message: "connection lost" })
      })
      assert.isTrue(died(yield* Effect.exit(atDatabaseBoundary(Effect.fail(sqlFailure)))))
      const undecodable = Schema.decodeUnknownEffect(Schema.Struct({ id: Schema.Number }))({ id: "x" })
      assert.isTrue(died(yield* Effect.exit(atDatabaseBoundary(undecodable))))
      assert.isTrue(died(yield* Effect.exit(atDatabaseBoundary(Effect.fail(new Cause.NoSuchElementError())))))
    }))

  it.effect("every other failure stays typed", () =>
    Effect.gen(function*() {
      const typed: Effect.Effect<never, Missing> = atDatabaseBoundary(
        Effect.fail(new Missing() as Missing | SqlError.SqlError)
      )
      const exit = yield* Effect.exit(typed)
      assert.isTrue(Exit.isFailure(exit) && !Cause.hasDies(exit.cause))
    }))
})
