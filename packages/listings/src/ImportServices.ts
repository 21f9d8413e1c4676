/**
 * GET /import-services: the directory of import and logistics companies (`listings.import_services`,
 * seeded by migration 0006). `region` is case-insensitive equality; no region lists every company.
 */
import { atDatabaseBoundary } from "@svc/platform"
import { ImportService } from "@svc/schema"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"

const byRegionThenName = (a: ImportService, b: ImportService) =>
  a.region < b.region ? -1 : a.region > b.region ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0

export class ImportServices extends Context.Service<ImportServices, {
  /** The companies of `region` (all when undefined or blank), by region, then name. */
  readonly list: (region: string | undefined) => Effect.Effect<ReadonlyArray<ImportService>>
}>()("@svc/listings/ImportServices") {
  static readonly layer = Layer.effect(
    ImportServices,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const find = SqlSchema.findAll({
        Request: Schema.String,
        Result: ImportService,
        execute: (region) =>
          sql`
            SELECT id, name, region, city, services, website, phone, email, description
            FROM listings.import_services
            ${region ? sql`WHERE lower(region) = ${region.toLowerCase()}` : sql``}
            ORDER BY region, name`
      })
      return ImportServices.of({ list: (region) => atDatabaseBoundary(find(region?.trim() ?? "")) })
    })
  )

  /** The given companies, in memory (tests). */
  static readonly layerMemory = (services: ReadonlyArray<ImportService> = []) =>
    Layer.succeed(
      ImportServices,
      ImportServices.of({
        list: (region) =>
          Effect.sync(() => {
            const wanted = region?.trim().toLowerCase() ?? ""
            return services.filter((service) => wanted === "" || service.region.toLowerCase() === wanted)
              .sort(byRegionThenName)
          })
      })
    )
}
