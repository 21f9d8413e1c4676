/**
 * The memory bucket's state (objects, unfinished multipart uploads, the grants behind its signed URLs),
 * S3's etags, and `memoryFetch`: the in-process "network" that answers a memory bucket's presigned URLs
 * (`http://<store id>.memory.invalid/<bucket>/<path>?X-Memory-Grant=…`) as storage would.
 *
 * @module
 */
import { createHash, randomBytes } from "node:crypto"
import { bare } from "./keys.ts"

export interface StoredObject {
  readonly bytes: Uint8Array
  readonly etag: string
  readonly contentType: string
  readonly lastModified: Date
  readonly cacheControl: string | undefined
  readonly metadata: Readonly<Record<string, string>>
}

export interface Upload {
  readonly path: string
  readonly contentType: string
  readonly parts: Map<number, { readonly bytes: Uint8Array; readonly etag: string }>
}

export type Grant =
  | {
    readonly kind: "read"
    readonly path: string
    readonly expiresAt: number
    readonly disposition: string | undefined
  }
  | {
    readonly kind: "put"
    readonly path: string
    readonly expiresAt: number
    readonly contentType: string
    readonly size: number
    readonly ifNoneMatch: boolean
  }
  | {
    readonly kind: "part"
    readonly path: string
    readonly expiresAt: number
    readonly uploadId: string
    readonly partNumber: number
    readonly size: number
  }

export interface MemoryStore {
  readonly name: string
  readonly objects: Map<string, StoredObject>
  readonly uploads: Map<string, Upload>
  readonly grants: Map<string, Grant>
}

/** Live memory stores by URL host, for `memoryFetch`; a store leaves when its bucket closes. */
const stores = new Map<string, MemoryStore>()

/** A new store, reachable by `memoryFetch` at the returned host until `closeStore`. */
export const openStore = (name: string): { readonly host: string; readonly store: MemoryStore } => {
  const host = `${randomBytes(6).toString("hex")}.memory.invalid`
  const store: MemoryStore = { name, objects: new Map(), uploads: new Map(), grants: new Map() }
  stores.set(host, store)
  return { host, store }
}

export const closeStore = (host: string): void => {
  stores.get(host)?.grants.clear()
  stores.delete(host)
}

/** The query parameter naming a signed URL's grant. */
export const GRANT = "X-Memory-Grant"

const md5 = (bytes: Uint8Array) => createHash("md5").update(bytes).digest("hex")
/** S3's etag of a single PUT: the MD5 of the bytes, quoted. */
export const etagOf = (bytes: Uint8Array) => `"${md5(bytes)}"`
/** S3's etag of a multipart object: the MD5 of the parts' MD5s, then `-<parts>`. */
export const multipartEtag = (partEtags: ReadonlyArray<string>) =>
  `"${md5(Buffer.concat(partEtags.map((etag) => Buffer.from(bare(etag), "hex"))))}-${partEtags.length}"`

const xml = (status: number, code: string, message = code) =>
  new Response(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`, {
    status,
    headers: { "content-type": "application/xml" }
  })

/**
 * Serves a memory bucket's presigned URL as storage would: `GET` a signed read URL, `PUT` a signed upload
 * or part URL with exactly the signed headers. An unknown, expired or mismatched signature is 403, a PUT
 * onto an occupied path signed with `if-none-match: *` 412, a part of an upload no longer known 404.
 * Any other URL is refused with a TypeError (it is not a memory bucket's).
 */
export const memoryFetch = async (request: Request): Promise<Response> => {
  const target = new URL(request.url)
  const store = stores.get(target.host)
  if (store === undefined) throw new TypeError(`memoryFetch: ${target.host} is not a live memory bucket`)
  const signed = store.grants.get(target.searchParams.get(GRANT) ?? "")
  const path = target.pathname.split("/").slice(2).map(decodeURIComponent).join("/")
  if (signed === undefined || signed.path !== path) return xml(403, "AccessDenied", "signature does not match")
  if (signed.expiresAt <= Date.now()) return xml(403, "AccessDenied", "request has expired")
  if (signed.kind === "read") {
    if (request.method !== "GET" && request.method !== "HEAD") return xml(403, "AccessDenied", "signature does not match")
    const object = store.objects.get(path)
    if (object === undefined) return xml(404, "NoSuchKey")
    return new Response(request.method === "HEAD" ? null : object.bytes.slice(), {
      headers: {
        "content-type": object.contentType,
        etag: object.etag,
        ...(signed.disposition === undefined ? {} : { "content-disposition": signed.disposition })
      }
    })
  }
  if (request.method !== "PUT") return xml(403, "AccessDenied", "signature does not match")
  const bytes = new Uint8Array(await request.arrayBuffer())
  if (bytes.length !== signed.size) return xml(403, "AccessDenied", "signature does not match")
  if (signed.kind === "part") {
    const upload = store.uploads.get(signed.uploadId)
    if (upload === undefined) return xml(404, "NoSuchUpload")
    const etag = etagOf(bytes)
    upload.parts.set(signed.partNumber, { bytes, etag })
    return new Response(null, { headers: { etag } })
  }
  if (request.headers.get("content-type") !== signed.contentType) return xml(403, "AccessDenied", "signature does not match")
  if (signed.ifNoneMatch && request.headers.get("if-none-match") !== "*") return xml(403, "AccessDenied", "signature does not match")
  if (signed.ifNoneMatch && store.objects.has(path)) return xml(412, "PreconditionFailed")
  const etag = etagOf(bytes)
  store.objects.set(path, { bytes, etag, contentType: signed.contentType, lastModified: new Date(), cacheControl: undefined, metadata: {} })
  return new Response(null, { headers: { etag } })
}

