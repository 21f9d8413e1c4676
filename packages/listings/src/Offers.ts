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
import { atDatabaseBoundary } from "@svc/platform"
import { COMPLETE_LIMIT, DEFAULT_PAGE_SIZE, type CarOffer, OfferNotFound, type OfferSort, ResultTooLarge } from "@svc/schema"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema, type Statement } from "effect/sql"
import { ranksAboveSql } from "./Dedup.ts"
import { ListingsConfig } from "./ListingsConfig.ts"
import {
  answerOf,
  filterKeyList,
  filterKeyOf,
  ignoredParametersWarning,
  offerColumns,
  OfferDbRow,
  type OfferSearch,
  type OffersAnswer,
  splitList,
  toOffer,
  unknownSourcesWarning
} from "./OfferAnswers.ts"
import { Remembered } from "./Remembered.ts"
import { queryWarning, toPrefixQuery } from "./SearchWords.ts"
import { Sources } from "./Sources.ts"
import { ListingsMemory } from "./memory/ListingsMemory.ts"
import { makeMemoryOffers } from "./memory/offers.ts"

export { type OfferSearch, type OffersAnswer, splitList }

/** A duplicate `d` ranks above the candidate `o` (Dedup.ts). */
const RANKS_ABOVE = ranksAboveSql("d", "o")

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

/** What a remembered answer costs besides its JSON and key: the entry, its tag, the map's slot. */
const ENTRY_BYTES = 256
/** Match counts remembered per filter: paging through one filter then costs only the page. */
const COUNT_CACHE_ENTRIES = 2_000

/** A page's rows: the version the statement read, the count (when counted), and the offers or one row of nulls. */
// `version` is a bigint column: compared as the driver gives it, remembered as text
const Version = Schema.Union([Schema.String, Schema.BigInt, Schema.Number])
type Version = typeof Version.Type
const Versioned = Schema.Struct({ version: Version })
const Counted = Schema.Struct({ version: Version, total: Schema.Number })
const NoOffer = Schema.Struct({ id: Schema.Null })
const pageRows = <F extends Schema.Struct.Fields>(head: Schema.Struct<F>) =>
  Schema.Union([Schema.Struct({ ...head.fields, ...OfferDbRow.fields }), Schema.Struct({ ...head.fields, ...NoOffer.fields })])
const VersionedPage = pageRows(Versioned)
const CountedPage = pageRows(Counted)
const isOffer = <R extends { readonly id: string | null }>(row: R): row is Extract<R, { readonly id: string }> => row.id !== null

export class Offers extends Context.Service<Offers, {
  readonly search: (search: OfferSearch) => Effect.Effect<OffersAnswer, ResultTooLarge>
  readonly byId: (id: string) => Effect.Effect<CarOffer, OfferNotFound>
}>()("@svc/listings/Offers") {
  static readonly layer = Layer.effect(
    Offers,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const sources = yield* Sources
      const { answerCacheBytes, publicBaseUrl } = yield* ListingsConfig
      const offerOf = toOffer(publicBaseUrl)
      const counts = new Remembered<{ readonly version: Version; readonly count: number }>(COUNT_CACHE_ENTRIES, () => 1)
      // answers remembered per request, weighed by what they hold: the JSON, the request as key (two
      // bytes a character) and the entry itself
      const answers = new Remembered<{ readonly version: Version; readonly answer: OffersAnswer | "too_large" }>(
        answerCacheBytes,
        (key, entry) => key.length * 2 + ENTRY_BYTES + (entry.answer === "too_large" ? 0 : entry.answer.json.byteLength)
      )
      const keyOf = (fragment: Statement.Fragment) => {
        const [text, params] = sql`${fragment}`.compile()
        return `${text}\u0000${JSON.stringify(params)}`
      }
      const versionNow = SqlSchema.findAll({
        Request: Schema.Void,
        Result: Versioned,
        execute: () => sql`SELECT version FROM listings.offers_version`
      })().pipe(Effect.map((rows) => rows[0]?.version))

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
        // the filters compare keys (SearchWords.filterKey): "skoda" finds "Škoda"; `make_key` is indexed
        const make = filterKeyOf(search.make)
        if (make !== undefined) where.push(sql`make_key = ${make}`)
        const model = filterKeyOf(search.model)
        if (model !== undefined) where.push(sql`model_key = ${model}`)
        if (search.minYear !== undefined) where.push(sql`year >= ${search.minYear}`)
        if (search.maxYear !== undefined) where.push(sql`year <= ${search.maxYear}`)
        if (search.maxMileageKm !== undefined) where.push(sql`mileage <= ${search.maxMileageKm}`)
        for (
          const [column, value] of [
            ["fuel_key", search.fuelTypes],
            ["transmission_key", search.transmissions],
            ["region_key", search.regions]
          ] as const
        ) {
          const list = filterKeyList(value)
          if (list.length > 0) {
            keyClosed = false
            where.push(sql`${sql(column)} IN ${sql.in(list)}`)
          }
        }
        const warnings: Array<string> = []
        const sourceIds = splitList(search.sources)
        if (sourceIds.length > 0) {
          keyClosed = false
          const warning = unknownSourcesWarning(sourceIds, sources.all.map((source) => source.id))
          if (warning !== undefined) warnings.push(warning)
          where.push(sql`source_id IN ${sql.in(sourceIds)}`)
        }
        for (const warning of [queryWarning(search.query), ignoredParametersWarning(search.ignoredParameters)]) {
          if (warning !== undefined) warnings.push(warning)
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
        const answer = (rows: ReadonlyArray<OfferDbRow>, count: number) => answerOf(rows.map(offerOf), count, warnings)
        const limit = search.limit ?? DEFAULT_PAGE_SIZE
        const offset = search.offset ?? 0
        // The statements of this request run unprepared, so each is planned for its own values: a prepared one
        // switches to a plan made without them after five runs, and for `complete=true` with a mileage
        // bound that plan walked every offer newest first (135 ms) where the bound's index reads 5,000
        // rows and sorts them (7.5 ms).
        const statement = search.complete === true
          ? sql`SELECT ${sql.literal(offerColumns)} FROM listings.offers o WHERE ${matching}
              ORDER BY ${order} LIMIT ${COMPLETE_LIMIT + 1}`
          : sql`SELECT ${sql.literal(offerColumns)} FROM listings.offers o WHERE ${matching}
              ORDER BY ${order} LIMIT ${limit} OFFSET ${offset}`
        const remember = (version: Version | undefined, answer: OffersAnswer | "too_large") => {
          if (version !== undefined) answers.set(answerKey, { version, answer })
        }

        if (search.complete === true) {
          const rows = yield* SqlSchema.findAll({
            Request: Schema.Void,
            Result: VersionedPage,
            execute: () => sql`
            SELECT v.version, p.* FROM listings.offers_version v LEFT JOIN LATERAL (${statement}) p ON true`.unprepared
          })()
          const offers = rows.filter(isOffer)
          if (offers.length > COMPLETE_LIMIT) {
            remember(rows[0]?.version, "too_large")
            return yield* new ResultTooLarge({ limit: COMPLETE_LIMIT })
          }
          const complete = answer(offers, offers.length)
          remember(rows[0]?.version, complete)
          return complete
        }

        // A count remembered at the version this statement's snapshot reads is exact: only the page.
        const countKey = keyOf(matching)
        const rememberedCount = counts.get(countKey)
        if (rememberedCount !== undefined && (version === undefined || version === rememberedCount.version)) {
          const rows = yield* SqlSchema.findAll({
            Request: Schema.Void,
            Result: VersionedPage,
            execute: () => sql`
            SELECT v.version, p.* FROM listings.offers_version v LEFT JOIN LATERAL (${statement}) p ON true`.unprepared
          })()
          if (rows[0]?.version === rememberedCount.version) {
            const page = answer(rows.filter(isOffer), rememberedCount.count)
            remember(rows[0].version, page)
            return page
          }
        }
        // Otherwise count and page in one statement (one snapshot), and remember both.
        const rows = yield* SqlSchema.findAll({
          Request: Schema.Void,
          Result: CountedPage,
          execute: () => sql`
          SELECT v.version, c.total::int AS total, p.*
          FROM listings.offers_version v
          CROSS JOIN (SELECT count(*) AS total FROM listings.offers o WHERE ${matching}) c
          LEFT JOIN LATERAL (${statement}) p ON true`.unprepared
        })()
        const first = rows[0]
        const count = first?.total ?? 0
        if (first !== undefined) counts.set(countKey, { version: first.version, count })
        const page = answer(rows.filter(isOffer), count)
        remember(first?.version, page)
        return page
      })

      const byId = Effect.fn("Offers.byId")(function*(id: string) {
        const rows = yield* SqlSchema.findAll({
          Request: Schema.String,
          Result: OfferDbRow,
          execute: (id) => sql`SELECT ${sql.literal(offerColumns)} FROM listings.offers WHERE id = ${id}`
        })(id)
        const row = rows[0]
        if (row === undefined) return yield* new OfferNotFound({ id })
        return offerOf(row)
      })

      return Offers.of({
        search: (request) => atDatabaseBoundary(search(request)),
        byId: (id) => atDatabaseBoundary(byId(id))
      })
    })
  )
  /** Over ListingsMemory (tests): the same filters, de-duplication, sorts and paging; nothing remembered. */
  static readonly layerMemory = Layer.effect(
    Offers,
    Effect.gen(function*() {
      const tables = yield* ListingsMemory
      const sources = yield* Sources
      const { publicBaseUrl } = yield* ListingsConfig
      return Offers.of(makeMemoryOffers(tables, sources.all.map((source) => source.id), publicBaseUrl))
    })
  )

}
