/**
 * CarOffer is shared with the mobile client: this test fails when the schema drifts from the spec's
 * table (spec/1 "CarOffer", copied verbatim below): a field added, removed or renamed, a type or a
 * nullability changed.
 */
import { assert, describe, it } from "@effect/vitest"
import { CarOffer, ListingsApi, SourceHealth } from "@svc/schema"
import { Effect, Schema } from "effect"
import { OpenApi } from "effect/http-api"

const specCarOffer = `
| sourceId | string | yes | Identifier of the source |
| id | string | yes | Stable, namespaced: \`<source_id>:<native_id>\`. Equals the stored offers.id value that list responses return |
| title | string | yes | Listing title |
| make | string | yes | Manufacturer |
| model | string | yes | Model |
| price | number | yes | Listed price |
| currency | string | yes | One of PLN, EUR, USD |
| fuel | string | yes | Fuel type |
| transmission | string | yes | Transmission type |
| region | string | yes | Geographic region |
| originalUrl | string | yes | Link to the listing at the original marketplace |
| year | number or null | no | Model year |
| mileage | number or null | no | Odometer reading (kilometres, as the maxMileageKm filter implies) |
| power | number or null | no | Engine power |
| location | string or null | no | Location description |
| latitude | number or null | no | For map display |
| longitude | number or null | no | For map display |
| images | array of string | yes | Image URLs; may be empty |
| thumbnail | string or null | no | Thumbnail URL |
| updatedAt | string or null | no | ISO 8601 timestamp |
| expiresAt | string or null | no | ISO 8601 timestamp |
`

const specSourceHealth = `
| id | string | Source identifier |
| enabled | boolean | Whether the source is active |
| offerCount | number or null | Offers held from this source |
| lastCompletedAtEpochMs | number or null | Time of the last completed ingest, epoch milliseconds |
| lastCompletedOk | boolean or null | Whether the last completed ingest succeeded |
| lastOffersUpserted | number or null | Offers upserted in the last run |
`

const parseTable = (table: string) =>
  table.trim().split("\n").map((line) => {
    const [name, type] = line.split("|").slice(1).map((cell) => cell.trim())
    return { name: name!, type: type! }
  })

/** The JSON types a JSON Schema node admits ("integer" counts as "number"), resolving $refs. */
const typesOf = (node: any, defs: Record<string, any>): Array<string> => {
  if (node.$ref) return typesOf(defs[node.$ref.split("/").pop()], defs)
  if (node.anyOf) return node.anyOf.flatMap((sub: any) => typesOf(sub, defs))
  if (node.type === "array") return [`array of ${typesOf(node.items, defs).join(" or ")}`]
  if (node.type === "integer") return ["number"]
  return [node.type]
}

const describeSchema = (schema: Schema.Top) => {
  const document = Schema.toJsonSchemaDocument(schema)
  const defs = document.definitions as Record<string, any>
  const root = defs[(document.schema as any).$ref.split("/").pop()]
  return { root, defs }
}

const checkAgainst = (schema: Schema.Top, table: string) => {
  const { root, defs } = describeSchema(schema)
  const spec = parseTable(table)
  assert.deepStrictEqual(Object.keys(root.properties), spec.map((field) => field.name), "field names and order")
  // every field is always present on the wire (optional ones as null)
  assert.deepStrictEqual([...root.required].sort(), spec.map((field) => field.name).sort(), "all keys present")
  for (const field of spec) {
    const types = typesOf(root.properties[field.name], defs).sort()
    const expected = field.type.split(" or ").map((t) => t.trim()).sort()
    assert.deepStrictEqual(types, expected, `type of ${field.name}`)
  }
}

describe("contract", () => {
  it("CarOffer matches spec/1's table: names, types, nullability", () => {
    checkAgainst(CarOffer, specCarOffer)
    const { root, defs } = describeSchema(CarOffer)
    const currency = root.properties.currency.$ref ? defs[root.properties.currency.$ref.split("/").pop()] : root.properties.currency
    assert.deepStrictEqual([...currency.enum].sort(), ["EUR", "PLN", "USD"])
  })

  it("the source health record matches spec/1's table", () => {
    checkAgainst(SourceHealth, specSourceHealth)
  })

  it("a drifted CarOffer would fail the check", () => {
    const drifted = Schema.Struct({ ...CarOffer.fields, year: Schema.Finite })
    assert.throws(() => checkAgainst(drifted, specCarOffer))
    const renamed = Schema.Struct({ ...CarOffer.fields, imageUrls: Schema.Array(Schema.String) })
    assert.throws(() => checkAgainst(renamed, specCarOffer))
  })

  it.effect("the OpenAPI document has the seven endpoints' API routes", () =>
    Effect.sync(() => {
      const spec = OpenApi.fromApi(ListingsApi)
      for (const path of ["/health", "/offers", "/offers/{id}", "/sources", "/admin/ingest", "/import-services"]) {
        assert.property(spec.paths, path)
      }
    }))
})
