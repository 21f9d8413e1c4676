/**
 * What an answer of GET /offers and GET /offers/:id is made of, for every implementation of
 * `Offers` (Postgres and memory): the request (`OfferSearch`), a stored offer as read back
 * (`OfferDbRow`, decoded), the `CarOffer` it becomes, the unknown-sources warning, and the answer's
 * JSON and ETag.
 */
import { type CarOffer, Currency, type OfferSort, type OffersResponse } from "@svc/schema"
import { Schema } from "effect"
import { hash } from "node:crypto"
import { filterKey } from "./SearchWords.ts"

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
  /** Query parameters of the request that GET /offers does not take (named in `warnings`). */
  readonly ignoredParameters?: ReadonlyArray<string> | undefined
}

/**
 * An answer of GET /offers (the JSON of its `OffersResponse`) or GET /offers/:id (of a `CarOffer`),
 * as bytes and their ETag; http.ts sends both by one rule (ETag, 304, gzip).
 */
export interface JsonAnswer {
  /**
   * UTF-8 JSON of the answer (built as its encoded form already: strings, numbers, nulls).
   * Bytes rather than a string: a remembered answer is written as it is, not converted again on
   * every request.
   */
  readonly json: Uint8Array
  /** Identifies `json` (a hash of it): the same request and the same offers give the same tag. */
  readonly etag: string
}

/** An answer to GET /offers, as the JSON of its `OffersResponse`. */
export type OffersAnswer = JsonAnswer

/** A stored offer as read back: the columns a CarOffer is built from. */
export const OfferDbRow = Schema.Struct({
  id: Schema.String,
  source_id: Schema.String,
  title: Schema.String,
  make: Schema.String,
  model: Schema.String,
  price: Schema.Number,
  currency: Currency,
  fuel: Schema.String,
  transmission: Schema.String,
  region: Schema.String,
  original_url: Schema.String,
  year: Schema.NullOr(Schema.Number),
  mileage: Schema.NullOr(Schema.Number),
  power: Schema.NullOr(Schema.Number),
  location: Schema.NullOr(Schema.String),
  latitude: Schema.NullOr(Schema.Number),
  longitude: Schema.NullOr(Schema.Number),
  /** image keys */
  images: Schema.Array(Schema.String),
  thumbnail: Schema.NullOr(Schema.String),
  updated_at: Schema.NullOr(Schema.Date),
  expires_at: Schema.NullOr(Schema.Date)
})
export type OfferDbRow = typeof OfferDbRow.Type

/** The columns of {@link OfferDbRow}, as a select list. */
export const offerColumns = Object.keys(OfferDbRow.fields).join(", ")

/** "a, B,,c" -> ["a", "b", "c"] (lowercased, blanks dropped). */
export const splitList = (value: string | undefined): Array<string> =>
  value === undefined ? [] : value.split(",").map((item) => item.trim().toLowerCase()).filter((item) => item !== "")

/**
 * The key a `make`/`model` filter compares by (SearchWords.filterKey: case, accents and punctuation do
 * not count), or undefined when there is no filter (absent or blank).
 */
export const filterKeyOf = (value: string | undefined): string | undefined =>
  value === undefined || value.trim() === "" ? undefined : filterKey(value)

/** The keys a comma-separated list filter (`fuelTypes`, `transmissions`, `regions`) compares by, blanks dropped. */
export const filterKeyList = (value: string | undefined): Array<string> =>
  value === undefined ? [] : value.split(",").filter((item) => item.trim() !== "").map(filterKey)

/** The warning for requested source ids no source has (lowercased ids), or none. */
export const unknownSourcesWarning = (
  requested: ReadonlyArray<string>,
  known: ReadonlyArray<string>
): string | undefined => {
  const knownIds = new Set(known.map((id) => id.toLowerCase()))
  const unknown = requested.filter((id) => !knownIds.has(id))
  return unknown.length === 0 ? undefined : `Unknown source id${unknown.length > 1 ? "s" : ""}: ${unknown.join(", ")}`
}

/** Ignored parameters named in a warning: at most this many, each cut to 100 characters. */
const MAX_IGNORED_SHOWN = 10

/**
 * The warning for query parameters the route does not take (a misspelt `fuelType=`, `Make=`), or
 * none: the answer is what the other parameters ask, but a filter the client meant was not applied.
 */
export const ignoredParametersWarning = (names: ReadonlyArray<string> | undefined): string | undefined => {
  if (names === undefined || names.length === 0) return undefined
  const shown = names.slice(0, MAX_IGNORED_SHOWN).map((name) => name.slice(0, 100)).join(", ")
  const more = names.length > MAX_IGNORED_SHOWN ? ` and ${names.length - MAX_IGNORED_SHOWN} more` : ""
  return `Unknown query parameter${names.length > 1 ? "s" : ""} ignored: ${shown}${more}`
}

/** A stored offer as the API's CarOffer; image keys become `{publicBaseUrl}/images/<key>`. */
export const toOffer = (publicBaseUrl: string) => {
  const imageUrl = (key: string) => `${publicBaseUrl}/images/${key}`
  return (row: OfferDbRow): CarOffer => ({
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
}

const utf8 = new TextEncoder()

/** A value already in its encoded form (a `CarOffer`, an `OffersResponse`) as JSON bytes and their ETag. */
export const jsonAnswer = (encoded: CarOffer | OffersResponse): JsonAnswer => {
  // an array of its own (Buffer.from would share an 8 KiB pool slab for a small answer)
  const json = utf8.encode(JSON.stringify(encoded))
  return { json, etag: `"${hash("sha1", json, "base64url")}"` }
}

/** The answer's JSON (an `OffersResponse` built as its encoded form) and its ETag. */
export const answerOf = (
  offers: ReadonlyArray<CarOffer>,
  count: number,
  warnings: ReadonlyArray<string>
): OffersAnswer => jsonAnswer({ offers, count, warnings: warnings.length > 0 ? warnings : null })
