/**
 * What s3rver lets through and S3 does not, checked in its own process (`s3rverChild.ts`) before its
 * router sees a request. s3rver checks no signature and builds file paths from the request as sent, so
 * on a machine without radosgw (a newcomer's `npm start`) an outside sweep found, unsigned and in one
 * request each: files written and folders deleted outside the storage folder (`..` in a bucket, a key,
 * an upload id or a part number), the process ended (a part number naming a folder, a key holding
 * s3rver's own `._S3rver_` suffix), 500s (NUL in a key), a browser form POST writing any key; and,
 * s3rver ignoring conditional writes, concurrent completions of one upload truncating each other.
 *
 * - **Host**: an address (`127.0.0.1:<port>`, `localhost`): s3rver reads a bucket from a host name
 *   (`<bucket>.s3.amazonaws.com`) after these checks ran on the path.
 * - **Names**: a bucket as S3 names it (3-63 lowercase letters, digits, `.` and `-`, no `..`); a key of
 *   at most 1,024 bytes, 200 between two `/` (a file name with s3rver's suffix), without a `.`, `..` or
 *   empty segment, a control character or `._S3rver_`; the same for a copy source and DeleteObjects'
 *   keys; an upload id as s3rver makes them (32 hex digits), a part number 1-10,000, each given once.
 *   Else S3's 400 (`InvalidBucketName`, `InvalidArgument`, `KeyTooLongError`) or `NoSuchUpload`.
 * - **DeleteObjects** served here ({@link deleteObjects}).
 * - **No form POST** to a bucket (S3's browser upload, which the suite does not use) and no bucket
 *   websites (their error page is a key no request names): 405.
 * - **S3's conditional writes**: `If-None-Match: *` fails with 412 when the object exists, `If-Match`
 *   when its ETag differs or it is gone (the upload routes' single-use completions rely on them);
 *   checked before the body is read, and again where the object replaces the old one
 *   ({@link writeCondition}, s3rverWholeObjects.ts), one object at a time ({@link serialized}): a slow
 *   upload holds no lock while its bytes arrive.
 */
import { AsyncLocalStorage } from "node:async_hooks"
import { isIP } from "node:net"
import * as fs from "node:fs/promises"
import { createRequire } from "node:module"
import { Readable } from "node:stream"

/** The part of a Koa context (s3rver is a Koa application) these checks use. */
export interface Context {
  /** The request; replaced by its read body where a check read it first (s3rver reads it again). */
  req: AsyncIterable<Uint8Array>
  readonly method: string
  readonly hostname: string
  readonly path: string
  readonly querystring: string
  readonly query: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  status: number
  body: unknown
}
/** What of s3rver's file store these checks use. */
export interface Store {
  getBucket(name: string): Promise<unknown>
  deleteObject(bucket: string, key: string): Promise<void>
  getResourcePath(bucket: string, key: string | undefined, resource: string): string
}
type S3ErrorConstructor = new(code: string, message: string, detail?: Record<string, string>) => Error
interface XmlParser {
  validate(xml: string): true | object
  parse(xml: string, options: { readonly tagValueProcessor: (value: string) => string; readonly parseNodeValue: boolean }): unknown
}

const requireFromS3rver = createRequire(createRequire(import.meta.url).resolve("s3rver"))
/** s3rver's own error model: thrown, it becomes the S3 XML error with the code's status. */
export const S3Error = requireFromS3rver("./models/error") as S3ErrorConstructor
// the XML parser (and entity decoder) s3rver reads a body with, so what is checked is what it reads
const xmlParser = requireFromS3rver("fast-xml-parser") as XmlParser
const entities = requireFromS3rver("he") as { decode(text: string): string }

/** A request body s3rver reads as XML (a completion naming all 10,000 parts is ~1 MB). */
const MAX_XML_BYTES = 2 * 1024 * 1024

/**
 * The request's XML body as s3rver will parse it (undefined where s3rver itself refuses it as
 * malformed), the body given back to the request for s3rver to read again.
 */
export const readXml = async (ctx: Context, options: { readonly textValues?: boolean } = {}): Promise<unknown> => {
  const chunks: Array<Uint8Array> = []
  let size = 0
  for await (const chunk of ctx.req) {
    size += chunk.length
    if (size > MAX_XML_BYTES) throw new S3Error("MaxMessageLengthExceeded", `Your request was too big (over ${MAX_XML_BYTES} bytes).`)
    chunks.push(chunk)
  }
  const body = Buffer.concat(chunks)
  ctx.req = Readable.from([body])
  const xml = body.toString("utf8")
  // textValues: every value as its text (a key "2024" stays a string; s3rver's own parse made it a number)
  return xmlParser.validate(xml) === true
    ? xmlParser.parse(xml, { tagValueProcessor: (value) => entities.decode(value), parseNodeValue: options.textValues !== true })
    : undefined
}

/** A file system error for a file that is not there. */
export const missing = (error: unknown): boolean => (error as { readonly code?: string }).code === "ENOENT"

/** S3's answer for a bucket that does not exist. */
export const noSuchBucket = (bucket: string) =>
  new S3Error("NoSuchBucket", "The specified bucket does not exist", { BucketName: bucket.slice(0, 100) })

/** S3's answer for an upload id never begun (for this key), or already completed or aborted. */
export const noSuchUpload = (uploadId: string) =>
  new S3Error(
    "NoSuchUpload",
    "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.",
    { UploadId: uploadId.slice(0, 100) }
  )

const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/
/** s3rver's upload ids. */
export const UPLOAD_ID = /^[0-9a-f]{32}$/
const PART_NUMBER = /^[1-9]\d{0,4}$/
const MAX_KEY_BYTES = 1024
/** A key's part between two `/` is a file name here, with s3rver's suffix (`._S3rver_metadata.json`): the file system takes 255 bytes. */
const MAX_SEGMENT_BYTES = 200
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/
/** s3rver keeps an object `k` as the files `k._S3rver_object`, `k._S3rver_metadata.json`, …: a key holding it is one of them. */
const S3RVER_SUFFIX = "._S3rver_"

/** A bucket name S3 would take (so a folder of the store, never one outside it). */
const checkBucket = (bucket: string): void => {
  if (!BUCKET.test(bucket) || bucket.includes("..")) {
    throw new S3Error("InvalidBucketName", "The specified bucket is not valid.", { BucketName: bucket.slice(0, 100) })
  }
}

/** A key (decoded) S3 would take, naming a file of its bucket and none of s3rver's own. */
const checkKey = (key: string): void => {
  const segments = key.split("/")
  if (Buffer.byteLength(key) > MAX_KEY_BYTES || segments.some((segment) => Buffer.byteLength(segment) > MAX_SEGMENT_BYTES)) {
    throw new S3Error("KeyTooLongError", `Your key is too long (this local store takes at most ${MAX_KEY_BYTES} bytes, ${MAX_SEGMENT_BYTES} between two /)`)
  }
  const problem = CONTROL.test(key)
    ? "holds a control character"
    : segments.some((segment) => segment === "." || segment === "..")
    ? "has a . or .. segment"
    : segments.some((segment) => segment === "")
    ? "has an empty segment (a leading, trailing or doubled /), which this local store cannot tell from the key without it"
    : key.includes(S3RVER_SUFFIX)
    ? `holds ${S3RVER_SUFFIX}, which this local store keeps for itself`
    : undefined
  if (problem !== undefined) throw new S3Error("InvalidArgument", `The object key ${problem}.`, { ArgumentName: "key" })
}

/** The bucket and key a request names (decoded, as s3rver's router decodes them), checked. */
export const target = (ctx: Pick<Context, "path">): { readonly bucket?: string; readonly key?: string } => {
  const [, bucketPart = "", ...keyParts] = ctx.path.split("/")
  let bucket: string
  let key: string
  try {
    bucket = decodeURIComponent(bucketPart)
    key = decodeURIComponent(keyParts.join("/"))
  } catch {
    throw new S3Error("InvalidURI", "Couldn't parse the specified URI.")
  }
  if (bucket === "") return {}
  checkBucket(bucket)
  if (key === "") return { bucket }
  checkKey(key)
  return { bucket, key }
}

/** A copy's source (`x-amz-copy-source`), read as s3rver reads it: it names an object of the store. */
const checkCopySource = (value: string) => {
  let source: string
  try {
    source = decodeURI(value)
  } catch {
    throw new S3Error("InvalidArgument", "Copy Source must mention the source bucket and key: sourcebucket/sourcekey", { ArgumentName: "x-amz-copy-source" })
  }
  const [bucket = "", ...key] = (source.startsWith("/") ? source.slice(1) : source).split("/")
  if (key.join("/") === "") {
    throw new S3Error("InvalidArgument", "Copy Source must mention the source bucket and key: sourcebucket/sourcekey", { ArgumentName: "x-amz-copy-source" })
  }
  checkBucket(bucket)
  checkKey(key.join("/"))
}

/**
 * DeleteObjects (`POST /<bucket>?delete`), served here: its keys checked as a path's key is and read as
 * text (s3rver's parse made `2024` a number and failed on it: 500), the objects deleted one after another
 * (s3rver deleted them at once and each removed the folders they emptied: 500 for a batch in one folder).
 */
const deleteObjects = async (ctx: Context, store: Store, bucket: string) => {
  if (!(await store.getBucket(bucket))) throw noSuchBucket(bucket)
  const body = (await readXml(ctx, { textValues: true })) as { Delete?: { Object?: unknown; Quiet?: unknown } } | undefined
  const named = body?.Delete?.Object
  const objects = named === undefined || named === null || named === "" ? [] : ([] as Array<unknown>).concat(named)
  const keys = objects.map((object) => (object as { Key?: unknown } | null)?.Key)
  if (keys.length === 0 || keys.length > 1000 || keys.some((key) => typeof key !== "string")) {
    throw new S3Error("MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema.")
  }
  for (const key of keys as ReadonlyArray<string>) checkKey(key)
  for (const key of keys as ReadonlyArray<string>) await store.deleteObject(bucket, key)
  ctx.body = {
    DeleteResult: {
      "@": { xmlns: "http://s3.amazonaws.com/doc/2006-03-01/" },
      Deleted: body?.Delete?.Quiet === "true" ? [] : keys.map((Key) => ({ Key }))
    }
  }
}


/** The query's upload id and part number, each given at most once and in s3rver's form. */
const checkQuery = (ctx: Context) => {
  const query = new URLSearchParams(ctx.querystring)
  for (const name of ["uploadId", "partNumber"]) {
    if (query.getAll(name).length > 1) throw new S3Error("InvalidArgument", `${name} is given more than once.`, { ArgumentName: name })
  }
  const uploadId = query.get("uploadId")
  if (uploadId !== null && !UPLOAD_ID.test(uploadId)) {
    throw noSuchUpload(uploadId)
  }
  const partNumber = query.get("partNumber")
  if (partNumber !== null && !(PART_NUMBER.test(partNumber) && Number(partNumber) <= 10_000)) {
    throw new S3Error("InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive.", {
      ArgumentName: "partNumber",
      ArgumentValue: partNumber.slice(0, 100)
    })
  }
  if (ctx.method === "PUT" && (uploadId === null) !== (partNumber === null)) {
    throw new S3Error("InvalidArgument", "A part upload needs both uploadId and partNumber.", { ArgumentName: uploadId === null ? "uploadId" : "partNumber" })
  }
}

const chains = new Map<string, Promise<unknown>>()

/** Runs `work` after every earlier `work` of the same `name` has ended: s3rver's file writes of one object or upload never overlap. */
export const serialized = <A>(name: string, work: () => Promise<A>): Promise<A> => {
  const previous = chains.get(name) ?? Promise.resolve()
  const run = previous.then(work, work)
  const settled = run.then(() => undefined, () => undefined)
  chains.set(name, settled)
  void settled.then(() => {
    if (chains.get(name) === settled) chains.delete(name)
  })
  return run
}

const header = (ctx: Context, name: string): string | undefined => {
  const value = ctx.headers[name]
  return typeof value === "string" ? value : value?.[0]
}

/** An entity tag without its quotes and weak mark: S3 takes `If-Match` either way. */
const bareTag = (tag: string) => tag.trim().replace(/^W\//, "").replace(/^"(.*)"$/, "$1")

/** The stored object's ETag (quoted), or undefined when there is none. */
const currentEtag = async (store: Store, bucket: string, key: string): Promise<string | undefined> => {
  const exists = await fs.stat(store.getResourcePath(bucket, key, "object")).then(() => true, () => false)
  if (!exists) return undefined
  const md5 = await fs.readFile(store.getResourcePath(bucket, key, "object.md5"), "utf8").catch(() => "")
  return `"${md5.trim()}"`
}

/** S3's conditional write: `If-None-Match: *` and `If-Match: <etag>`, checked against the object as stored. */
export const checkConditions = async (ctx: Context, store: Store, bucket: string, key: string): Promise<void> => {
  const ifNoneMatch = header(ctx, "if-none-match")
  const ifMatch = header(ctx, "if-match")
  if (ifNoneMatch === undefined && ifMatch === undefined) return
  const etag = await currentEtag(store, bucket, key)
  const failed = ifNoneMatch !== undefined
    ? ifNoneMatch.trim() === "*" && etag !== undefined
    : etag === undefined || ifMatch!.split(",").map(bareTag).every((tag) => tag !== bareTag(etag) && tag !== "*")
  if (failed) throw new S3Error("PreconditionFailed", "At least one of the pre-conditions you specified did not hold", { Condition: ifNoneMatch === undefined ? "If-Match" : "If-None-Match" })
}

/** The name under which writes of one object are {@link serialized}. */
export const objectLock = (bucket: string, key: string) => `object\u0000${bucket}\u0000${key}`

/**
 * The conditions of the write in progress (a PUT, a completion), checked again by the store where the
 * object replaces the old one, under its {@link objectLock}: what held when the body began may not
 * hold once it has arrived.
 */
export const writeCondition = new AsyncLocalStorage<() => Promise<void>>()

/**
 * Koa middleware checking every request before s3rver reads it, and an object PUT's conditions.
 * Placed before s3rver's vhost middleware and router: nothing of s3rver's runs on a refused request.
 */
export const requestChecks = (store: Store) => async (ctx: Context, next: () => Promise<void>): Promise<void> => {
  // s3rver takes a bucket from a host name (`<bucket>.s3.amazonaws.com`) after these checks ran on the
  // path: an address is the only host it is asked by
  if (isIP(ctx.hostname) === 0 && ctx.hostname !== "localhost") {
    throw new S3Error("InvalidArgument", "Ask this local store by its address (127.0.0.1:<port>): bucket host names are not served.", { ArgumentName: "Host" })
  }
  const query = new URLSearchParams(ctx.querystring)
  // a bucket website's error and index pages are keys no request names, and its 404s ended s3rver
  if (query.has("website")) {
    throw new S3Error("MethodNotAllowed", "Bucket websites are not served by this local store.", { Method: ctx.method, ResourceType: "WEBSITE" })
  }
  const { bucket, key } = target(ctx)
  checkQuery(ctx)
  const copySource = header(ctx, "x-amz-copy-source")
  if (copySource !== undefined) checkCopySource(copySource)
  if (ctx.method === "POST" && bucket !== undefined && key === undefined) {
    // DeleteObjects names its keys in its body; a form POST (a browser upload, any key) is not served
    if (!query.has("delete")) {
      throw new S3Error("MethodNotAllowed", "The specified method is not allowed against this resource.", { Method: "POST", ResourceType: "BUCKET" })
    }
    return deleteObjects(ctx, store, bucket)
  }
  const isObjectPut = bucket !== undefined && key !== undefined && ctx.method === "PUT" &&
    !query.has("uploadId") && !query.has("tagging") && !query.has("acl")
  if (!isObjectPut) return next()
  // refused before the body is read, and checked again where the object replaces the old one
  const check = () => checkConditions(ctx, store, bucket, key)
  await check()
  await writeCondition.run(check, next)
}
