/**
 * One adapter per source, behind one interface: an adapter reads its feed once, completely, as a
 * stream of records mapped to our field names (see `Normalize.ts` for the fields and their rules).
 * Validation happens after the adapter, the same way for every source; a record that fails it is
 * skipped and counted. A feed that cannot be read to the end fails the stream with a `FeedError`:
 * what was read so far is kept, but the run is not a successful full run, so nothing is expired.
 */
import { Schema, Stream } from "effect"
import type { FeedRecord } from "../Normalize.ts"

/** The feed could not be read (completely). `message` is for the log; it never reaches a client. */
export class FeedError extends Schema.TaggedError<FeedError>()("FeedError", {
  /** Coarse category, stored with the run. */
  kind: Schema.Literals(["unreachable", "http_status", "malformed", "credentials", "timeout"]),
  message: Schema.String
}) {}

export interface SourceAdapter {
  readonly read: Stream.Stream<FeedRecord, FeedError>
}

/** Our field names, the keys a mapped record may carry. */
export const offerFields = [
  "nativeId",
  "title",
  "make",
  "model",
  "price",
  "currency",
  "fuel",
  "transmission",
  "region",
  "originalUrl",
  "year",
  "mileage",
  "power",
  "location",
  "latitude",
  "longitude",
  "images",
  "thumbnail",
  "updatedAt",
  "expiresAt"
] as const

/**
 * Reads a dotted path: `price.amount`; `photos[].url` collects `url` of every element of `photos`;
 * `tags[]` the elements themselves.
 */
export const readPath = (value: unknown, path: string): unknown => {
  const segments = path.split(".")
  let current: unknown = value
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!
    if (current === null || typeof current !== "object") return undefined
    if (segment.endsWith("[]")) {
      const list = (current as Record<string, unknown>)[segment.slice(0, -2)]
      if (!Array.isArray(list)) return undefined
      const rest = segments.slice(i + 1).join(".")
      return rest === "" ? list : list.map((item) => readPath(item, rest))
    }
    current = (current as Record<string, unknown>)[segment]
  }
  return current
}

export interface Mapping {
  readonly fields?: Readonly<Record<string, string>> | undefined
  readonly defaults?: Readonly<Record<string, string | number>> | undefined
}

const missing = (value: unknown) => value === undefined || value === null || value === ""

/** Applies a source's field mapping and defaults to one raw feed item. */
export const mapRecord = (raw: unknown, mapping: Mapping): FeedRecord => {
  const out: Record<string, unknown> = {}
  for (const field of offerFields) {
    const path = mapping.fields?.[field]
    let value = path !== undefined ? readPath(raw, path) : readPath(raw, field)
    if (field === "nativeId" && path === undefined && missing(value)) value = readPath(raw, "id")
    if (missing(value) && mapping.defaults?.[field] !== undefined) value = mapping.defaults[field]
    out[field] = value
  }
  return out
}
