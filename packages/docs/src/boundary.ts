/**
 * A real (Postgres) layer's boundary: a database failure (`SqlError`, see `dieOnSqlError` in
 * @svc/platform), a row that does not decode (`SchemaError`) and a statement that returned no row
 * where one is certain (`NoSuchElementError`, e.g. an `INSERT … RETURNING`) are defects from here on:
 * bugs or outages, nothing a caller handles. Each real layer applies it once to each method it
 * exposes, so no public signature of the docs services carries any of them.
 */
import { dieOnSqlError } from "@svc/platform"
import { Cause, Effect, Schema } from "effect"

type Unexpected = Schema.SchemaError | Cause.NoSuchElementError

export const atBoundary = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<Exclude<E, Unexpected>, { readonly _tag: "SqlError" }>, R> =>
  dieOnSqlError(
    Effect.catchIf(
      effect,
      (error): error is Extract<E, Unexpected> => Schema.isSchemaError(error) || Cause.isNoSuchElementError(error),
      Effect.die
    ) as Effect.Effect<A, Exclude<E, Unexpected>, R>
  )
