/**
 * What s3rver lacks of S3's multipart uploads, served in its own process (`s3rverChild.ts`) from the
 * files s3rver keeps an unfinished upload in:
 *
 * - ListParts (`GET /<bucket>/<key>?uploadId=`) and AbortMultipartUpload (`DELETE …?uploadId=`).
 *   s3rver answered both 405, so on a machine without radosgw (a newcomer's first `npm start`) the
 *   uploads demo could neither resume an upload after a reload (`@svc/blob` asks storage which parts
 *   landed) nor give one up.
 * - CompleteMultipartUpload's checks (`POST …?uploadId=`): every part named must be there with its
 *   ETag (InvalidPart), in ascending order (InvalidPartOrder), each but the last at least 5 MiB
 *   (EntityTooSmall), all 400 as S3 answers them. s3rver checked none: a part never sent ended its
 *   process (an error of a stream it does not listen to), so such a request got a 502 while it was
 *   started again. The checked request then goes on to s3rver, which completes it.
 *
 * s3rver keeps an upload in `<bucket>/._S3rver_uploads/<uploadId>/`: `key` (the object's key),
 * `metadata`, and per part `<n>` (its bytes) and `<n>.md5` (its ETag). An upload whose `key` file is
 * missing or names another key is `NoSuchUpload`, as S3 answers (s3rver creates the folder for a part
 * sent to an upload id it never began).
 */
import * as fs from "node:fs/promises"
import { createRequire } from "node:module"
import * as path from "node:path"
import { Readable } from "node:stream"

/** The part of a Koa context (s3rver is a Koa application) these operations use. */
interface Context {
  /** The request, replaced by its read body once the completion has been checked (s3rver reads it again). */
  req: AsyncIterable<Uint8Array>
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

interface XmlParser {
  validate(xml: string): true | object
  parse(xml: string, options: { readonly tagValueProcessor: (value: string) => string }): unknown
}

const requireFromS3rver = createRequire(createRequire(import.meta.url).resolve("s3rver"))
// s3rver's own error model: thrown, it becomes the S3 XML error with the code's status
const S3Error = requireFromS3rver("./models/error") as S3ErrorConstructor
// the XML parser s3rver reads a completion with, so the parts checked are the parts it completes
const xmlParser = requireFromS3rver("fast-xml-parser") as XmlParser
const entities = requireFromS3rver("he") as { decode(text: string): string }

/** S3's least size of every part of a multipart upload but the last. */
const MIN_PART_BYTES = 5 * 1024 * 1024
/** A completion naming all 10,000 parts is ~1 MB of XML. */
const MAX_COMPLETION_BYTES = 2 * 1024 * 1024

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

const listParts = async (ctx: Context, store: Store, bucket: string, key: string, uploadId: string): Promise<void> => {
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

const abort = async (ctx: Context, store: Store, bucket: string, key: string, uploadId: string): Promise<void> => {
  const folder = await uploadFolder(store, bucket, key, uploadId)
  await fs.rm(folder, { recursive: true, force: true })
  ctx.status = 204
}

/** The parts a completion names, as s3rver reads them; undefined where s3rver itself refuses the XML. */
const namedParts = (xml: string): ReadonlyArray<{ readonly number: number; readonly etag: string }> | undefined => {
  if (xmlParser.validate(xml) !== true) return undefined
  const body = xmlParser.parse(xml, { tagValueProcessor: (value) => entities.decode(value) }) as {
    CompleteMultipartUpload?: { Part?: unknown }
  }
  const named = body.CompleteMultipartUpload?.Part
  if (named === undefined || named === null || named === "") return undefined
  return ([] as Array<unknown>).concat(named).map((part) => {
    const { ETag, PartNumber } = (part ?? {}) as { ETag?: unknown; PartNumber?: unknown }
    return { number: Number(PartNumber), etag: String(ETag ?? "").replace(/"/g, "") }
  })
}

const readBody = async (ctx: Context): Promise<Buffer> => {
  const chunks: Array<Uint8Array> = []
  let size = 0
  for await (const chunk of ctx.req) {
    size += chunk.length
    if (size > MAX_COMPLETION_BYTES) {
      throw new S3Error("MaxMessageLengthExceeded", `Your request was too big (over ${MAX_COMPLETION_BYTES} bytes).`)
    }
    chunks.push(chunk)
  }
  return Buffer.concat(chunks)
}

const checkCompletion = async (ctx: Context, store: Store, bucket: string, key: string, uploadId: string, next: () => Promise<void>) => {
  const folder = await uploadFolder(store, bucket, key, uploadId)
  const body = await readBody(ctx)
  const parts = namedParts(body.toString("utf8")) ?? []
  if (parts.some((part, index) => index > 0 && !(part.number > parts[index - 1]!.number))) {
    throw new S3Error("InvalidPartOrder", "The list of parts was not in ascending order. The parts list must be specified in order by part number.")
  }
  const sizes: Array<number> = []
  for (const part of parts) {
    const invalid = new S3Error(
      "InvalidPart",
      "One or more of the specified parts could not be found. The part might not have been uploaded, or the specified entity tag might not have matched the part's entity tag.",
      { UploadId: uploadId, PartNumber: String(part.number), ETag: part.etag }
    )
    if (!Number.isInteger(part.number) || part.number < 1 || part.number > 10_000) throw invalid
    const file = path.join(folder, String(part.number))
    const [stat, md5] = await Promise.all([fs.stat(file).catch(() => undefined), fs.readFile(`${file}.md5`, "utf8").catch(() => undefined)])
    if (stat === undefined || md5?.trim() !== part.etag) throw invalid
    sizes.push(stat.size)
  }
  const small = sizes.findIndex((size, index) => index < sizes.length - 1 && size < MIN_PART_BYTES)
  if (small >= 0) {
    throw new S3Error("EntityTooSmall", "Your proposed upload is smaller than the minimum allowed object size.", {
      ProposedSize: String(sizes[small]),
      MinSizeAllowed: String(MIN_PART_BYTES),
      PartNumber: String(parts[small]!.number)
    })
  }
  // s3rver reads the body again from the request, and refuses what namedParts left undefined
  ctx.req = Readable.from([body])
  return next()
}

/**
 * Koa middleware answering ListParts and AbortMultipartUpload and checking a completion, passing every
 * other request (and a checked completion) on to s3rver's router. Placed before the router, after
 * s3rver's middleware that writes a plain-object body as XML.
 */
export const multipartOperations = (store: Store) => async (ctx: Context, next: () => Promise<void>): Promise<void> => {
  const uploadId = single(ctx.query["uploadId"])
  const target = /^\/([^/]+)\/(.+)$/.exec(ctx.path)
  const operation = ctx.method === "GET"
    ? listParts
    : ctx.method === "DELETE"
    ? abort
    : ctx.method === "POST"
    ? checkCompletion
    : undefined
  if (uploadId === undefined || target === null || operation === undefined) return next()
  let bucket: string
  let key: string
  try {
    bucket = decodeURIComponent(target[1]!)
    key = decodeURIComponent(target[2]!)
  } catch {
    throw new S3Error("InvalidURI", "Couldn't parse the specified URI.")
  }
  await operation(ctx, store, bucket, key, uploadId, next)
}
