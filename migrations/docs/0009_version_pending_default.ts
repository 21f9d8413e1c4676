/**
 * A version added to an existing library becomes its default only once it is ready (Indexer.ts); a run
 * of such an add that was killed (SIGKILL of a docs-api mid scheduled refresh, of a `svc docs add`) was
 * finished by the resume, which did not know the add meant it to be the default: the new version ended
 * `ready` but the library kept answering the old one (an outside kill audit). `pending_default` records
 * that intent with the version's registration, so the run that finishes it promotes it; a promote
 * clears it on every version of the library (a later add's intent wins).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE versions ADD COLUMN pending_default boolean NOT NULL DEFAULT false`
})
