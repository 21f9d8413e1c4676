/** Coordinates for map display (WGS 84 degrees). */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE offers ADD COLUMN latitude double precision CHECK (latitude BETWEEN -90 AND 90)`
  yield* sql`ALTER TABLE offers ADD COLUMN longitude double precision CHECK (longitude BETWEEN -180 AND 180)`
})
