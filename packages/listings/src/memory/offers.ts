/**
 * Offers over ListingsMemory: the reads GET /offers and GET /offers/:id answer, with the same
 * filters, de-duplication (Dedup.ts's order among the matching offers), sorts, paging, `count` and
 * `complete` limit as the SQL. Nothing is remembered: every request reads the tables.
 */
import { COMPLETE_LIMIT, DEFAULT_PAGE_SIZE, OfferNotFound, type OfferSort, ResultTooLarge } from "@svc/schema"
import { Effect } from "effect"
import { compareWinners } from "../Dedup.ts"
import {
  answerOf,
  filterKeyList,
  filterKeyOf,
  ignoredParametersWarning,
  type OfferDbRow,
  type OfferSearch,
  splitList,
  toOffer,
  unknownSourcesWarning
} from "../OfferAnswers.ts"
import { queryWarning, toPrefixQuery } from "../SearchWords.ts"
import type { MemoryOffer, MemoryTables } from "./ListingsMemory.ts"

const asDbRow = (offer: MemoryOffer): OfferDbRow => ({
  ...offer.row,
  updated_at: new Date(offer.updatedAt),
  expires_at: offer.expiresAt === null ? null : new Date(offer.expiresAt)
})

const rank = (offer: MemoryOffer) => ({ updatedAt: offer.updatedAt, id: offer.row.id })

/** `a` before `b` when nulls go last and the order is ascending (`sign` 1) or descending (-1). */
const nullsLast = (a: number | null, b: number | null, sign: 1 | -1) =>
  a === b ? 0 : a === null ? 1 : b === null ? -1 : sign * (a - b)

const orderOf = (sort: OfferSort) => (a: MemoryOffer, b: MemoryOffer): number => {
  const newest = compareWinners(rank(a), rank(b))
  switch (sort) {
    case "MILEAGE_ASC":
      return nullsLast(a.row.mileage, b.row.mileage, 1) || newest
    case "YEAR_DESC":
      return nullsLast(a.row.year, b.row.year, -1) || newest
    default:
      return newest
  }
}

/** Every query word is the prefix of a word of the document (a prefix tsquery of ANDed words). */
const matchesWords = (document: ReadonlyArray<string>, words: ReadonlyArray<string>) =>
  words.every((word) => document.some((candidate) => candidate.startsWith(word)))

export const makeMemoryOffers = (tables: MemoryTables, knownSources: ReadonlyArray<string>, publicBaseUrl: string) => {
  const offerOf = toOffer(publicBaseUrl)

  const search = (search: OfferSearch) =>
    Effect.gen(function*() {
      const tsquery = search.query === undefined ? "" : toPrefixQuery(search.query)
      const words = tsquery === null || tsquery === "" ? [] : tsquery.split(" & ").map((word) => word.slice(0, -2))
      const make = filterKeyOf(search.make)
      const model = filterKeyOf(search.model)
      const fuels = filterKeyList(search.fuelTypes)
      const transmissions = filterKeyList(search.transmissions)
      const regions = filterKeyList(search.regions)
      const sourceIds = splitList(search.sources)
      const warning = sourceIds.length === 0 ? undefined : unknownSourcesWarning(sourceIds, knownSources)
      const { maxMileageKm, maxYear, minYear } = search
      const matches = [...tables.offers.values()].filter(({ removedAt, row }) =>
        removedAt === null &&
        tsquery !== null &&
        (words.length === 0 || matchesWords(row.search.split(" "), words)) &&
        (make === undefined || row.make_key === make) &&
        (model === undefined || row.model_key === model) &&
        (minYear === undefined || (row.year !== null && row.year >= minYear)) &&
        (maxYear === undefined || (row.year !== null && row.year <= maxYear)) &&
        (maxMileageKm === undefined || (row.mileage !== null && row.mileage <= maxMileageKm)) &&
        (fuels.length === 0 || fuels.includes(row.fuel_key)) &&
        (transmissions.length === 0 || transmissions.includes(row.transmission_key)) &&
        (regions.length === 0 || regions.includes(row.region_key)) &&
        (sourceIds.length === 0 || sourceIds.includes(row.source_id))
      )
      let shown = matches
      if (search.dedup ?? true) {
        const best = new Map<string, MemoryOffer>()
        for (const offer of matches) {
          const current = best.get(offer.row.dedup_key)
          if (current === undefined || compareWinners(rank(offer), rank(current)) < 0) best.set(offer.row.dedup_key, offer)
        }
        shown = [...best.values()]
      }
      shown.sort(orderOf(search.sort ?? "NEWEST"))
      const warnings = [warning, queryWarning(search.query), ignoredParametersWarning(search.ignoredParameters)]
        .filter((text) => text !== undefined)
      if (search.complete === true) {
        if (shown.length > COMPLETE_LIMIT) return yield* new ResultTooLarge({ limit: COMPLETE_LIMIT })
        return answerOf(shown.map((offer) => offerOf(asDbRow(offer))), shown.length, warnings)
      }
      const offset = search.offset ?? 0
      const page = shown.slice(offset, offset + (search.limit ?? DEFAULT_PAGE_SIZE))
      return answerOf(page.map((offer) => offerOf(asDbRow(offer))), shown.length, warnings)
    })

  const byId = (id: string) =>
    Effect.suspend(() => {
      const offer = tables.offers.get(id)
      return offer === undefined ? Effect.fail(new OfferNotFound({ id })) : Effect.succeed(offerOf(asDbRow(offer)))
    })

  return { search, byId }
}
