/**
 * `Bucket.layerMemory`: the same `BucketApi` over objects held in memory, for tests (never the product's
 * path). Built fresh per layer build; nothing is shared between two builds.
 *
 * What it shares with the S3 layer: the put plan (`putPlan.ts`: path, token, metadata, size, type and
 * sniffing checks), `del`'s targets, `move`, `updateJson`'s loop, and the refusals of conditional writes
 * (`conditional.ts`). Storage's own answers (404 NoSuchKey, 412, 400 InvalidPart, ...) go through
 * `normalizeStorageError`, the table the S3 layer uses, so both layers fail with the same codes; the
 * contract suite (`test/contracts/Bucket.ts`) holds them to it. The state and `memoryFetch` are in
 * `memoryStore.ts`.
 *
 * Conditional writes are atomic here (check and set in one synchronous step). Etags are S3's: the MD5 of
 * the bytes, or for a multipart object the MD5 of the parts' MD5s and `-<parts>`.
 *
 * Presigned URLs are `http://<store id>.memory.invalid/<bucket>/<path>?X-Memory-Grant=…`: nothing answers
 * them over the network; `memoryFetch(request)` serves them in process, as storage would (the signed
 * content type, length and `if-none-match` enforced, 403 after expiry, 412 onto an occupied path).
 * `configureCors` is accepted and does nothing (no browser reaches memory).
 *
 * @module
 */
import { Clock, Effect } from "effect"
import { randomBytes } from "node:crypto"
import { BlobError } from "../../shared/BlobError.ts"
import type { PresignedPart } from "../../shared/protocol.ts"
import { parseSize, type SizeInput } from "../../shared/size.ts"
import { normalizeStorageError } from "../normalize.ts"
import { checkCopy, checkExpiresIn, checkSignedUpload } from "./arguments.ts"
import { readAll } from "./body.ts"
import { makeConditional } from "./conditional.ts"
import { makeMove } from "./copy.ts"
import { makeDel } from "./delete.ts"
import { bare, encodePath, MiB, readOnlyRefusal, requirePath } from "./keys.ts"
import { listLimit } from "./list.ts"
import { closeStore, etagOf, type Grant, GRANT, multipartEtag, openStore, type StoredObject } from "./memoryStore.ts"
import { makeCompleteMultipartUpload } from "./multipart.ts"
import { planPut, type WriteHeaders } from "./putPlan.ts"
import { contentDisposition, makeSignedUploadParts, planParts, type SignParts, uploadHeaders } from "./signing.ts"
import type {
  BucketApi,
  CopyOptions,
  GetResult,
  LandedPart,
  ListOptions,
  ListResult,
  ObjectInfo,
  PutBody,
  PutOptions,
  PutResult,
  SignedMultipartUpload,
  SignedReadOptions,
  SignedUpload,
  SignedUploadOptions
} from "./types.ts"
import { makeUpdateJson } from "./updateJson.ts"

export interface MemoryBucketOptions {
  /** the bucket's name (default "memory") */
  readonly name?: string | undefined
  /** as a token with `access=readonly`: writes and upload URLs answer forbidden */
  readonly readOnly?: boolean | undefined
  /** above this, put goes multipart (default 100 MiB): only the etag's form tells */
  readonly multipartThreshold?: SizeInput | undefined
  /** multipart part size of put (default 8 MiB, at least 5 MiB) */
  readonly partSize?: SizeInput | undefined
  /** the largest single PUT (default 5 GiB) */
  readonly maxSinglePut?: SizeInput | undefined
}

const MIN_PART = 5 * MiB

/** Storage's answer, normalized as the S3 layer normalizes it. */
const storageAnswer = (status: number, code: string, path?: string, message = code) =>
  normalizeStorageError({ $metadata: { httpStatusCode: status }, Code: code, message }, { path })

const concat = (chunks: ReadonlyArray<Uint8Array>) => new Uint8Array(Buffer.concat(chunks))

/** Builds a memory bucket. Synchronous; `close` forgets its signed URLs. Throws TypeError for bad options. */
export const makeMemoryBucket = (options: MemoryBucketOptions = {}): BucketApi => {
  const name = options.name ?? "memory"
  const readOnly = options.readOnly === true
  const multipartThreshold = parseSize(options.multipartThreshold ?? 100 * MiB, "multipartThreshold")
  const partSize = parseSize(options.partSize ?? 8 * MiB, "partSize")
  if (partSize < MIN_PART) throw new TypeError("partSize must be at least 5 MiB (the S3 minimum)")
  const maxSinglePut = parseSize(options.maxSinglePut ?? 5 * 1024 * MiB, "maxSinglePut")
  const { host, store } = openStore(name)
  const { objects, uploads, grants } = store

  const url = (path: string) => `http://${host}/${name}/${encodePath(path)}`
  const infoOf = (path: string, object: StoredObject): ObjectInfo => ({
    path,
    url: url(path),
    size: object.bytes.length,
    etag: object.etag,
    contentType: object.contentType,
    lastModified: object.lastModified,
    cacheControl: object.cacheControl,
    metadata: { ...object.metadata }
  })
  const lookup = (path: string) =>
    Effect.suspend(() => {
      const object = objects.get(path)
      return object === undefined ? Effect.fail(storageAnswer(404, "NoSuchKey", path)) : Effect.succeed(object)
    })

  const head = (path: string) => Effect.map(lookup(path), (object) => infoOf(path, object))
  const info = (path: string) => Effect.flatMap(requirePath(path), head)
  const exists = (path: string) =>
    info(path).pipe(Effect.as(true), Effect.catchIf(BlobError.hasCode("not_found"), () => Effect.succeed(false)))
  const { alreadyExists, conditionalFailure } = makeConditional({ head })

  /** Stores `object` if the conditions hold (one synchronous step), else storage's 412 as the S3 layer refuses it. */
  const write = (path: string, object: Omit<StoredObject, "lastModified">, conditions: Pick<WriteHeaders, "ifNoneMatch" | "ifMatch">) =>
    Effect.suspend(() => {
      const current = objects.get(path)
      const refused = conditions.ifNoneMatch
        ? current !== undefined
        : conditions.ifMatch !== undefined && (current === undefined || bare(current.etag) !== bare(conditions.ifMatch))
      if (refused) return Effect.fail(storageAnswer(412, "PreconditionFailed", path))
      objects.set(path, { ...object, lastModified: new Date() })
      return Effect.succeed(object.etag)
    }).pipe(
      Effect.catch(conditionalFailure(path, conditions.ifNoneMatch ? "create" : conditions.ifMatch === undefined ? undefined : "match"))
    )

  // --- put, get ---

  const put = Effect.fn("Bucket.put")(function*(path: string, body: PutBody, options: PutOptions = {}) {
    const plan = yield* planPut(path, body, options, { readOnly, multipartThreshold, maxSinglePut })
    const bytes = plan.bytes ?? (yield* readAll(plan.stream!, { max: plan.maxSize, exact: plan.length }))
    let etag = etagOf(bytes)
    if (plan.useMultipart) {
      const parts: Array<string> = []
      for (let offset = 0; offset < bytes.length || parts.length === 0; offset += partSize) {
        parts.push(etagOf(bytes.subarray(offset, offset + partSize)))
      }
      etag = multipartEtag(parts)
    }
    yield* write(path, {
      bytes,
      etag,
      contentType: plan.contentType,
      cacheControl: plan.headers.cacheControl,
      metadata: plan.headers.metadata ?? {}
    }, plan.headers)
    return { path, url: url(path), etag, size: bytes.length, contentType: plan.contentType } satisfies PutResult
  })

  const getBytes = (path: string) => Effect.flatMap(requirePath(path), () => Effect.map(lookup(path), (o) => o.bytes.slice()))
  const get = Effect.fn("Bucket.get")(function*(path: string) {
    yield* requirePath(path)
    const object = yield* lookup(path)
    return { ...infoOf(path, object), body: new Blob([object.bytes.slice()]).stream() } satisfies GetResult
  })
  const getText = (path: string) => Effect.map(getBytes(path), (bytes) => new TextDecoder().decode(bytes))

  // --- list, copy, move, del ---

  const list = (options: ListOptions = {}) =>
    Effect.gen(function*() {
      const limit = yield* listLimit(options)
      const prefix = options.prefix ?? ""
      let after = ""
      if (options.cursor !== undefined) {
        after = Buffer.from(options.cursor, "base64url").toString("utf8")
        if (after === "") return yield* storageAnswer(400, "InvalidArgument", undefined, "invalid continuation token")
      }
      // one entry per object, or per sub-folder when folded (S3's delimiter), in key order
      const entries: Array<{ readonly key: string; readonly folder: boolean }> = []
      const seen = new Set<string>()
      for (const key of [...objects.keys()].filter((k) => k.startsWith(prefix)).sort()) {
        const slash = options.mode === "folded" ? key.indexOf("/", prefix.length) : -1
        const entry = slash === -1 ? { key, folder: false } : { key: key.slice(0, slash + 1), folder: true }
        if (seen.has(entry.key)) continue
        seen.add(entry.key)
        entries.push(entry)
      }
      const rest = entries.filter((entry) => entry.key > after)
      const page = rest.slice(0, limit)
      const hasMore = rest.length > limit
      const last = page.at(-1)
      return {
        objects: page.filter((e) => !e.folder).map((e) => {
          const object = objects.get(e.key)!
          return { path: e.key, size: object.bytes.length, etag: object.etag, lastModified: object.lastModified }
        }),
        folders: page.filter((e) => e.folder).map((e) => e.key),
        cursor: hasMore && last !== undefined ? Buffer.from(last.key, "utf8").toString("base64url") : undefined,
        hasMore
      } satisfies ListResult
    })

  const copyObject = (from: string, to: string, options: CopyOptions) =>
    Effect.gen(function*() {
      yield* requirePath(from)
      yield* requirePath(to)
      yield* checkCopy(from, to, options)
      if (readOnly) return yield* readOnlyRefusal("Copying")
      if (options.allowOverwrite !== true && (yield* exists(to))) return yield* alreadyExists(to)
      const source = yield* lookup(from)
      // a new content type replaces the metadata too (S3's MetadataDirective: REPLACE)
      objects.set(to, {
        ...source,
        lastModified: new Date(),
        ...(options.contentType === undefined ? {} : { contentType: options.contentType, metadata: {}, cacheControl: undefined })
      })
      return yield* head(to)
    })
  const copy = Effect.fn("Bucket.copy")(function*(from: string, to: string, options: CopyOptions = {}) {
    return yield* copyObject(from, to, options)
  })
  const deleteOne = (path: string) => Effect.sync(() => objects.delete(path))
  const move = makeMove({ info, copyObject, deleteOne })
  const del = makeDel({
    readOnly,
    deleteOne,
    deleteMany: (paths) =>
      Effect.sync(() => {
        for (const path of paths) objects.delete(path)
        return { deleted: paths.length, failed: [] }
      }),
    list
  })

  const updateJson = makeUpdateJson({
    readOnly,
    read: (path) =>
      Effect.sync(() => {
        const object = objects.get(path)
        return object === undefined ? undefined : { text: new TextDecoder().decode(object.bytes), etag: object.etag }
      }),
    write: (path, bytes, etag) =>
      write(path, { bytes, etag: etagOf(bytes), contentType: "application/json", cacheControl: undefined, metadata: {} }, {
        ifNoneMatch: etag === undefined,
        ifMatch: etag
      })
  })

  // --- signed URLs, multipart ---

  const grant = (g: Grant) => {
    const id = randomBytes(12).toString("base64url")
    grants.set(id, g)
    return `${url(g.path)}?${GRANT}=${id}`
  }
  const expiry = (expiresIn: number) => Effect.map(Clock.currentTimeMillis, (now) => now + Math.max(1, expiresIn) * 1000)

  const signedReadUrl = Effect.fn("Bucket.signedReadUrl")(function*(path: string, options: SignedReadOptions = {}) {
    yield* requirePath(path)
    yield* checkExpiresIn(options.expiresIn)
    const disposition = contentDisposition(options.download)
    return grant({ kind: "read", path, expiresAt: yield* expiry(options.expiresIn ?? 3600), disposition })
  })

  const signedUploadUrl = Effect.fn("Bucket.signedUploadUrl")(function*(path: string, options: SignedUploadOptions) {
    yield* requirePath(path)
    yield* checkSignedUpload(options)
    if (readOnly) return yield* readOnlyRefusal("An upload URL")
    const allowOverwrite = options.allowOverwrite === true
    const expiresAt = yield* expiry(options.expiresIn ?? 600)
    return {
      url: grant({ kind: "put", path, expiresAt, contentType: options.contentType, size: options.size, ifNoneMatch: !allowOverwrite }),
      method: "PUT",
      headers: uploadHeaders(options.contentType, allowOverwrite),
      expiresAt
    } satisfies SignedUpload
  })

  const signParts: SignParts = (path, uploadId, parts, expiresIn) =>
    Effect.map(expiry(expiresIn), (expiresAt) => ({
      parts: parts.map(({ partNumber, size }): PresignedPart => ({
        partNumber,
        size,
        url: `${grant({ kind: "part", path, expiresAt, uploadId, partNumber, size })}&partNumber=${partNumber}`
      })),
      expiresAt
    }))

  const signedMultipartUpload = Effect.fn("Bucket.signedMultipartUpload")(function*(
    path: string,
    options: SignedUploadOptions & { readonly partSize?: number | undefined }
  ) {
    yield* requirePath(path)
    yield* checkSignedUpload(options)
    if (readOnly) return yield* readOnlyRefusal("An upload URL")
    const planned = planParts(options.size, options.partSize ?? partSize)
    const uploadId = randomBytes(16).toString("hex")
    uploads.set(uploadId, { path, contentType: options.contentType, parts: new Map() })
    const signed = yield* signParts(path, uploadId, planned.parts, options.expiresIn ?? 3600)
    return { uploadId, partSize: planned.partSize, parts: signed.parts, headers: {}, expiresAt: signed.expiresAt } satisfies SignedMultipartUpload
  })

  const signedUploadParts = makeSignedUploadParts(readOnly, signParts)

  const uploadOf = (path: string, uploadId: string) =>
    Effect.suspend(() => {
      const upload = uploads.get(uploadId)
      return upload === undefined || upload.path !== path
        ? Effect.fail(storageAnswer(404, "NoSuchUpload", path))
        : Effect.succeed(upload)
    })

  const listParts = Effect.fn("Bucket.listParts")(function*(path: string, uploadId: string) {
    yield* requirePath(path)
    const upload = yield* uploadOf(path, uploadId)
    return [...upload.parts.entries()].sort(([a], [b]) => a - b).map(([partNumber, part]): LandedPart => ({
      partNumber,
      etag: part.etag,
      size: part.bytes.length
    }))
  })

  const abortMultipartUpload = (_path: string, uploadId: string) => Effect.sync(() => void uploads.delete(uploadId))

  /** CompleteMultipartUpload as storage answers it (the occupied-path check is makeCompleteMultipartUpload's) */
  const complete = (path: string, uploadId: string, parts: ReadonlyArray<{ readonly partNumber: number; readonly etag: string }>) =>
    Effect.gen(function*() {
      const upload = yield* uploadOf(path, uploadId)
      const sorted = [...parts].sort((a, b) => a.partNumber - b.partNumber)
      if (sorted.length === 0) return yield* storageAnswer(400, "MalformedXML", path)
      const chosen = sorted.map(({ partNumber, etag }) => {
        const part = upload.parts.get(partNumber)
        return part !== undefined && bare(part.etag) === bare(etag) ? part : undefined
      })
      if (chosen.some((part) => part === undefined)) {
        return yield* storageAnswer(400, "InvalidPart", path, "One or more of the specified parts could not be found")
      }
      const found = chosen as ReadonlyArray<{ readonly bytes: Uint8Array; readonly etag: string }>
      if (found.slice(0, -1).some((part) => part.bytes.length < MIN_PART)) {
        return yield* storageAnswer(400, "EntityTooSmall", path, "Your proposed upload is smaller than the minimum allowed object size")
      }
      uploads.delete(uploadId)
      const etag = multipartEtag(found.map((part) => part.etag))
      objects.set(path, {
        bytes: concat(found.map((part) => part.bytes)),
        etag,
        contentType: upload.contentType,
        lastModified: new Date(),
        cacheControl: undefined,
        metadata: {}
      })
      return { etag }
    })

  const completeMultipartUpload = makeCompleteMultipartUpload({ exists, alreadyExists, abort: abortMultipartUpload, complete })

  return {
    name,
    endpoint: `http://${host}`,
    url,
    put: (path, body, options) => put(path, body, options),
    get,
    getBytes,
    getText,
    info,
    exists,
    copy: (from, to, options) => copy(from, to, options),
    move: (from, to, options) => move(from, to, options),
    del,
    list,
    updateJson,
    signedReadUrl: (path, options) => signedReadUrl(path, options),
    signedUploadUrl,
    signedMultipartUpload,
    completeMultipartUpload: (path, uploadId, parts, options) => completeMultipartUpload(path, uploadId, parts, options),
    abortMultipartUpload,
    listParts,
    signedUploadParts: (path, uploadId, parts, options) => signedUploadParts(path, uploadId, parts, options),
    configureCors: () => Effect.void,
    close: Effect.sync(() => closeStore(host))
  }
}
