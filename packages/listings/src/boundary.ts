/**
 * A real (Postgres) layer's boundary: a database failure (`SqlError`, see `dieOnSqlError` in
 * @svc/platform) and a row that does not decode (`SchemaError`: a bug of this code, not something a
 * caller handles) are defects from here on. Each real layer applies it once to each method it
 * exposes, so no public signature of listings carries either.
 */
import { dieOnSqlError } from "@svc/platform"
import { Effect, Schema } from "effect"

export const atBoundary = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<Exclude<E, Schema.SchemaError>, { readonly _tag: "SqlError" }>, R> =>
  dieOnSqlError(
    Effect.catchIf(
      effect,
      (error): error is Extract<E, Schema.SchemaError> => Schema.isSchemaError(error),
      Effect.die
    ) as Effect.Effect<A, Exclude<E, Schema.SchemaError>, R>
  )
