/**
 * Schemas of the `docs` tables' values as the Postgres driver returns them, for decoding rows
 * (`SqlSchema`): nothing read from the database is cast.
 */
import { Schema, SchemaTransformation } from "effect"

/** A `bigserial` id (the driver returns a bigint) as the string the services pass around. */
export const RowId = Schema.Union([Schema.String, Schema.BigInt, Schema.Number]).pipe(
  Schema.decodeTo(Schema.String, SchemaTransformation.transform({ decode: (id) => String(id), encode: (id) => id }))
)

/** A `timestamptz`. */
export const Timestamp = Schema.Date

/** `{ id }` of `RETURNING id`. */
export const IdRow = Schema.Struct({ id: RowId })
