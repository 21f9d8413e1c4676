/**
 * A version a remote caller asked for (an add or refresh over the docs RPC) is read under
 * `DOCS_SOURCE_ROOTS`; a run nobody asked for (the resume of a killed run, a scheduled refresh) read
 * its stored location unconfined, so a folder swapped for a link out of the roots while its run was
 * down was read whole (a security audit). `confined` records that the last run asked for was a remote
 * caller's, so that every later run of the version is confined to the roots as they are then.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE versions ADD COLUMN confined boolean NOT NULL DEFAULT false`
})
