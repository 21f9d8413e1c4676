/**
 * `copy` (CopyObject; `allowOverwrite: false` is a HEAD first: S3 has no conditional copy) and `move`
 * (copy, then delete the source: `move_left_a_copy` when that delete fails). `makeMove` is the same for
 * every layer.
 *
 * @module
 */
import { CopyObjectCommand } from "@aws-sdk/client-s3"
import { Effect } from "effect"
import { BlobError } from "../../shared/BlobError.ts"
import { checkCopy } from "./arguments.ts"
import type { S3Context } from "./client.ts"
import type { Conditional } from "./conditional.ts"
import { encodePath, readOnlyRefusal, requirePath } from "./keys.ts"
import type { Reads } from "./reads.ts"
import type { CopyOptions, ObjectInfo } from "./types.ts"

export const makeCopy = (
  s3: S3Context,
  { exists, head }: Pick<Reads, "exists" | "head">,
  { alreadyExists }: Pick<Conditional, "alreadyExists">
) => {
  const { Bucket, token, send, retried } = s3

  const copyObject = (from: string, to: string, options: CopyOptions) =>
    Effect.gen(function*() {
      yield* requirePath(from)
      yield* requirePath(to)
      yield* checkCopy(from, to, options)
      if (token.readOnly) return yield* readOnlyRefusal("Copying")
      if (options.allowOverwrite !== true && (yield* exists(to))) return yield* alreadyExists(to)
      yield* retried(send(from, (client, signal) =>
        client.send(
          new CopyObjectCommand({
            Bucket,
            Key: to,
            CopySource: `${Bucket}/${encodePath(from)}`,
            ...(options.contentType === undefined
              ? {}
              : { ContentType: options.contentType, MetadataDirective: "REPLACE" as const })
          }),
          { abortSignal: signal }
        )))
      return yield* head(to)
    })

  const copy = Effect.fn("Bucket.copy")(function*(from: string, to: string, options: CopyOptions = {}) {
    return yield* copyObject(from, to, options)
  })

  return { copyObject, copy }
}

/** What `move` is built on. */
export interface MovePrimitives {
  readonly info: (path: string) => Effect.Effect<ObjectInfo, BlobError>
  readonly copyObject: (from: string, to: string, options: CopyOptions) => Effect.Effect<ObjectInfo, BlobError>
  readonly deleteOne: (path: string) => Effect.Effect<unknown, BlobError>
}

export const makeMove = ({ copyObject, deleteOne, info }: MovePrimitives) => {
  const move = Effect.fn("Bucket.move")(function*(from: string, to: string, options: CopyOptions = {}) {
    if (from === to) return yield* info(from)
    const copied = yield* copyObject(from, to, options)
    yield* deleteOne(from).pipe(
      Effect.mapError((cause) =>
        new BlobError("move_left_a_copy", {
          message: `${from} was copied to ${to} but could not be deleted`,
          hint: "The destination is kept; delete the source again",
          cause
        })
      )
    )
    return copied
  })
  return move
}
