/**
 * What the listings contract suites (and the other tests) share: feed records, offer rows made by the
 * ingest's own normalization, the configuration layers both implementations read, and decoding an
 * `OffersAnswer`.
 */
import { OffersResponse } from "@svc/schema"
import { Effect, Layer, Result, Schema } from "effect"
import { ListingsConfig } from "../../src/ListingsConfig.ts"
import { type FeedImage, type FeedRecord, normalize, type OfferRow } from "../../src/Normalize.ts"
import type { OffersAnswer } from "../../src/OfferAnswers.ts"
import { OfferStore } from "../../src/OfferStore.ts"
import { Sources } from "../../src/Sources.ts"

/** Epoch ms of minute `m` of 2025-01-01 (feeds' `updatedAt`). */
export const minute = (m: number) => Date.UTC(2025, 0, 1) + m * 60_000

let counter = 0
/** A valid feed record (a Toyota Corolla, listed at minute n); override what the test is about. */
export const record = (overrides: Record<string, unknown> = {}): FeedRecord => {
  counter++
  return {
    nativeId: `n${counter}`,
    title: `Offer ${counter}`,
    make: "Toyota",
    model: "Corolla",
    price: 50_000 + counter,
    currency: "PLN",
    fuel: "petrol",
    transmission: "manual",
    region: "mazowieckie",
    originalUrl: `https://market.example/o/${counter}`,
    year: 2018,
    mileage: 100_000 + counter,
    power: 120,
    location: "Warszawa",
    latitude: 52.2,
    longitude: 21.0,
    images: [`https://img.example/${counter}/1.jpg`],
    updatedAt: new Date(minute(counter)).toISOString(),
    ...overrides
  }
}

/** The rows (and images) the ingest would write for these records of `sourceId`. */
export const rowsOf = (sourceId: string, records: ReadonlyArray<FeedRecord>) => {
  const rows: Array<OfferRow> = []
  const images: Array<FeedImage> = []
  for (const record of records) {
    const result = normalize(sourceId, record)
    if (Result.isFailure(result)) throw new Error(`bad fixture: ${result.failure}`)
    rows.push(result.success.row)
    images.push(...result.success.images)
  }
  return { rows, images }
}

/** Upserts the records as one batch of `sourceId`; returns how many were written. */
export const write = (sourceId: string, records: ReadonlyArray<FeedRecord>) =>
  Effect.gen(function*() {
    const { images, rows } = rowsOf(sourceId, records)
    return yield* (yield* OfferStore).upsertBatch(sourceId, rows, images)
  })

/** The sources both implementations know ("alpha", "beta"; "off" disabled). */
export const contractSources = Sources.layerStatic([
  { id: "alpha", adapter: "json", url: "http://127.0.0.1:9/alpha.json" },
  { id: "beta", adapter: "json", url: "http://127.0.0.1:9/beta.json" },
  { id: "off", adapter: "json", url: "http://127.0.0.1:9/off.json", enabled: false }
])

/** Configuration and sources; answers are not remembered, so every read reaches the store. */
export const contractConfig = Layer.mergeAll(
  ListingsConfig.layerTest({ publicBaseUrl: "http://listings.test", answerCacheBytes: 0 }),
  contractSources
)

/** The answer's JSON, decoded with the API's schema. */
export const decodeAnswer = (answer: OffersAnswer) =>
  Schema.decodeUnknownSync(OffersResponse)(JSON.parse(new TextDecoder().decode(answer.json)))
