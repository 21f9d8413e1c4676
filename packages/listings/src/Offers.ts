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
 * source filters) the statement drops a match when a matching duplicate ranks above it (NOT EXISTS).
 *
 * Answers are remembered with the `offers_version` they were read at (migration 0008): the same
 * request while the version is unchanged gets the same JSON after one read of the version, without
 * running its statement. Offers change only when an ingest writes (a batch commits, vanished offers
 * expire; every 15 minutes by default), and the mobile client's requests are mostly the same few first pages, so most answers
 * are served from memory, exactly as the database would give them. The remembered JSON's hash is the
 * answer's ETag, so a client can also revalidate with If-None-Match (304).
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
import { ranksAboveSql } from "./Dedup.ts"
import { toPrefixQuery } from "./SearchWords.ts"
import { hash } from "node:crypto"
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
  & Omit<OfferRow, "native_id" | "updated_at" | "expires_at" | "dedup_key" | "search" | "content_hash">
  & { readonly updated_at: Date | null; readonly expires_at: Date | null }

/** A duplicate `d` ranks above the candidate `o` (Dedup.ts). */
const RANKS_ABOVE = ranksAboveSql("d", "o")

/** "a, B,,c" -> ["a", "b", "c"] (lowercased, blanks dropped). */
export const splitList = (value: string | undefined): Array<string> =>
  value === undefined ? [] : value.split(",").map((item) => item.trim().toLowerCase()).filter((item) => item !== "")

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
 * A least-recently-used map bounded by the total weight of its values (entries, or bytes).
 *
 * Its entries carry the `offers_version` they were computed at (see migration 0008): a statement
 * that reads the version sees the offers of the same snapshot, so an entry is exact for as long as
 * the version is unchanged. Entries of an older version are simply replaced when next computed.
 */
class Remembered<V extends { readonly version: string }> {
  private readonly entries = new Map<string, V>()
  private weight = 0
  private readonly capacity: number
  private readonly weigh: (key: string, value: V) => number
  constructor(capacity: number, weigh: (key: string, value: V) => number) {
    this.capacity = capacity
    this.weigh = weigh
  }
  get(key: string): V | undefined {
    const entry = this.entries.get(key)
    if (entry !== undefined) {
      this.entries.delete(key)
      this.entries.set(key, entry)
    }
    return entry
  }
  set(key: string, value: V) {
    const weight = this.weigh(key, value)
    if (weight > this.capacity) return
    this.delete(key)
    this.entries.set(key, value)
    this.weight += weight
    for (const [oldest, entry] of this.entries) {
      if (this.weight <= this.capacity) break
      this.entries.delete(oldest)
      this.weight -= this.weigh(oldest, entry)
    }
  }
  private delete(key: string) {
    const entry = this.entries.get(key)
    if (entry === undefined) return
    this.entries.delete(key)
    this.weight -= this.weigh(key, entry)
  }
}

const utf8 = new TextEncoder()
/** What a remembered answer costs besides its JSON and key: the entry, its tag, the map's slot. */
const ENTRY_BYTES = 256
/** Match counts remembered per filter: paging through one filter then costs only the page. */
const COUNT_CACHE_ENTRIES = 2_000

/** An answer to GET /offers, as the JSON of its `OffersResponse`. */
export interface OffersAnswer {
  /**
   * UTF-8 JSON of the `OffersResponse` (built as its encoded form already: strings, numbers, nulls).
   * Bytes rather than a string: a remembered answer is written as it is, not converted again on
   * every request.
   */
  readonly json: Uint8Array
  /** Identifies `json`: the same request and the same offers give the same tag. */
  readonly etag: string
}

export class Offers extends Context.Service<Offers, {
  readonly search: (search: OfferSearch) => Effect.Effect<OffersAnswer, ResultTooLarge | SqlError.SqlError>
  readonly byId: (id: string) => Effect.Effect<CarOffer, OfferNotFound | SqlError.SqlError>
}>()("@svc/listings/Offers") {
  static readonly layer = Layer.effect(
    Offers,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const sources = yield* Sources
      const { answerCacheBytes, publicBaseUrl } = yield* ListingsConfig
      const imageUrl = (key: string) => `${publicBaseUrl}/images/${key}`
      const counts = new Remembered<{ readonly version: string; readonly count: number }>(COUNT_CACHE_ENTRIES, () => 1)
      // answers remembered per request, weighed by what they hold: the JSON, the request as key (two
      // bytes a character) and the entry itself
      const answers = new Remembered<{ readonly version: string; readonly answer: OffersAnswer | "too_large" }>(
        answerCacheBytes,
        (key, entry) => key.length * 2 + ENTRY_BYTES + (entry.answer === "too_large" ? 0 : entry.answer.json.byteLength)
      )
      const keyOf = (fragment: Statement.Fragment) => {
        const [text, params] = sql`${fragment}`.compile()
        return `${text}\u0000${JSON.stringify(params)}`
      }
      const versionNow = sql<{ readonly version: string }>`SELECT version FROM listings.offers_version`.pipe(
        Effect.map((rows) => rows[0]?.version)
      )

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
        // The same request at the same version: the same answer, without building or running its
        // statement (the answer is a function of the parameters and the offers alone).
        const answerKey = JSON.stringify(search)
        const rememberedAnswer = answers.get(answerKey)
        const version = rememberedAnswer === undefined ? undefined : yield* versionNow
        if (rememberedAnswer !== undefined && rememberedAnswer.version === version) {
          if (rememberedAnswer.answer === "too_large") return yield* new ResultTooLarge({ limit: COMPLETE_LIMIT })
          return rememberedAnswer.answer
        }

        const where: Array<Statement.Fragment> = [sql`removed_at IS NULL`]
        // filters every offer of one dedup key agrees on
        let keyClosed = true
        const tsquery = search.query === undefined ? "" : toPrefixQuery(search.query)
        if (tsquery === null) {
          // a word no offer's search document can hold: nothing matches
          keyClosed = false
          where.push(sql`false`)
        } else if (tsquery !== "") {
          keyClosed = false
          // the words as made (SearchWords), not parsed again: they match the documents' words exactly
          where.push(sql`search @@ ${tsquery}::tsquery`)
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
                AND ${sql.literal(RANKS_ABOVE)})`
          : filter
        const order = sql.literal(orderBy(search.sort ?? "NEWEST"))
        const answerOf = (rows: ReadonlyArray<OfferDbRow>, count: number): OffersAnswer => {
          const response: OffersResponse = {
            offers: rows.map(toOffer),
            count,
            warnings: warnings.length > 0 ? warnings : null
          }
          // an array of its own (Buffer.from would share an 8 KiB pool slab for a small answer)
          const json = utf8.encode(JSON.stringify(response))
          return { json, etag: `"${hash("sha1", json, "base64url")}"` }
        }
        const limit = search.limit ?? DEFAULT_PAGE_SIZE
        const offset = search.offset ?? 0
        // The statements of this request run unprepared, so each is planned for its own values: a prepared one
        // switches to a plan made without them after five runs, and for `complete=true` with a mileage
        // bound that plan walked every offer newest first (135 ms) where the bound's index reads 5,000
        // rows and sorts them (7.5 ms).
        const statement = search.complete === true
          ? sql`SELECT ${sql.literal(columns)} FROM listings.offers o WHERE ${matching}
              ORDER BY ${order} LIMIT ${COMPLETE_LIMIT + 1}`
          : sql`SELECT ${sql.literal(columns)} FROM listings.offers o WHERE ${matching}
              ORDER BY ${order} LIMIT ${limit} OFFSET ${offset}`
        const remember = (version: string | undefined, answer: OffersAnswer | "too_large") => {
          if (version !== undefined) answers.set(answerKey, { version, answer })
        }

        if (search.complete === true) {
          const rows = yield* sql<OfferDbRow & { readonly version: string }>`
            SELECT v.version, p.* FROM listings.offers_version v LEFT JOIN LATERAL (${statement}) p ON true`.unprepared
          const offers = rows.filter((row) => row.id !== null)
          if (offers.length > COMPLETE_LIMIT) {
            remember(rows[0]?.version, "too_large")
            return yield* new ResultTooLarge({ limit: COMPLETE_LIMIT })
          }
          const answer = answerOf(offers, offers.length)
          remember(rows[0]?.version, answer)
          return answer
        }

        // A count remembered at the version this statement's snapshot reads is exact: only the page.
        const countKey = keyOf(matching)
        const rememberedCount = counts.get(countKey)
        if (rememberedCount !== undefined && (version === undefined || version === rememberedCount.version)) {
          const rows = yield* sql<OfferDbRow & { readonly version: string }>`
            SELECT v.version, p.* FROM listings.offers_version v LEFT JOIN LATERAL (${statement}) p ON true`.unprepared
          if (rows[0]?.version === rememberedCount.version) {
            const answer = answerOf(rows.filter((row) => row.id !== null), rememberedCount.count)
            remember(rows[0].version, answer)
            return answer
          }
        }
        // Otherwise count and page in one statement (one snapshot), and remember both.
        const rows = yield* sql<OfferDbRow & { readonly version: string; readonly total: number }>`
          SELECT v.version, c.total::int AS total, p.*
          FROM listings.offers_version v
          CROSS JOIN (SELECT count(*) AS total FROM listings.offers o WHERE ${matching}) c
          LEFT JOIN LATERAL (${statement}) p ON true`.unprepared
        const first = rows[0]
        const count = first?.total ?? 0
        if (first !== undefined) counts.set(countKey, { version: first.version, count })
        const answer = answerOf(rows.filter((row) => row.id !== null), count)
        remember(first?.version, answer)
        return answer
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
