import { SqlError } from "effect/sql"

/** What a store dies with when Postgres is stopped (`atDatabaseBoundary` makes it a defect): the connection refused. */
export const databaseDown = (): SqlError.SqlError =>
  new SqlError.SqlError({
    reason: new SqlError.ConnectionError({
      cause: new Error("connect ECONNREFUSED 127.0.0.1:5432"),
      message: "PgConnection: Failed to connect",
      operation: "connect"
    })
  })
