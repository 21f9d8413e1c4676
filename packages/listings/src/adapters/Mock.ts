/**
 * The mock source: a deterministic demo set (default 3,000 offers) across makes, PLN/EUR/USD,
 * regions with coordinates, and image URLs, for development and demos. It runs only with
 * `ENABLE_MOCK_SOURCE=true`. Ids and contents are stable within a day (the same seed, timestamps
 * anchored on the day), so repeated runs do not rewrite rows; about one offer in 25 repeats an
 * earlier car under another id, as marketplaces do, to show de-duplication.
 * Its image URLs are under the reserved `.example` domain: they are registered (GET /images
 * redirects to them) but never fetched: the image cacher skips every image of a mock source.
 */
import { Effect, Stream } from "effect"
import type { FeedRecord } from "../Normalize.ts"
import type { SourceConfig } from "../Sources.ts"
import type { SourceAdapter } from "./SourceAdapter.ts"

const models: ReadonlyArray<readonly [string, ReadonlyArray<string>, number]> = [
  ["Toyota", ["Corolla", "Yaris", "RAV4", "C-HR", "Camry", "Auris"], 70_000],
  ["Volkswagen", ["Golf", "Passat", "Polo", "Tiguan", "Touran", "T-Roc"], 75_000],
  ["Škoda", ["Octavia", "Fabia", "Superb", "Kodiaq", "Karoq"], 65_000],
  ["BMW", ["320d", "520d", "X3", "X5", "118i", "i3"], 120_000],
  ["Mercedes-Benz", ["C 200", "E 220d", "A 180", "GLC 300", "CLA 200"], 130_000],
  ["Audi", ["A4", "A6", "A3", "Q5", "Q3"], 115_000],
  ["Ford", ["Focus", "Fiesta", "Mondeo", "Kuga", "Mustang"], 60_000],
  ["Opel", ["Astra", "Corsa", "Insignia", "Mokka"], 50_000],
  ["Renault", ["Clio", "Megane", "Captur", "Kadjar"], 50_000],
  ["Hyundai", ["i30", "Tucson", "Kona", "i20"], 65_000],
  ["Kia", ["Ceed", "Sportage", "Niro", "Picanto"], 65_000],
  ["Tesla", ["Model 3", "Model Y", "Model S"], 160_000],
  ["Volvo", ["XC60", "V60", "XC40", "S90"], 125_000],
  ["Peugeot", ["308", "208", "3008", "508"], 55_000],
  ["Fiat", ["500", "Tipo", "Panda"], 40_000],
  ["Dacia", ["Duster", "Sandero", "Logan"], 45_000],
  ["Citroën", ["C3", "C4", "C5 Aircross"], 50_000],
  ["Mazda", ["3", "6", "CX-5", "MX-5"], 75_000]
]

interface Region {
  readonly region: string
  readonly currency: "PLN" | "EUR" | "USD"
  readonly rate: number
  readonly cities: ReadonlyArray<readonly [string, number, number]>
}

const regions: ReadonlyArray<Region> = [
  { region: "mazowieckie", currency: "PLN", rate: 1, cities: [["Warszawa", 52.2297, 21.0122], ["Radom", 51.4027, 21.1471], ["Płock", 52.5463, 19.7065]] },
  { region: "malopolskie", currency: "PLN", rate: 1, cities: [["Kraków", 50.0647, 19.945], ["Tarnów", 50.0121, 20.9858], ["Nowy Sącz", 49.6218, 20.6971]] },
  { region: "slaskie", currency: "PLN", rate: 1, cities: [["Katowice", 50.2649, 19.0238], ["Gliwice", 50.2945, 18.6714], ["Częstochowa", 50.8118, 19.1203]] },
  { region: "wielkopolskie", currency: "PLN", rate: 1, cities: [["Poznań", 52.4064, 16.9252], ["Kalisz", 51.7611, 18.091]] },
  { region: "dolnoslaskie", currency: "PLN", rate: 1, cities: [["Wrocław", 51.1079, 17.0385], ["Legnica", 51.207, 16.1553]] },
  { region: "pomorskie", currency: "PLN", rate: 1, cities: [["Gdańsk", 54.352, 18.6466], ["Gdynia", 54.5189, 18.5305]] },
  { region: "lodzkie", currency: "PLN", rate: 1, cities: [["Łódź", 51.7592, 19.456]] },
  { region: "zachodniopomorskie", currency: "PLN", rate: 1, cities: [["Szczecin", 53.4285, 14.5528], ["Koszalin", 54.1944, 16.1722]] },
  { region: "germany", currency: "EUR", rate: 0.23, cities: [["Berlin", 52.52, 13.405], ["Hamburg", 53.5511, 9.9937], ["München", 48.1351, 11.582], ["Köln", 50.9375, 6.9603]] },
  { region: "netherlands", currency: "EUR", rate: 0.23, cities: [["Rotterdam", 51.9244, 4.4777], ["Utrecht", 52.0907, 5.1214]] },
  { region: "belgium", currency: "EUR", rate: 0.23, cities: [["Antwerpen", 51.2194, 4.4025], ["Bruxelles", 50.8503, 4.3517]] },
  { region: "france", currency: "EUR", rate: 0.23, cities: [["Lyon", 45.764, 4.8357], ["Paris", 48.8566, 2.3522]] },
  { region: "usa", currency: "USD", rate: 0.25, cities: [["Newark, NJ", 40.7357, -74.1724], ["Savannah, GA", 32.0809, -81.0912], ["Long Beach, CA", 33.7701, -118.1937]] }
]

const fuels = ["petrol", "petrol", "diesel", "diesel", "hybrid", "lpg"] as const
const transmissions = ["manual", "manual", "automatic"] as const

/** mulberry32: small, fast, deterministic. */
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

/** The demo offers (as feed records), anchored on `now`'s day. */
export const demoRecords = (count: number, now: Date): Array<FeedRecord> => Array.from(demoRecordsLazily(count, now))

/**
 * The same, made one at a time as they are read: a run starts writing at once instead of after making
 * all of them (0.45 s for 100,000), and never holds them all.
 */
function* demoRecordsLazily(count: number, now: Date): Generator<FeedRecord> {
  const next = random(20260101)
  const pick = <A>(items: ReadonlyArray<A>): A => items[Math.floor(next() * items.length)]!
  const day = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate())
  let previous: Record<string, unknown> | undefined
  for (let i = 0; i < count; i++) {
    const nativeId = `demo-${String(100000 + i)}`
    const [make, makeModels, basePrice] = pick(models)
    const model = pick(makeModels)
    const where = pick(regions)
    const [city, lat, lon] = pick(where.cities)
    const year = 2008 + Math.floor(next() * 17)
    const age = 2025 - year
    const mileage = Math.round((age * 14_000 + next() * 40_000) / 100) * 100
    const fuel = model.startsWith("Model") || model === "i3" ? "electric" : pick(fuels)
    const pricePln = Math.max(8_000, basePrice * (1 - age * 0.06) * (0.8 + next() * 0.4))
    const price = Math.round((pricePln * where.rate) / 100) * 100
    const photos = 1 + Math.floor(next() * 5)
    const record: Record<string, unknown> = {
      nativeId,
      title: `${make} ${model} ${year}, ${fuel}, ${(mileage / 1000).toFixed(0)} tys. km`,
      make,
      model,
      price,
      currency: where.currency,
      fuel,
      transmission: fuel === "electric" ? "automatic" : pick(transmissions),
      region: where.region,
      originalUrl: `https://marketplace.example/offers/${nativeId}`,
      year,
      mileage,
      power: Math.round(75 + next() * 250),
      location: city,
      latitude: Math.round((lat + (next() - 0.5) * 0.2) * 1e5) / 1e5,
      longitude: Math.round((lon + (next() - 0.5) * 0.2) * 1e5) / 1e5,
      images: Array.from({ length: photos }, (_, n) => `https://images.marketplace.example/${nativeId}/${n + 1}.jpg`),
      updatedAt: new Date(day - Math.floor(next() * 30 * 24 * 60) * 60_000).toISOString(),
      expiresAt: new Date(day + (30 + Math.floor(next() * 30)) * 24 * 3600_000).toISOString()
    }
    // Now and then the same car listed again elsewhere: a duplicate for de-duplication.
    if (previous !== undefined && i % 25 === 24) {
      for (const field of ["make", "model", "year", "mileage", "price", "currency", "fuel", "transmission"]) {
        record[field] = previous[field]
      }
      record["title"] = `${String(previous["make"])} ${String(previous["model"])} ${String(previous["year"])} (re-listed)`
    }
    previous = record
    yield record
  }
}

export const make = (config: SourceConfig): Effect.Effect<SourceAdapter> =>
  Effect.succeed({
    read: Stream.suspend(() => Stream.fromIterable(demoRecordsLazily(config.count ?? 3000, new Date())))
  })
