/**
 * A page of a table by its key, for the lists paged by key (`Pages.ts`: schedules, flow-control
 * keys, URL groups, FIFO queues): the entries after a key, in byte order, at most a limit. Postgres
 * orders with `COLLATE "C"`, whatever the database's locale, and the memory layers with
 * {@link inByteOrder}, so that both page alike and the pages of one list never overlap or skip.
 */
import type { Statement } from "effect/sql"
import type { PgClient } from "@effect/sql-pg"
import { inByteOrder } from "./Model.ts"

export interface KeyPage {
  /** The last key of the page before (need not exist any more). */
  readonly after: string | undefined
  readonly limit: number
}

/** `<condition> ORDER BY … LIMIT …` of a page by `column` (a qualified column the code names, e.g. `s.id`). */
export const keyPageSql = (sql: PgClient.PgClient, column: string, page: KeyPage): Statement.Fragment => {
  const key = sql.literal(column)
  const after = page.after ?? null
  return sql`(${after}::text IS NULL OR ${key} > ${after}::text COLLATE "C") ORDER BY ${key} COLLATE "C" LIMIT ${page.limit}`
}

/** The same page of entries in memory. */
export const keyPageOf = <A>(entries: Iterable<A>, keyOf: (entry: A) => string, page: KeyPage): Array<A> =>
  [...entries]
    .filter((entry) => page.after === undefined || inByteOrder(keyOf(entry), page.after) > 0)
    .sort((a, b) => inByteOrder(keyOf(a), keyOf(b)))
    .slice(0, page.limit)
