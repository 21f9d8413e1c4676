/**
 * `del`: one path (DeleteObject), a list of paths (DeleteObjects, batches of 1000), or every object
 * under a prefix (listed page by page). The shape of a target and `partial_delete` are the same for every
 * layer (`makeDel`); the S3 calls are `makeS3Delete`.
 *
 * @module
 */
import { DeleteObjectCommand, DeleteObjectsCommand } from "@aws-sdk/client-s3"
import { Effect } from "effect"
import { BlobError } from "../../shared/BlobError.ts"
import type { S3Context } from "./client.ts"
import { readOnlyRefusal, requirePath } from "./keys.ts"
import type { DeleteResult, DeleteTarget, ListOptions, ListResult } from "./types.ts"

/** What a list delete did: how many are gone, which were left, and why a whole batch was left. */
export interface ManyDeleted {
  readonly deleted: number
  readonly failed: ReadonlyArray<string>
  readonly refusal?: BlobError | undefined
}

/** What `del` is built on. */
export interface DeletePrimitives {
  readonly readOnly: boolean
  readonly deleteOne: (path: string) => Effect.Effect<unknown, BlobError>
  /**
   * Deletes what it can; `failed` lists the paths left behind, and `refusal` is storage's answer to a
   * batch it refused whole (the first such), which says why they were.
   */
  readonly deleteMany: (
    paths: ReadonlyArray<string>
  ) => Effect.Effect<ManyDeleted, BlobError>
  readonly list: (options: ListOptions) => Effect.Effect<ListResult, BlobError>
}

export const makeS3Delete = (s3: S3Context) => {
  const { Bucket, send, retried } = s3

  const deleteOne = (path: string) =>
    retried(send(path, (client, signal) =>
      client.send(new DeleteObjectCommand({ Bucket, Key: path }), { abortSignal: signal })
    ))

  const deleteMany = (paths: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      const failed: Array<string> = []
      let deleted = 0
      let refusal: BlobError | undefined
      for (let i = 0; i < paths.length; i += 1000) {
        const batch = paths.slice(i, i + 1000)
        const out = yield* retried(send(undefined, (client, signal) =>
          client.send(
            new DeleteObjectsCommand({
              Bucket,
              Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true }
            }),
            { abortSignal: signal }
          ))).pipe(
            Effect.map((o) => o.Errors ?? []),
            // a batch refused whole is left behind, with the refusal that says why (makeDel), unless
            // there is no bucket: then nothing was there to leave, and the bucket's not_found says what is wrong
            Effect.catchIf((error) => !BlobError.is(error, "not_found"), (error) => {
              refusal ??= error
              return Effect.succeed(batch.map((Key) => ({ Key })))
            })
          )
        const errors = out.map((e) => e.Key).filter((k): k is string => k !== undefined)
        failed.push(...errors)
        deleted += batch.length - errors.length
      }
      return { deleted, failed, refusal } satisfies ManyDeleted
    })

  return { deleteOne, deleteMany }
}

export const makeDel = (store: DeletePrimitives) => {
  const { deleteOne, deleteMany, list } = store

  /**
   * The outcome of a list or prefix delete that left paths behind. Storage refused it whole and nothing
   * was deleted: its own refusal (forbidden, unauthorized, unreachable: nothing changed, and `partial_delete`
   * listing every path named no cause). Else `partial_delete`, naming the refusal when there was one.
   */
  const leftBehind = ({ deleted, failed, refusal }: ManyDeleted) => {
    if (deleted === 0 && refusal !== undefined) return refusal
    return new BlobError("partial_delete", {
      message: `${failed.length} of ${failed.length + deleted} paths were not deleted` +
        (refusal === undefined ? "" : `; storage refused a batch: ${refusal.message}`),
      failed,
      ...(refusal === undefined ? {} : { cause: refusal })
    })
  }

  const del = Effect.fn("Bucket.del")(function*(target: DeleteTarget) {
    if (store.readOnly) return yield* readOnlyRefusal("Deleting")
    if (typeof target === "string") {
      yield* requirePath(target)
      yield* deleteOne(target)
      return { deleted: 1 } satisfies DeleteResult
    }
    if (Array.isArray(target)) {
      const paths = target as ReadonlyArray<unknown>
      for (const p of paths) yield* requirePath(p)
      const result = yield* deleteMany(paths as ReadonlyArray<string>)
      if (result.failed.length > 0) return yield* leftBehind(result)
      return { deleted: result.deleted } satisfies DeleteResult
    }
    if (typeof target === "object" && target !== null && typeof (target as { prefix?: unknown }).prefix === "string") {
      const { prefix, everything } = target as { prefix: string; everything?: boolean }
      if (prefix === "" && everything !== true) {
        return yield* new BlobError("invalid_input", {
          message: "An empty prefix means every object in the bucket",
          hint: "Pass { prefix: \"\", everything: true } to delete everything"
        })
      }
      let cursor: string | undefined
      let deleted = 0
      const failed: Array<string> = []
      let refusal: BlobError | undefined
      do {
        const page = yield* list({ prefix, cursor, limit: 1000 })
        const result = yield* deleteMany(page.objects.map((o) => o.path))
        deleted += result.deleted
        failed.push(...result.failed)
        refusal ??= result.refusal
        cursor = page.cursor
      } while (cursor !== undefined)
      if (failed.length > 0) return yield* leftBehind({ deleted, failed, refusal })
      return { deleted } satisfies DeleteResult
    }
    return yield* new BlobError("invalid_input", {
      message: "del takes a path, an array of paths, or { prefix }"
    })
  })

  return del
}
