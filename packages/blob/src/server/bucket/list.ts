/**
 * `list`: one page of ListObjectsV2 (`cursor` is S3's continuation token; `mode: "folded"` groups
 * sub-folders with the `/` delimiter). Retried.
 *
 * @module
 */
import { ListObjectsV2Command } from "@aws-sdk/client-s3"
import { Effect } from "effect"
import { BlobError } from "../../shared/BlobError.ts"
import type { S3Context } from "./client.ts"
import { quoted } from "./keys.ts"
import type { ListOptions, ListResult } from "./types.ts"

/**
 * The page size asked for: 1-1000 (default 1000), else invalid_input; so is a prefix UTF-8 cannot
 * carry (a lone surrogate, sent as U+FFFD and retried as an outage) and a mode that is not one.
 */
export const listLimit = (options: ListOptions): Effect.Effect<number, BlobError> => {
  const limit = options.limit ?? 1000
  const problem = !Number.isInteger(limit) || limit < 1 || limit > 1000
    ? "limit must be an integer from 1 to 1000"
    : typeof options.prefix === "string" && !options.prefix.isWellFormed()
    ? "prefix holds a lone surrogate (\\ud800-\\udfff alone), which UTF-8 cannot carry"
    : options.mode !== undefined && options.mode !== "expanded" && options.mode !== "folded"
    ? `mode must be "expanded" or "folded", got ${JSON.stringify(String(options.mode))}`
    : undefined
  return problem === undefined ? Effect.succeed(limit) : Effect.fail(new BlobError("invalid_input", { message: problem }))
}

export const makeList = (s3: S3Context) => {
  const { Bucket, send, retried } = s3

  const list = (options: ListOptions = {}) =>
    Effect.gen(function*() {
      const limit = yield* listLimit(options)
      const out = yield* retried(send(undefined, (client, signal) =>
        client.send(
          new ListObjectsV2Command({
            Bucket,
            MaxKeys: limit,
            ...(options.prefix === undefined || options.prefix === "" ? {} : { Prefix: options.prefix }),
            ...(options.cursor === undefined ? {} : { ContinuationToken: options.cursor }),
            ...(options.mode === "folded" ? { Delimiter: "/" } : {})
          }),
          { abortSignal: signal }
        )))
      const hasMore = out.IsTruncated === true && out.NextContinuationToken !== undefined
      return {
        objects: (out.Contents ?? []).map((o) => ({
          path: o.Key ?? "",
          size: o.Size ?? 0,
          etag: quoted(o.ETag),
          lastModified: o.LastModified
        })),
        folders: (out.CommonPrefixes ?? []).map((p) => p.Prefix ?? "").filter((p) => p !== ""),
        cursor: hasMore ? out.NextContinuationToken : undefined,
        hasMore
      } satisfies ListResult
    })

  return list
}
