/**
 * Paths and etags as S3 wants them: a checked path (`invalid_input` otherwise), a path encoded for a URL,
 * etags bare (radosgw's If-Match takes only the bare etag) or quoted (as S3 answers them), and the
 * refusal of a write with a read-only token.
 *
 * @module
 */
import { Effect } from "effect"
import { BlobError } from "../../shared/BlobError.ts"
import { checkPath } from "../../shared/paths.ts"

export const MiB = 1024 * 1024

export const bare = (etag: string) => etag.replaceAll("\"", "")
export const quoted = (etag: string | undefined) => etag === undefined || etag === "" ? "" : `"${bare(etag)}"`

export const encodePath = (path: string) => path.split("/").map(encodeURIComponent).join("/")

export const readOnlyRefusal = (what: string) =>
  new BlobError("forbidden", {
    message: `${what} is not allowed with this bucket token`,
    cause: new Error("the bucket token is read-only (access=readonly)")
  })

export const requirePath = (path: unknown): Effect.Effect<string, BlobError> => {
  const checked = checkPath(path)
  return typeof checked === "string" ? Effect.succeed(checked) : Effect.fail(checked)
}
