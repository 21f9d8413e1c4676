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
 *   (EntityTooSmall), all 400 as S3 answers them, and the object's conditions (`If-None-Match`).
 *   s3rver checked none: a part never sent ended its process (an error of a stream it does not listen
 *   to), so such a request got a 502 while it was started again. The checked request then goes on to
 *   s3rver, which completes it. Completions and aborts of one upload run one at a time.
 * - UploadPart only to an upload begun for the key (else `NoSuchUpload`).
 *
 * s3rver keeps an upload in `<bucket>/._S3rver_uploads/<uploadId>/`: `key` (the object's key),
 * `metadata`, and per part `<n>` (its bytes) and `<n>.md5` (its ETag). An upload whose `key` file is
 * missing or names another key is `NoSuchUpload`, as S3 answers (s3rver creates the folder for a part
 * sent to an upload id it never began).
 */
import * as fs from "node:fs/promises"
import * as path from "node:path"
import {
  checkConditions,
  type Context,
  missing,
  noSuchBucket,
  noSuchUpload,
  readXml,
  S3Error,
  serialized,
  type Store,
  target,
  UPLOAD_ID,
  writeCondition
} from "./s3rverRequests.ts"

/** S3's least size of every part of a multipart upload but the last. */
const MIN_PART_BYTES = 5 * 1024 * 1024

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

/** The upload's folder, once its bucket exists and the upload was begun for this key. */
const uploadFolder = async (store: Store, bucket: string, key: string, uploadId: string): Promise<string> => {
  if (!(await store.getBucket(bucket))) throw noSuchBucket(bucket)
  // an id is s3rver's 32 hex digits: anything else would name another folder
  if (!UPLOAD_ID.test(uploadId)) throw noSuchUpload(uploadId)
  const folder = path.join(store.getResourcePath(bucket, undefined, "uploads"), uploadId)
  const begunFor = await fs.readFile(path.join(folder, "key"), "utf8").catch((error: unknown) => {
    if (missing(error)) return undefined
    throw error
  })
  if (begunFor !== key) throw noSuchUpload(uploadId)
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
    // (and one gone since the folder was read, an abort's, is not there)
    const [stat, md5] = await Promise.all([fs.stat(file).catch(() => undefined), fs.readFile(`${file}.md5`, "utf8").catch(() => undefined)])
    if (stat === undefined || md5 === undefined) continue
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

const abort = (ctx: Context, store: Store, bucket: string, key: string, uploadId: string): Promise<void> =>
  serialized(`upload\u0000${uploadId}`, async () => {
    const folder = await uploadFolder(store, bucket, key, uploadId)
    await fs.rm(folder, { recursive: true, force: true })
    ctx.status = 204
  })

/** The parts a completion names, as s3rver reads them; none where s3rver itself refuses the XML. */
const namedParts = (xml: unknown): ReadonlyArray<{ readonly number: number; readonly etag: string }> => {
  const named = (xml as { CompleteMultipartUpload?: { Part?: unknown } } | undefined)?.CompleteMultipartUpload?.Part
  if (named === undefined || named === null || named === "") return []
  return ([] as Array<unknown>).concat(named).map((part) => {
    const { ETag, PartNumber } = (part ?? {}) as { ETag?: unknown; PartNumber?: unknown }
    return { number: Number(PartNumber), etag: String(ETag ?? "").replace(/"/g, "") }
  })
}

/**
 * A completion, one at a time per upload and per object (a second one, or an abort, waits, then finds
 * the upload gone: `NoSuchUpload`; two at once had truncated each other's object and ended s3rver),
 * its parts checked as S3 checks them and the object's conditions (`If-None-Match`) held.
 */
const complete = async (ctx: Context, store: Store, bucket: string, key: string, uploadId: string, next: () => Promise<void>) => {
  // read before the upload's lock: a body that trickles in holds up nobody
  const parts = namedParts(await readXml(ctx))
  return serialized(`upload\u0000${uploadId}`, async () => {
    const folder = await uploadFolder(store, bucket, key, uploadId)
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
      // a folder named as a part (sent as part "1/x") ended s3rver when it read it
      if (stat === undefined || !stat.isFile() || md5?.trim() !== part.etag) throw invalid
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
    // the object's conditions now, and again where it replaces the old one (s3rverWholeObjects.ts)
    const check = () => checkConditions(ctx, store, bucket, key)
    await check()
    // s3rver reads the body again (readXml gave it back) and refuses what namedParts found no parts in
    await writeCondition.run(check, next)
  })
}

/** A part is sent only to an upload begun for its key: s3rver kept parts for any id, which nothing could list or remove. */
const uploadPart = async (ctx: Context, store: Store, bucket: string, key: string, uploadId: string, next: () => Promise<void>) => {
  await uploadFolder(store, bucket, key, uploadId)
  await next()
}

/**
 * Koa middleware answering ListParts and AbortMultipartUpload, and checking a part upload and a
 * completion before s3rver's router runs them. After `s3rverRequests.ts`'s checks, before the router,
 * after s3rver's middleware that writes a plain-object body as XML.
 */
export const multipartOperations = (store: Store) => async (ctx: Context, next: () => Promise<void>): Promise<void> => {
  const uploadId = single(ctx.query["uploadId"])
  const { bucket, key } = target(ctx)
  const operation = ctx.method === "GET"
    ? listParts
    : ctx.method === "DELETE"
    ? abort
    : ctx.method === "POST"
    ? complete
    : ctx.method === "PUT"
    ? uploadPart
    : undefined
  if (uploadId === undefined || bucket === undefined || key === undefined || operation === undefined) return next()
  await operation(ctx, store, bucket, key, uploadId, next)
}
