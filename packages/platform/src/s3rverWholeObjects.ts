/**
 * s3rver's object writes and reads made whole, in its own process (`s3rverChild.ts`). s3rver wrote an
 * object's bytes over its file in place, and answered before they were all on disk; it read an object's
 * size, then opened its file by name. So a read while a write ran saw a cut object (`@svc/blob`'s
 * `updateJson` under concurrent writers read half a JSON document, or the new bytes cut to the old
 * length), a PUT the client gave up on left the bytes that had arrived as the object, and an error of
 * the file's stream (nothing listened for it) ended the process. As on S3, a read now sees the old
 * object or the new one:
 *
 * - a write puts the bytes in a file of their own, which replaces the object's once all are written
 *   (a rename); a write that fails or is cut off leaves the object as it was;
 * - a read opens the object's file first and takes its size from what it opened.
 */
import { createHash, randomBytes } from "node:crypto"
import { createWriteStream } from "node:fs"
import * as fs from "node:fs/promises"
import { createRequire } from "node:module"
import * as path from "node:path"
import { Transform } from "node:stream"
import { pipeline } from "node:stream/promises"
import { objectLock, serialized, writeCondition } from "./s3rverRequests.ts"

/** An object as s3rver's store takes and gives it. */
interface S3Object {
  readonly bucket: string
  readonly key: string
  readonly content: NodeJS.ReadableStream | Buffer | null
  readonly metadata: Record<string, string | number>
  range?: { readonly start: number; readonly end: number }
}
type S3ObjectConstructor = new(bucket: string, key: string, content: S3Object["content"], metadata: S3Object["metadata"]) => S3Object
const S3ObjectModel = createRequire(createRequire(import.meta.url).resolve("s3rver"))("./models/object") as S3ObjectConstructor

/** A byte range asked for (`Range:`), as s3rver's controller passes it. */
interface RangeOptions {
  readonly start?: number
  readonly end?: number
}

/** What of s3rver's file store the whole writes and reads use and replace. */
export interface WholeObjectStore {
  getResourcePath(bucket: string, key: string | undefined, resource: string): string
  getMetadata(bucket: string, key: string): Promise<Record<string, string | number>>
  putMetadata(bucket: string, key: string, metadata: S3Object["metadata"], md5: string): Promise<void>
  putObject(object: S3Object): Promise<{ readonly size: number; readonly md5: string }>
  getObject(bucket: string, key: string, options?: RangeOptions): Promise<S3Object | null>
}

const missing = (error: unknown) => (error as { readonly code?: string }).code === "ENOENT"

/** Replaces `store.putObject` and `store.getObject` (s3rver's own, by name and in place) with whole ones. */
export const serveObjectsWhole = (store: WholeObjectStore): void => {
  store.getObject = async (bucket, key, options) => {
    const handle = await fs.open(store.getResourcePath(bucket, key, "object"), "r").catch((error: unknown) => {
      if (missing(error)) return undefined
      throw error
    })
    if (handle === undefined) return null
    try {
      const stat = await handle.stat()
      const metadata = {
        ...await store.getMetadata(bucket, key),
        "content-length": stat.size,
        "last-modified": stat.mtime.toUTCString()
      }
      // s3rver's range rule, over the size of the file opened
      const lastByte = Math.max(0, stat.size - 1)
      const range = { start: options?.start ?? 0, end: Math.min(options?.end ?? Infinity, lastByte) }
      const asked = options !== undefined && (options.start !== undefined || options.end !== undefined)
      const satisfiable = range.start >= 0 && range.end >= range.start
      const object = new S3ObjectModel(bucket, key, satisfiable ? handle.createReadStream({ ...range, autoClose: true }) : null, metadata)
      if (!satisfiable) await handle.close()
      if (asked) object.range = range
      return object
    } catch (error) {
      await handle.close()
      if (missing(error)) return null
      throw error
    }
  }

  store.putObject = async (object) => {
    const objectPath = store.getResourcePath(object.bucket, object.key, "object")
    await fs.mkdir(path.dirname(objectPath), { recursive: true })
    // beside the object, so the rename stays on its file system; s3rver lists only `._S3rver_object` files
    const pending = `${objectPath}.${randomBytes(8).toString("hex")}.pending`
    const hash = createHash("md5")
    let size = 0
    const counted = new Transform({
      transform(chunk: Buffer, _, done) {
        hash.update(chunk)
        size += chunk.length
        done(null, chunk)
      }
    })
    try {
      const content = object.content ?? Buffer.alloc(0)
      await pipeline(Buffer.isBuffer(content) ? [content] : content, counted, createWriteStream(pending))
      const md5 = hash.digest("hex")
      // the write's conditions (s3rverRequests.ts) checked again with the object as it is now, and the
      // object and its ETag replaced, with no other write of it in between
      const condition = writeCondition.getStore()
      await serialized(objectLock(object.bucket, object.key), async () => {
        if (condition !== undefined) await condition()
        await fs.rename(pending, objectPath)
        await store.putMetadata(object.bucket, object.key, object.metadata, md5)
      })
      return { size, md5 }
    } catch (error) {
      await fs.rm(pending, { force: true })
      throw error
    }
  }
}
