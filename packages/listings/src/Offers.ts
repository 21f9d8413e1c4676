/**
 * Reading offers: GET /offers (search) and GET /offers/:id.
 *
 * Every answer comes from one SQL statement, so `count` and the page (or the complete set) describe
 * the same snapshot even while an ingest commits batches.
 *
 * De-duplication: one offer per `dedup_key`, the most recently updated, then the lowest id, among the
 * *matching* offers. When the filters cannot tell the duplicates of a key apart (only make, model,
 * year and mileage filters: every offer of a key agrees on those), the ingest-maintained
 * `dedup_winner` flag answers it with an index; otherwise (free text, fuel, transmission, region,
 * source filters) the statement picks the winners among the matches with DISTINCT ON.
 */
import {
  COMPLETE_LIMIT,
  DEFAULT_PAGE_SIZE,
  type CarOffer,
  OfferNotFound,
  type OfferSort,
  type OffersResponse,
  ResultTooLarge
} from "@svc/schema"
import { Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError, type Statement } from "effect/sql"
import { ListingsConfig } from "./ListingsConfig.ts"
import type { OfferRow } from "./Normalize.ts"
import { Sources } from "./Sources.ts"

export interface OfferSearch {
  readonly query?: string | undefined
  readonly make?: string | undefined
  readonly model?: string | undefined
  readonly minYear?: number | undefined
  readonly maxYear?: number | undefined
  readonly maxMileageKm?: number | undefined
  readonly fuelTypes?: string | undefined
  readonly transmissions?: string | undefined
  readonly regions?: string | undefined
  readonly sources?: string | undefined
  readonly sort?: OfferSort | undefined
  readonly dedup?: boolean | undefined
  readonly complete?: boolean | undefined
  readonly limit?: number | undefined
  readonly offset?: number | undefined
  // accepted, not applied
  readonly minPrice?: number | undefined
  readonly maxPrice?: number | undefined
}

/** The columns a CarOffer is built from. */
const columns = `id, source_id, title, make, model, price, currency, fuel, transmission, region, original_url,
  year, mileage, power, location, latitude, longitude, images, thumbnail, updated_at, expires_at`

/** A stored offer as read back: the written row's columns, timestamps now as dates. */
type OfferDbRow =
  & Omit<OfferRow, "native_id" | "updated_at" | "expires_at" | "dedup_key" | "content_hash">
  & { readonly updated_at: Date | null; readonly expires_at: Date | null }

/** "a, B,,c" -> ["a", "b", "c"] (lowercased, blanks dropped). */
export const splitList = (value: string | undefined): Array<string> =>
  value === undefined ? [] : value.split(",").map((item) => item.trim().toLowerCase()).filter((item) => item !== "")

/** Free text -> a prefix tsquery ("merc benz" -> "merc:* & benz:*"), accents folded; "" when no word. */
export const toPrefixQuery = (text: string): string =>
  text.normalize("NFKD").replace(/\p{M}+/gu, "").toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word !== "")
    .slice(0, 16)
    .map((word) => `${word}:*`)
    .join(" & ")

const orderBy = (sort: OfferSort): string => {
  switch (sort) {
    case "MILEAGE_ASC":
      return "mileage ASC NULLS LAST, updated_at DESC, id"
    case "YEAR_DESC":
      return "year DESC NULLS LAST, updated_at DESC, id"
    default:
      // NEWEST, and the price sorts, which the server does not apply
      return "updated_at DESC, id"
  }
}

/**
 * Match counts by filter, each with the `offers_version` it was computed at (see migration 0008).
 * Counting every match is the expensive part of a page; paging through one filter, or many clients
 * asking the same popular filters, then costs only the page itself. Least recently used out first.
 */
class RememberedCounts {
  private readonly entries = new Map<string, { readonly version: string; readonly count: number }>()
  private readonly capacity: number
  constructor(capacity: number) {
    this.capacity = capacity
  }
  get(key: string) {
    const entry = this.entries.get(key)
    if (entry !== undefined) {
      this.entries.delete(key)
      this.entries.set(key, entry)
    }
    return entry
  }
  set(key: string, entry: { readonly version: string; readonly count: number }) {
    this.entries.delete(key)
    this.entries.set(key, entry)
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!)
  }
}

const COUNT_CACHE_SIZE = 2_000

export class Offers extends Context.Service<Offers, {
  readonly search: (search: OfferSearch) => Effect.Effect<OffersResponse, ResultTooLarge | SqlError.SqlError>
  readonly byId: (id: string) => Effect.Effect<CarOffer, OfferNotFound | SqlError.SqlError>
}>()("@svc/listings/Offers") {
  static readonly layer = Layer.effect(
    Offers,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const sources = yield* Sources
      const { publicBaseUrl } = yield* ListingsConfig
      const imageUrl = (key: string) => `${publicBaseUrl}/images/${key}`
      const counts = new RememberedCounts(COUNT_CACHE_SIZE)
      const countKeyOf = (matching: Statement.Fragment) => {
        const [text, params] = sql`${matching}`.compile()
        return `${text}\u0000${JSON.stringify(params)}`
      }

      const toOffer = (row: OfferDbRow): CarOffer => ({
        sourceId: row.source_id,
        id: row.id,
        title: row.title,
        make: row.make,
        model: row.model,
        price: row.price,
        currency: row.currency,
        fuel: row.fuel,
        transmission: row.transmission,
        region: row.region,
        originalUrl: row.original_url,
        year: row.year,
        mileage: row.mileage,
        power: row.power,
        location: row.location,
        latitude: row.latitude,
        longitude: row.longitude,
        images: row.images.map(imageUrl),
        thumbnail: row.thumbnail === null ? null : imageUrl(row.thumbnail),
        updatedAt: row.updated_at === null ? null : row.updated_at.toISOString(),
        expiresAt: row.expires_at === null ? null : row.expires_at.toISOString()
      })

      const search = Effect.fn("Offers.search")(function*(search: OfferSearch) {
        const where: Array<Statement.Fragment> = [sql`removed_at IS NULL`]
        // filters every offer of one dedup key agrees on
        let keyClosed = true
        const tsquery = search.query === undefined ? "" : toPrefixQuery(search.query)
        if (tsquery !== "") {
          keyClosed = false
          where.push(sql`search @@ to_tsquery('simple', ${tsquery})`)
        }
        const make = search.make?.replace(/\s+/g, " ").trim()
        if (make) where.push(sql`lower(make) = ${make.toLowerCase()}`)
        const model = search.model?.replace(/\s+/g, " ").trim()
        if (model) where.push(sql`lower(model) = ${model.toLowerCase()}`)
        if (search.minYear !== undefined) where.push(sql`year >= ${search.minYear}`)
        if (search.maxYear !== undefined) where.push(sql`year <= ${search.maxYear}`)
        if (search.maxMileageKm !== undefined) where.push(sql`mileage <= ${search.maxMileageKm}`)
        for (
          const [column, value] of [
            ["fuel", search.fuelTypes],
            ["transmission", search.transmissions],
            ["region", search.regions]
          ] as const
        ) {
          const list = splitList(value)
          if (list.length > 0) {
            keyClosed = false
            where.push(sql`lower(${sql(column)}) IN ${sql.in(list)}`)
          }
        }
        const warnings: Array<string> = []
        const sourceIds = splitList(search.sources)
        if (sourceIds.length > 0) {
          keyClosed = false
          const known = new Set(sources.all.map((source) => source.id.toLowerCase()))
          const unknown = sourceIds.filter((id) => !known.has(id))
          if (unknown.length > 0) {
            warnings.push(`Unknown source id${unknown.length > 1 ? "s" : ""}: ${unknown.join(", ")}`)
          }
          where.push(sql`source_id IN ${sql.in(sourceIds)}`)
        }
        const dedup = search.dedup ?? true
        if (dedup && keyClosed) where.push(sql`dedup_winner`)
        const filter = sql.and(where)
        // De-duplication among the matches: an offer is shown unless a matching duplicate ranks above
        // it (newer, then lower id). Inside the subquery the unqualified filter reads the duplicate
        // `d`. Per candidate this is one probe of `offers_dedup`, so a page walks its sort index.
        const matching = dedup && !keyClosed
          ? sql`${filter} AND NOT EXISTS (
              SELECT 1 FROM listings.offers d
              WHERE d.dedup_key = o.dedup_key AND d.id <> o.id AND ${filter}
                AND (d.updated_at > o.updated_at OR (d.updated_at = o.updated_at AND d.id < o.id)))`
          : filter
        const order = sql.literal(orderBy(search.sort ?? "NEWEST"))
        const toResponse = (rows: ReadonlyArray<OfferDbRow>, count: number): OffersResponse => ({
          offers: rows.map(toOffer),
          count,
          warnings: warnings.length > 0 ? warnings : null
        })

        if (search.complete === true) {
          const rows = yield* sql<OfferDbRow>`
            SELECT ${sql.literal(columns)} FROM listings.offers o WHERE ${matching}
            ORDER BY ${order} LIMIT ${COMPLETE_LIMIT + 1}`
          if (rows.length > COMPLETE_LIMIT) return yield* new ResultTooLarge({ limit: COMPLETE_LIMIT })
          return toResponse(rows, rows.length)
        }
        const limit = search.limit ?? DEFAULT_PAGE_SIZE
        const offset = search.offset ?? 0
        const page = sql`SELECT ${sql.literal(columns)} FROM listings.offers o WHERE ${matching}
          ORDER BY ${order} LIMIT ${limit} OFFSET ${offset}`
        const countKey = countKeyOf(matching)

        // A count remembered at the version this statement's snapshot reads is exact: only the page.
        const remembered = counts.get(countKey)
        if (remembered !== undefined) {
          const rows = yield* sql<OfferDbRow & { readonly version: string }>`
            SELECT v.version, p.* FROM listings.offers_version v LEFT JOIN LATERAL (${page}) p ON true`
          if (rows[0]?.version === remembered.version) {
            return toResponse(rows.filter((row) => row.id !== null), remembered.count)
          }
        }
        // Otherwise count and page in one statement (one snapshot), and remember the count.
        const rows = yield* sql<OfferDbRow & { readonly version: string; readonly total: number }>`
          SELECT v.version, c.total::int AS total, p.*
          FROM listings.offers_version v
          CROSS JOIN (SELECT count(*) AS total FROM listings.offers o WHERE ${matching}) c
          LEFT JOIN LATERAL (${page}) p ON true`
        const first = rows[0]
        const count = first?.total ?? 0
        if (first !== undefined) counts.set(countKey, { version: first.version, count })
        return toResponse(rows.filter((row) => row.id !== null), count)
      })

      const byId = Effect.fn("Offers.byId")(function*(id: string) {
        const rows = yield* sql<OfferDbRow>`SELECT ${sql.literal(columns)} FROM listings.offers WHERE id = ${id}`
        const row = rows[0]
        if (row === undefined) return yield* new OfferNotFound({ id })
        return toOffer(row)
      })

      return Offers.of({ search, byId })
    })
  )
}
