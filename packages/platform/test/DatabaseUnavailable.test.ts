/**
 * isDatabaseUnavailable on errors a real Postgres sends: a server refusing a session (too many
 * connections for the role, SQLSTATE 53300, which the driver leaves unclassified) is "unavailable";
 * a statement's own faults are not.
 */
import { assert, describe, it } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { SqlClient, SqlError } from "effect/sql"
import { randomBytes } from "node:crypto"
import { isDatabaseUnavailable } from "../src/DatabaseUnavailable.ts"
import * as TestDatabase from "../src/testing/TestDatabase.ts"

const connect = (url: Redacted.Redacted | string) =>
  PgClient.layer({ url: typeof url === "string" ? Redacted.make(url) : url, maxConnections: 1 })

/** What a statement run at `url` failed with. */
const failureOf = (url: Redacted.Redacted | string, run: (sql: SqlClient.SqlClient) => Effect.Effect<unknown, unknown>) =>
  Effect.flip(Effect.flatMap(SqlClient.SqlClient, run).pipe(Effect.provide(connect(url)), Effect.scoped))

/** What the driver makes of an ErrorResponse with this SQLSTATE (its fields on the cause). */
const refusal = (code: string, reason: "ConnectionError" | "UnknownError" = "UnknownError") => {
  const cause = Object.assign(new Error(`refused with ${code}`), { code, severity: "FATAL" })
  const props = { cause, message: "PgConnection: Failed to connect", operation: "connect" }
  return new SqlError.SqlError({
    reason: reason === "ConnectionError" ? new SqlError.ConnectionError(props) : new SqlError.UnknownError(props)
  })
}

describe("isDatabaseUnavailable", () => {
  it("by SQLSTATE: the server out of resources, stopping or recovering is unavailable; one request's fault in the same classes is not", () => {
    for (const code of ["53100", "53200", "53300", "57P01", "57P02", "57P03", "58030"]) {
      assert.isTrue(isDatabaseUnavailable(refusal(code)), code)
    }
    assert.isTrue(isDatabaseUnavailable(refusal("08006", "ConnectionError")))
    for (const code of ["53400", "57P04", "58P01", "42601", "23505"]) assert.isFalse(isDatabaseUnavailable(refusal(code)), code)
    assert.isFalse(isDatabaseUnavailable(refusal("08P01", "ConnectionError")), "a protocol violation is a bug")
  })


  it.effect("a session refused by the server (too many connections) is unavailable; a statement's own error is not", () =>
    Effect.gen(function*() {
      const url = yield* TestDatabase.freshDatabase()
      const role = `svc_limited_${randomBytes(4).toString("hex")}`
      const password = randomBytes(12).toString("hex")
      const admin = (statement: string) =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          yield* sql.unsafe(statement)
        }).pipe(Effect.provide(connect(url)), Effect.scoped)
      yield* admin(`CREATE ROLE ${role} LOGIN PASSWORD '${password}' CONNECTION LIMIT 0`)
      yield* Effect.addFinalizer(() => Effect.ignore(admin(`DROP ROLE ${role}`)))
      const limited = new URL(Redacted.value(url))
      limited.username = role
      limited.password = password

      const refused = yield* failureOf(limited.href, (sql) => sql`SELECT 1`)
      assert.strictEqual((refused as { reason?: { cause?: { code?: string } } }).reason?.cause?.code, "53300")
      assert.isTrue(isDatabaseUnavailable(refused))

      const syntax = yield* failureOf(url, (sql) => sql.unsafe("SELEC 1"))
      assert.isFalse(isDatabaseUnavailable(syntax))
      const division = yield* failureOf(url, (sql) => sql`SELECT 1 / 0`)
      assert.isFalse(isDatabaseUnavailable(division))
      assert.isFalse(isDatabaseUnavailable(new Error("connect ECONNREFUSED")))
    }).pipe(Effect.scoped))
})
