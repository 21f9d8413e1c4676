/**
 * GET /import-services: the directory of import and logistics companies (`listings.import_services`,
 * seeded by migration 0006). `region` compares as GET /offers' `regions` does (SearchWords.filterKey:
 * case, accents and punctuation do not count); no region lists every company.
 */
import { atDatabaseBoundary } from "@svc/platform"
import { ImportService } from "@svc/schema"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { filterKeyOf } from "./OfferAnswers.ts"
import { filterKey } from "./SearchWords.ts"

const byRegionThenName = (a: ImportService, b: ImportService) =>
  a.region < b.region ? -1 : a.region > b.region ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0

/** The companies of `region` (SearchWords.filterKey equality), or all when it is undefined or blank. */
const inRegion = (region: string | undefined) => (services: ReadonlyArray<ImportService>): Array<ImportService> => {
  const wanted = filterKeyOf(region)
  return services.filter((service) => wanted === undefined || filterKey(service.region) === wanted)
}

export class ImportServices extends Context.Service<ImportServices, {
  /** The companies of `region` (all when undefined or blank), by region, then name. */
  readonly list: (region: string | undefined) => Effect.Effect<ReadonlyArray<ImportService>>
}>()("@svc/listings/ImportServices") {
  static readonly layer = Layer.effect(
    ImportServices,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      // a few dozen companies (seeded by migration): read whole, the region matched here by the filter rule
      const all = SqlSchema.findAll({
        Request: Schema.Void,
        Result: ImportService,
        execute: () =>
          sql`
            SELECT id, name, region, city, services, website, phone, email, description
            FROM listings.import_services
            ORDER BY region, name`
      })
      return ImportServices.of({ list: (region) => atDatabaseBoundary(Effect.map(all(), inRegion(region))) })
    })
  )

  /** The given companies, in memory (tests). */
  static readonly layerMemory = (services: ReadonlyArray<ImportService> = []) =>
    Layer.succeed(
      ImportServices,
      ImportServices.of({
        list: (region) =>
          Effect.sync(() => {
            return inRegion(region)(services).sort(byRegionThenName)
          })
      })
    )
}
