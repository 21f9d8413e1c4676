/**
 * The two multipart operations s3rver lacks, served in its own process (`s3rverChild.ts`) from the
 * files s3rver keeps an unfinished upload in: ListParts (`GET /<bucket>/<key>?uploadId=`) and
 * AbortMultipartUpload (`DELETE /<bucket>/<key>?uploadId=`). s3rver answered both 405, so on a machine
 * without radosgw (a newcomer's first `npm start`) the uploads demo could neither resume an upload after
 * a reload (`@svc/blob` asks storage which parts landed) nor give one up.
 *
 * s3rver keeps an upload in `<bucket>/._S3rver_uploads/<uploadId>/`: `key` (the object's key),
 * `metadata`, and per part `<n>` (its bytes) and `<n>.md5` (its ETag). An upload whose `key` file is
 * missing or names another key is `NoSuchUpload`, as S3 answers (s3rver creates the folder for a part
 * sent to an upload id it never began).
 */
import * as fs from "node:fs/promises"
import { createRequire } from "node:module"
import * as path from "node:path"

/** The part of a Koa context (s3rver is a Koa application) these operations use. */
interface Context {
  readonly method: string
  readonly path: string
  readonly query: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  status: number
  body: unknown
}
interface Store {
  getBucket(name: string): Promise<unknown>
  getResourcePath(bucket: string, key: string | undefined, resource: string): string
}
type S3ErrorConstructor = new(code: string, message: string, detail?: Record<string, string>) => Error

// s3rver's own error model: thrown, it becomes the S3 XML error with the code's status
const S3Error = createRequire(import.meta.url)("s3rver/lib/models/error") as S3ErrorConstructor

/** S3's own bound on parts a ListParts answer holds. */
const MAX_PARTS = 1000

const single = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  typeof value === "string" ? value : value?.[0]

/** A query number in `[min, max]`, `fallback` when absent; anything else is S3's InvalidArgument. */
const wholeNumber = (name: string, value: string | undefined, min: number, max: number, fallback: number): number => {
  if (value === undefined) return fallback
  if (!/^\d{1,10}$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new S3Error("InvalidArgument", `${name} must be a whole number from ${min} to ${max}`, {
      ArgumentName: name,
      ArgumentValue: value
    })
  }
  return Number(value)
}

const missing = (error: unknown) => (error as { readonly code?: string }).code === "ENOENT"

/** The upload's folder, once its bucket exists and the upload was begun for this key. */
const uploadFolder = async (store: Store, bucket: string, key: string, uploadId: string): Promise<string> => {
  if (!(await store.getBucket(bucket))) throw new S3Error("NoSuchBucket", "The specified bucket does not exist", { BucketName: bucket })
  const noSuchUpload = new S3Error(
    "NoSuchUpload",
    "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.",
    { UploadId: uploadId }
  )
  // an id is s3rver's 32 hex digits: anything else would name another folder
  if (!/^[0-9a-f]{32}$/.test(uploadId)) throw noSuchUpload
  const folder = path.join(store.getResourcePath(bucket, undefined, "uploads"), uploadId)
  const begunFor = await fs.readFile(path.join(folder, "key"), "utf8").catch((error: unknown) => {
    if (missing(error)) return undefined
    throw error
  })
  if (begunFor !== key) throw noSuchUpload
  return folder
}

const listParts = async (ctx: Context, store: Store, bucket: string, key: string, uploadId: string) => {
  const folder = await uploadFolder(store, bucket, key, uploadId)
  const maxParts = wholeNumber("max-parts", single(ctx.query["max-parts"]), 0, MAX_PARTS, MAX_PARTS)
  const marker = wholeNumber("part-number-marker", single(ctx.query["part-number-marker"]), 0, 10_000, 0)
  const numbers = (await fs.readdir(folder))
    .filter((name) => /^[1-9]\d{0,4}$/.test(name))
    .map(Number)
    .filter((number) => number > marker)
    .sort((a, b) => a - b)
  const shown = numbers.slice(0, maxParts)
  const parts = []
  for (const number of shown) {
    const file = path.join(folder, String(number))
    // a part still being written has no ETag yet: it has not landed
    const [stat, md5] = await Promise.all([fs.stat(file), fs.readFile(`${file}.md5`, "utf8").catch(() => undefined)])
    if (md5 === undefined) continue
    parts.push({ PartNumber: number, LastModified: stat.mtime.toISOString(), ETag: `"${md5.trim()}"`, Size: stat.size })
  }
  const truncated = numbers.length > shown.length
  ctx.body = {
    ListPartsResult: {
      "@": { xmlns: "http://s3.amazonaws.com/doc/2006-03-01/" },
      Bucket: bucket,
      Key: key,
      UploadId: uploadId,
      StorageClass: "STANDARD",
      PartNumberMarker: marker,
      ...(truncated ? { NextPartNumberMarker: shown.at(-1) ?? marker } : {}),
      MaxParts: maxParts,
      IsTruncated: truncated,
      Part: parts
    }
  }
}

const abort = async (ctx: Context, store: Store, bucket: string, key: string, uploadId: string) => {
  const folder = await uploadFolder(store, bucket, key, uploadId)
  await fs.rm(folder, { recursive: true, force: true })
  ctx.status = 204
}

/**
 * Koa middleware answering ListParts and AbortMultipartUpload, passing every other request on to
 * s3rver's router. Placed before the router, after s3rver's middleware that writes a plain-object body
 * as XML.
 */
export const multipartOperations = (store: Store) => async (ctx: Context, next: () => Promise<void>): Promise<void> => {
  const uploadId = single(ctx.query["uploadId"])
  const target = /^\/([^/]+)\/(.+)$/.exec(ctx.path)
  const operation = ctx.method === "GET" ? listParts : ctx.method === "DELETE" ? abort : undefined
  if (uploadId === undefined || target === null || operation === undefined) return next()
  let bucket: string
  let key: string
  try {
    bucket = decodeURIComponent(target[1]!)
    key = decodeURIComponent(target[2]!)
  } catch {
    throw new S3Error("InvalidURI", "Couldn't parse the specified URI.")
  }
  await operation(ctx, store, bucket, key, uploadId)
}
