/**
 * Turning a feed record (already mapped to our field names by its adapter) into an offer row.
 *
 * Hand-written coercion rather than a Schema decode: this runs for every record of every feed (the
 * ingest target is 20,000 offers/s on two cores) and feeds send the same field as a number, a numeric
 * string, "" or null. Every rule is here, and each rejection names the field and the problem.
 */
import { Result } from "effect"
// one-shot hashes: no Hash object per call (three or four per record)
import { hash } from "node:crypto"
import { dedupKey } from "./Dedup.ts"
import { filterKey, searchDocument } from "./SearchWords.ts"

/** A record with our field names and whatever values the feed had. */
export type FeedRecord = Readonly<Record<string, unknown>>

/** A validated offer, ready to upsert. */
export interface OfferRow {
  readonly id: string
  readonly source_id: string
  readonly native_id: string
  readonly title: string
  readonly make: string
  readonly model: string
  readonly price: number
  readonly currency: "PLN" | "EUR" | "USD"
  readonly fuel: string
  readonly transmission: string
  readonly region: string
  readonly original_url: string
  readonly year: number | null
  readonly mileage: number | null
  readonly power: number | null
  readonly location: string | null
  readonly latitude: number | null
  readonly longitude: number | null
  /** image keys (see {@link imageKey}) */
  readonly images: ReadonlyArray<string>
  readonly thumbnail: string | null
  /** epoch milliseconds, or null: the database then uses the time the offer last changed */
  readonly updated_at: number | null
  /** epoch milliseconds, or null */
  readonly expires_at: number | null
  readonly dedup_key: string
  /** the words free-text search matches (title, make, model), as `tsvector` text: see SearchWords */
  readonly search: string
  /** a hash of every field above (not of the filter keys below: see {@link normalize}) */
  readonly content_hash: string
  /** the filter keys of make, model, fuel, transmission and region (`filterKey` in SearchWords) */
  readonly make_key: string
  readonly model_key: string
  readonly fuel_key: string
  readonly transmission_key: string
  readonly region_key: string
}

/** The columns holding filter keys, and the field each is the key of. */
export const FILTER_KEYS = {
  make_key: "make",
  model_key: "model",
  fuel_key: "fuel",
  transmission_key: "transmission",
  region_key: "region"
} as const
export type FilterKeyColumn = keyof typeof FILTER_KEYS

/** An offer's filter keys (SearchWords.filterKey of each filtered field). */
export const filterKeysOf = (row: { readonly [K in (typeof FILTER_KEYS)[FilterKeyColumn]]: string }): Pick<OfferRow, FilterKeyColumn> => ({
  make_key: filterKey(row.make),
  model_key: filterKey(row.model),
  fuel_key: filterKey(row.fuel),
  transmission_key: filterKey(row.transmission),
  region_key: filterKey(row.region)
})

/** An image URL a feed gave for an offer, and its key. */
export interface FeedImage {
  readonly offerId: string
  readonly key: string
  readonly url: string
}

export interface Normalized {
  readonly row: OfferRow
  readonly images: ReadonlyArray<FeedImage>
}

/** hex SHA-256 of the original URL: the key of GET /images/<key> and of the stored object. */
export const imageKey = (url: string): string => hash("sha256", url, "hex")

const MAX_IMAGES = 30
const NATIVE_ID = /^[\w.:~-]{1,200}$/
const CURRENCIES = new Set(["PLN", "EUR", "USD"])

/**
 * Whitespace trimmed and collapsed, a NUL counted as whitespace (Postgres text cannot hold one: a single
 * NUL failed its whole batch of up to 2,000 offers); "" for nothing.
 */
export const cleanText = (value: unknown): string =>
  typeof value === "string" ? value.replace(/[\s\u0000]+/g, " ").trim() : typeof value === "number" && Number.isFinite(value) ? String(value) : ""

/** The de-duplication key (its one definition, with its SQL twin, is in Dedup.ts). */
export { dedupKey }

class Reject {
  readonly reason: string
  constructor(reason: string) {
    this.reason = reason
  }
}

const required = (record: FeedRecord, field: string, max = 500): string => {
  const text = cleanText(record[field])
  if (text === "") throw new Reject(`${field} is missing`)
  if (text.length > max) throw new Reject(`${field} is longer than ${max} characters`)
  return text
}

const optionalText = (record: FeedRecord, field: string, max = 500): string | null => {
  const text = cleanText(record[field])
  return text === "" ? null : text.slice(0, max)
}

const toNumber = (value: unknown): number | null | undefined => {
  if (value === null || value === undefined) return null
  if (typeof value === "number") return Number.isFinite(value) ? value : undefined
  if (typeof value === "string") {
    // "12 500", "12,500.50", "12500,50": spaces and thousands separators dropped, a lone comma is a decimal point
    let text = value.replace(/[\s\u00a0_]/g, "")
    if (text === "") return null
    if (/^-?\d{1,3}(,\d{3})+(\.\d+)?$/.test(text)) text = text.replace(/,/g, "")
    else if (/^-?\d+,\d+$/.test(text)) text = text.replace(",", ".")
    if (!/^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(text)) return undefined
    const n = Number(text)
    return Number.isFinite(n) ? n : undefined
  }
  return undefined
}

const optionalNumber = (record: FeedRecord, field: string, min: number, max: number): number | null => {
  const n = toNumber(record[field])
  if (n === undefined) throw new Reject(`${field} is not a number`)
  if (n === null) return null
  if (n < min || n > max) throw new Reject(`${field} is out of range (${min} to ${max})`)
  return n
}

const optionalInt = (record: FeedRecord, field: string, min: number, max: number): number | null => {
  const n = optionalNumber(record, field, min, max)
  return n === null ? null : Math.round(n)
}

const httpUrl = (value: unknown): string | null => {
  const text = cleanText(value)
  if (text === "" || text.length > 2000) return null
  try {
    const url = new URL(text)
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : null
  } catch {
    return null
  }
}

/** 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z, in epoch milliseconds. */
const FIRST_INSTANT = -62_135_596_800_000
const LAST_INSTANT = 253_402_300_799_999

/** Epoch milliseconds (what the batch sends as `timestamptz`), or null. */
const timestamp = (record: FeedRecord, field: string): number | null => {
  const value = record[field]
  if (value === null || value === undefined || value === "") return null
  const time = typeof value === "number"
    ? Math.trunc(value < 1e11 ? value * 1000 : value) // epoch seconds or milliseconds
    : typeof value === "string"
    ? Date.parse(value.trim())
    : Number.NaN
  if (Number.isNaN(time)) throw new Reject(`${field} is not a date`)
  // years 1 to 9999: a Date holds ±275,760 years, Postgres none before 4713 BC (one such date failed
  // its whole batch), and no offer was updated or expires outside them
  if (time < FIRST_INSTANT || time > LAST_INSTANT) throw new Reject(`${field} is not a date between the years 1 and 9999`)
  return time
}

const imageList = (value: unknown): Array<string> => {
  const items = Array.isArray(value) ? value : typeof value === "string" ? value.split(/[|\s]+/) : []
  const urls: Array<string> = []
  for (const item of items) {
    const url = httpUrl(item)
    if (url !== null && !urls.includes(url)) urls.push(url)
    if (urls.length === MAX_IMAGES) break
  }
  return urls
}

/** Validates and normalizes one record of `sourceId`; `Result.fail(reason)` when it is unusable. */
export const normalize = (sourceId: string, record: FeedRecord): Result.Result<Normalized, string> => {
  try {
    const nativeId = required(record, "nativeId", 200)
    if (!NATIVE_ID.test(nativeId)) throw new Reject("nativeId has characters other than letters, digits, . _ : ~ -")
    const price = optionalNumber(record, "price", 0, 1e10)
    if (price === null) throw new Reject("price is missing")
    const currency = cleanText(record["currency"]).toUpperCase()
    if (!CURRENCIES.has(currency)) throw new Reject("currency is not one of PLN, EUR, USD")
    const originalUrl = httpUrl(record["originalUrl"])
    if (originalUrl === null) throw new Reject("originalUrl is not an http(s) URL")
    const latitude = optionalNumber(record, "latitude", -90, 90)
    const longitude = optionalNumber(record, "longitude", -180, 180)
    const imageUrls = imageList(record["images"])
    const thumbnailUrl = httpUrl(record["thumbnail"]) ?? imageUrls[0] ?? null
    const id = `${sourceId}:${nativeId}`
    const images = imageUrls.map((url) => ({ offerId: id, key: imageKey(url), url }))
    const thumbnailIndex = thumbnailUrl === null ? -1 : imageUrls.indexOf(thumbnailUrl)
    if (thumbnailUrl !== null && thumbnailIndex === -1) {
      images.push({ offerId: id, key: imageKey(thumbnailUrl), url: thumbnailUrl })
    }
    // one object, hashed before its hash is set (the hash covers every other field but the filter
    // keys, added after: they are derived, and a migration computes them for stored offers, so an
    // unchanged offer is not rewritten — and re-dated, when its feed gives no updatedAt — for them)
    const row: Omit<{ -readonly [K in keyof OfferRow]: OfferRow[K] }, FilterKeyColumn> = {
      id,
      source_id: sourceId,
      native_id: nativeId,
      title: required(record, "title"),
      make: required(record, "make", 100),
      model: required(record, "model", 100),
      price,
      currency: currency as OfferRow["currency"],
      fuel: required(record, "fuel", 50),
      transmission: required(record, "transmission", 50),
      region: required(record, "region", 100),
      original_url: originalUrl,
      year: optionalInt(record, "year", 1886, 2100),
      mileage: optionalInt(record, "mileage", 0, 10_000_000),
      power: optionalInt(record, "power", 0, 5000),
      location: optionalText(record, "location"),
      // a coordinate alone is useless on a map
      latitude: latitude === null || longitude === null ? null : latitude,
      longitude: latitude === null || longitude === null ? null : longitude,
      images: images.slice(0, imageUrls.length).map((image) => image.key),
      thumbnail: thumbnailUrl === null ? null : images[thumbnailIndex === -1 ? images.length - 1 : thumbnailIndex]!.key,
      updated_at: timestamp(record, "updatedAt"),
      expires_at: timestamp(record, "expiresAt"),
      dedup_key: "",
      search: "",
      content_hash: ""
    }
    row.dedup_key = dedupKey(row)
    row.search = searchDocument(`${row.title} ${row.make} ${row.model}`)
    row.content_hash = hash("sha1", JSON.stringify(row), "base64")
    return Result.succeed({ row: { ...row, ...filterKeysOf(row) }, images })
  } catch (error) {
    if (error instanceof Reject) return Result.fail(error.reason)
    throw error
  }
}
