/**
 * The de-duplication rules, each written once here and used by every writer and reader of them:
 * the ingest (Normalize, OfferStore), the reads (Offers), the live SQL functions (src/sql/), the
 * migrations (0002, 0013, 0014 and 0016 import them; 0002 keeps its own copy of the key as it was
 * then) and the memory layers.
 *
 * - the key: make and model as the filters compare them (SearchWords.filterKey: case, accents and the
 *   punctuation or spacing between words do not count, so "Škoda"/"Skoda", "Mercedes-Benz"/"Mercedes
 *   Benz" and "Citroën"/"Citroen" are one car), year, mileage and price (rounded to whole units) with
 *   its currency, in TypeScript (ingest, memory) and in SQL (migration 0016's recomputation of stored
 *   rows), part by part side by side;
 * - the winner order among the listed offers of one key: the most recently updated, then the lowest
 *   id (as an ORDER BY, as a "ranks above" predicate, and as a comparator);
 * - the writers' lock: every writer of offers holds it for its transaction.
 *
 * Its one import is SearchWords.ts, which imports nothing: migrations load this file at run time (it
 * must run under plain Node type stripping).
 */
import { filterKey } from "./SearchWords.ts"

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

/**
 * The key's parts in order, each as TypeScript and as SQL over an offers row (the two must agree).
 *
 * Make and model are folded by `filterKey`, the filters' one rule (no second folding in SQL): the SQL
 * reads `make_key`/`model_key`, which hold `filterKey(make)`/`filterKey(model)` for every row (the
 * ingest writes them, migration 0015 computed them for older rows, NOT NULL since). Until 0016 the key
 * compared `lower(make)`/`lower(model)`, and the same car from two feeds spelt "Škoda" and "Skoda" was
 * shown twice. A change here (or in `filterKey`) needs a migration that computes every stored key
 * again and the winners of every key (`rekeyDedup` of migrations/listings/0016_dedup_key_folds_names.ts);
 * the SQL may then read only columns that exist when 0016 runs, or 0016 must first be pinned to this
 * definition, as 0002 is to its own.
 */
const KEY_PARTS: ReadonlyArray<{ readonly sql: string; readonly ts: (o: KeyFields) => string | number }> = [
  { sql: "make_key", ts: (o) => filterKey(o.make) },
  { sql: "model_key", ts: (o) => filterKey(o.model) },
  { sql: "coalesce(year::text, '')", ts: (o) => o.year ?? "" },
  { sql: "coalesce(mileage::text, '')", ts: (o) => o.mileage ?? "" },
  // Math.round is floor(x + 0.5) for negative halves too
  { sql: "floor(price + 0.5)::bigint::text", ts: (o) => Math.round(o.price) },
  { sql: "currency", ts: (o) => o.currency }
]

/** The de-duplication key of an offer, computed at ingest. */
export const dedupKey = (o: KeyFields): string => KEY_PARTS.map((part) => part.ts(o)).join("|")

/**
 * The same key in SQL over the columns of `offers` (unqualified; it reads `make_key` and `model_key`,
 * so a row's filter keys must be written before its dedup key is computed from them).
 */
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
