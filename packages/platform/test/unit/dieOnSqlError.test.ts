import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import { SqlError } from "effect/sql"
import { dieOnSqlError } from "../../src/Database.ts"

class Missing {
  readonly _tag = "Missing"
}

describe("dieOnSqlError", () => {
  it.effect("turns a SqlError into a defect and keeps the other failures typed", () =>
    Effect.gen(function*() {
      const sqlFailure = new SqlError.SqlError({ reason: new SqlError.ConnectionError({ cause: new Error("connection lost"), message: "connection lost" }) })
      const died = yield* Effect.exit(dieOnSqlError(Effect.fail(sqlFailure)))
      assert.isTrue(Exit.isFailure(died) && Cause.hasDies(died.cause))

      const typed: Effect.Effect<never, Missing> = dieOnSqlError(Effect.fail(new Missing() as Missing | SqlError.SqlError))
      const failed = yield* Effect.exit(typed)
      assert.isTrue(Exit.isFailure(failed) && !Cause.hasDies(failed.cause))
    }))
})
