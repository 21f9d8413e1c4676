/**
 * The de-duplication rules, each written once here and used by every writer and reader of them:
 * the ingest (Normalize, OfferStore), the reads (Offers), the live SQL functions (src/sql/), the
 * migrations (0002, 0013, 0014 import them) and the memory layers.
 *
 * - the key: normalized make, model, year, mileage and price (rounded to whole units) with its
 *   currency, in TypeScript (ingest, memory) and in SQL (migration 0002's backfill of older rows),
 *   part by part side by side;
 * - the winner order among the listed offers of one key: the most recently updated, then the lowest
 *   id (as an ORDER BY, as a "ranks above" predicate, and as a comparator);
 * - the writers' lock: every writer of offers holds it for its transaction.
 *
 * No imports: migrations load this file at run time (it must run under plain Node type stripping).
 */

/** The name of the writers' transaction-scoped advisory lock (`pg_advisory_xact_lock(hashtext(name))`). */
export const DEDUP_LOCK = "listings.dedup_winner"

/** The SQL that takes the writers' lock, as written inside SQL functions. */
export const lockWritersSql = `pg_advisory_xact_lock(hashtext('${DEDUP_LOCK}'))`

interface KeyFields {
  readonly make: string
  readonly model: string
  readonly year: number | null
  readonly mileage: number | null
  readonly price: number
  readonly currency: string
}

/** The key's parts in order, each as TypeScript and as SQL over an offers row (the two must agree). */
const KEY_PARTS: ReadonlyArray<{ readonly sql: string; readonly ts: (o: KeyFields) => string | number }> = [
  { sql: "lower(make)", ts: (o) => o.make.toLowerCase() },
  { sql: "lower(model)", ts: (o) => o.model.toLowerCase() },
  { sql: "coalesce(year::text, '')", ts: (o) => o.year ?? "" },
  { sql: "coalesce(mileage::text, '')", ts: (o) => o.mileage ?? "" },
  // Math.round is floor(x + 0.5) for negative halves too
  { sql: "floor(price + 0.5)::bigint::text", ts: (o) => Math.round(o.price) },
  { sql: "currency", ts: (o) => o.currency }
]

/** The de-duplication key of an offer, computed at ingest. */
export const dedupKey = (o: KeyFields): string => KEY_PARTS.map((part) => part.ts(o)).join("|")

/** The same key in SQL over the columns of `offers`. */
export const dedupKeySql = `concat_ws('|', ${KEY_PARTS.map((part) => part.sql).join(", ")})`

/**
 * The winner order as an ORDER BY list: most recently updated first, then the lowest id.
 * `updatedAt`/`id` are the SQL expressions of the two (e.g. qualified by an alias).
 */
export const winnerOrderSql = (updatedAt = "updated_at", id = "id"): string => `${updatedAt} DESC, ${id}`

/** The winner order as a predicate: the offer aliased `d` ranks above the one aliased `o`. */
export const ranksAboveSql = (d: string, o: string): string =>
  `(${d}.updated_at > ${o}.updated_at OR (${d}.updated_at = ${o}.updated_at AND ${d}.id < ${o}.id))`

/**
 * The winner order as a comparator (negative: `a` wins), for the memory layers. Ids compare by
 * code point, as Postgres does under the C collation the suite's databases use.
 */
export const compareWinners = (
  a: { readonly updatedAt: number; readonly id: string },
  b: { readonly updatedAt: number; readonly id: string }
): number => b.updatedAt - a.updatedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
