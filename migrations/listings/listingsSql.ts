/**
 * The listings package's SQL rules (packages/listings/src/Dedup.ts) and live SQL function definitions
 * (packages/listings/src/sql/), for the listings migrations. Not a migration itself (no number).
 *
 * Loaded at run time by URL: `migrations/` is a TypeScript project of its own that does not
 * reference packages/listings, so a static import would not typecheck (the interface below names
 * what is used; the values live only in those files).
 */
const load = (file: string): Promise<unknown> =>
  import(new URL(`../../packages/listings/src/${file}`, import.meta.url).href)

interface DedupRules {
  readonly dedupKeySql: string
  readonly winnerOrderSql: (updatedAt?: string, id?: string) => string
  readonly lockWritersSql: string
}

export const { dedupKeySql, lockWritersSql, winnerOrderSql } = (await load("Dedup.ts")) as DedupRules
export const { recomputeDedupWinners } = (await load("sql/recomputeDedupWinners.ts")) as {
  readonly recomputeDedupWinners: string
}
export const { writeOfferBatch } = (await load("sql/writeOfferBatch.ts")) as { readonly writeOfferBatch: string }
