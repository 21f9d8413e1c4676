/**
 * Conditional writes' refusals: `already_exists` (If-None-Match: *, with the occupant's etag and size)
 * and `conflict` (If-Match) from storage's 412 / 409 answers.
 *
 * @module
 */
import { Effect } from "effect"
import { BlobError } from "../../shared/BlobError.ts"
import type { Reads } from "./reads.ts"

export const makeConditional = ({ head }: Pick<Reads, "head">) => {
  /** already_exists with the occupant's etag and size (when it can still be read). */
  const alreadyExists = (path: string, cause?: unknown) =>
    head(path).pipe(
      Effect.map((existing) =>
        new BlobError("already_exists", {
          message: `${path} already exists`,
          hint: "Pass allowOverwrite: true to replace it",
          etag: existing.etag,
          size: existing.size,
          cause
        })
      ),
      Effect.catch(() =>
        Effect.succeed(new BlobError("already_exists", { message: `${path} already exists`, cause }))
      ),
      Effect.flatMap(Effect.fail)
    )

  const conditionalFailure = (path: string, conditional: "create" | "match" | undefined) => (error: BlobError) => {
    const precondition = error.code === "conflict" ||
      (error.code === "request_failed" && error.status === 409)
    if (!precondition) return Effect.fail(error)
    if (conditional === "create") return alreadyExists(path, error)
    return Effect.fail(
      new BlobError("conflict", {
        message: `${path} changed since it was read`,
        hint: "Read it again and retry",
        cause: error
      })
    )
  }

  return { alreadyExists, conditionalFailure }
}

export type Conditional = ReturnType<typeof makeConditional>
