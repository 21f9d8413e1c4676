/**
 * s3rver's object writes and reads made whole, in its own process (`s3rverChild.ts`). s3rver wrote an
 * object's bytes over its file in place, and answered before they were all on disk; it read an object's
 * size, then opened its file by name. So a read while a write ran saw a cut object (`@svc/blob`'s
 * `updateJson` under concurrent writers read half a JSON document, or the new bytes cut to the old
 * length), a PUT the client gave up on left the bytes that had arrived as the object, and an error of
 * the file's stream (nothing listened for it) ended the process. As on S3, a read now sees the old
 * object or the new one:
 *
 * - a write (a PUT, a part, a completion, a copy) puts the bytes in a file of their own, outside the
 *   buckets (s3rver's listing walks them), which replaces the object's once all are written (a rename),
 *   its ETag and metadata with it under the object's lock; a write that fails or is cut off leaves the
 *   object as it was and no open file behind (a part cut off kept its file open for good);
 * - a read opens the object's file and reads its ETag and metadata under that lock, then streams
 *   what it opened; an empty object has no byte range to give (it answered 206 with a length of 1);
 * - a delete removes the object's files and leaves its folders (s3rver removed the folders it emptied,
 *   under a PUT of another key in them or a second delete of the same batch: 500s);
 * - a listing that meets a file renamed away while it walked is listed again.
 */
import { createHash, randomBytes } from "node:crypto"
import { createReadStream, createWriteStream } from "node:fs"
import * as fs from "node:fs/promises"
import { createRequire } from "node:module"
import * as path from "node:path"
import { Readable, Transform } from "node:stream"
import { pipeline } from "node:stream/promises"
import { missing, noSuchBucket, noSuchUpload, objectLock, S3Error, serialized, writeCondition } from "./s3rverRequests.ts"

/** An object as s3rver's store takes and gives it. */
interface S3Object {
  readonly bucket: string
  readonly key: string
  readonly content: NodeJS.ReadableStream | Buffer | null
  readonly metadata: Record<string, string | number>
  range?: { readonly start: number; readonly end: number }
}
type S3ObjectConstructor = new(bucket: string, key: string, content: S3Object["content"], metadata: S3Object["metadata"]) => S3Object
const S3ObjectModel = createRequire(createRequire(import.meta.url).resolve("s3rver"))("./models/object") as
  & S3ObjectConstructor
  & { readonly ALLOWED_METADATA: ReadonlyArray<string> }
/** The request headers s3rver keeps as an object's metadata (besides `x-amz-meta-*`). */
const ALLOWED_METADATA = new Set(S3ObjectModel.ALLOWED_METADATA)

/** A byte range asked for (`Range:`), as s3rver's controller passes it. */
interface RangeOptions {
  readonly start?: number
  readonly end?: number
}

/** What of s3rver's file store the whole writes and reads use and replace. */
export interface WholeObjectStore {
  readonly rootDirectory: string
  getBucket(name: string): Promise<unknown>
  getResourcePath(bucket: string, key: string | undefined, resource: string): string
  getMetadata(bucket: string, key: string): Promise<Record<string, string | number>>
  putMetadata(bucket: string, key: string, metadata: S3Object["metadata"], md5?: string): Promise<void>
  putObject(object: S3Object): Promise<{ readonly size: number; readonly md5: string }>
  getObject(bucket: string, key: string, options?: RangeOptions): Promise<S3Object | null>
  putPart(bucket: string, uploadId: string, partNumber: string | number, content: NodeJS.ReadableStream): Promise<{ readonly size: number; readonly md5: string }>
  putObjectMultipart(bucket: string, uploadId: string, parts: ReadonlyArray<{ readonly number: number }>): Promise<{ readonly size: number; readonly md5: string }>
  copyObject(srcBucket: string, srcKey: string, destBucket: string, destKey: string, replacementMetadata?: S3Object["metadata"]): Promise<Record<string, string | number>>
  deleteObject(bucket: string, key: string): Promise<void>
  listObjects(...args: ReadonlyArray<unknown>): Promise<unknown>
}

/** Replaces s3rver's store methods that wrote in place or read by name (module comment) with whole ones. */
export const serveObjectsWhole = (store: WholeObjectStore): void => {
  // beside the buckets' folder, on its file system (a rename), where no listing walks; emptied at start
  // (a write cut off by the process's end left its file)
  const pendingFolder = `${store.rootDirectory.replace(/\/+$/, "")}-pending`
  const pendingReady = fs.rm(pendingFolder, { recursive: true, force: true }).then(() => fs.mkdir(pendingFolder, { recursive: true }))
  const pendingFile = async () => {
    await pendingReady
    return path.join(pendingFolder, randomBytes(12).toString("hex"))
  }

  /** `content` into a file of its own, counted and hashed; the file is gone if it fails. */
  const writePending = async (content: NodeJS.ReadableStream | Buffer | AsyncIterable<Uint8Array>) => {
    const file = await pendingFile()
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
      await pipeline(Buffer.isBuffer(content) ? [content] : content, counted, createWriteStream(file))
    } catch (error) {
      await fs.rm(file, { force: true })
      throw error
    }
    return { file, size, md5: hash.digest("hex") }
  }

  /** A small file replaced whole (the ETag, the metadata). */
  const replaceFile = async (target: string, text: string) => {
    const file = await pendingFile()
    await fs.writeFile(file, text)
    await fs.rename(file, target)
  }

  const originalGetMetadata = store.getMetadata.bind(store)
  const originalListObjects = store.listObjects.bind(store)

  store.putMetadata = async (bucket, key, metadata, md5) => {
    const json: Record<string, string | number> = {}
    for (const [name, value] of Object.entries(metadata)) {
      if (ALLOWED_METADATA.has(name) || name.startsWith("x-amz-meta-")) json[name] = value
    }
    if (md5 !== undefined) await replaceFile(store.getResourcePath(bucket, key, "object.md5"), md5)
    await replaceFile(store.getResourcePath(bucket, key, "metadata.json"), JSON.stringify(json, null, 2))
  }

  /** Moves a written file in as the object, its conditions checked again, its ETag and metadata with it. */
  const replaceObject = (bucket: string, key: string, written: { readonly file: string; readonly md5: string }, metadata: S3Object["metadata"]) => {
    const objectPath = store.getResourcePath(bucket, key, "object")
    const condition = writeCondition.getStore()
    return serialized(objectLock(bucket, key), async () => {
      try {
        if (condition !== undefined) await condition()
        // a bucket deleted while the bytes came in is not made again by the write
        if (!(await store.getBucket(bucket))) throw noSuchBucket(bucket)
        await fs.mkdir(path.dirname(objectPath), { recursive: true })
        await fs.rename(written.file, objectPath)
      } catch (error) {
        await fs.rm(written.file, { force: true })
        throw error
      }
      await store.putMetadata(bucket, key, metadata, written.md5)
    })
  }

  store.getMetadata = (bucket, key) => serialized(objectLock(bucket, key), () => originalGetMetadata(bucket, key))

  store.getObject = async (bucket, key, options) => {
    const opened = await serialized(objectLock(bucket, key), async () => {
      const handle = await fs.open(store.getResourcePath(bucket, key, "object"), "r").catch((error: unknown) => {
        if (missing(error)) return undefined
        throw error
      })
      if (handle === undefined) return undefined
      try {
        const stat = await handle.stat()
        return { handle, stat, metadata: await originalGetMetadata(bucket, key) }
      } catch (error) {
        await handle.close()
        if (missing(error)) return undefined
        throw error
      }
    })
    if (opened === undefined) return null
    const { handle, stat } = opened
    const metadata = { ...opened.metadata, "content-length": stat.size, "last-modified": stat.mtime.toUTCString() }
    const asked = options !== undefined && (options.start !== undefined || options.end !== undefined)
    // s3rver's range rule, over the size of the file opened; an empty object has no byte to give
    const range = { start: options?.start ?? 0, end: Math.min(options?.end ?? Infinity, stat.size - 1) }
    if (stat.size === 0) {
      await handle.close()
      // a stream, not a buffer: a HEAD destroys the content it does not send (a buffer has no destroy: 500)
      return new S3ObjectModel(bucket, key, Readable.from([]), metadata)
    }
    const satisfiable = range.start >= 0 && range.end >= range.start
    const object = new S3ObjectModel(bucket, key, satisfiable ? handle.createReadStream({ ...range, autoClose: true }) : null, metadata)
    if (!satisfiable) await handle.close()
    if (asked) object.range = range
    return object
  }

  store.putObject = async (object) => {
    const written = await writePending(object.content ?? Buffer.alloc(0))
    await replaceObject(object.bucket, object.key, written, object.metadata)
    return { size: written.size, md5: written.md5 }
  }

  store.putPart = async (bucket, uploadId, partNumber, content) => {
    const written = await writePending(content)
    const partPath = path.join(store.getResourcePath(bucket, undefined, "uploads"), uploadId, String(partNumber))
    try {
      // the upload's folder is there (s3rverMultipart.ts checked it), unless an abort took it meanwhile;
      // the part counts once its ETag is in (ListParts, a completion)
      await fs.writeFile(`${partPath}.md5.pending`, written.md5)
      await fs.rename(written.file, partPath)
      await fs.rename(`${partPath}.md5.pending`, `${partPath}.md5`)
    } catch (error) {
      await Promise.all([written.file, `${partPath}.md5.pending`].map((file) => fs.rm(file, { force: true })))
      if (missing(error)) throw noSuchUpload(uploadId)
      throw error
    }
    return { size: written.size, md5: written.md5 }
  }

  store.putObjectMultipart = async (bucket, uploadId, parts) => {
    const folder = path.join(store.getResourcePath(bucket, undefined, "uploads"), uploadId)
    const [key, metadata] = await Promise.all([
      fs.readFile(path.join(folder, "key"), "utf8"),
      fs.readFile(path.join(folder, "metadata"), "utf8").then((text) => JSON.parse(text) as S3Object["metadata"])
    ])
    // the parts one after another; a part file ending early or gone ends the write (its stream closed with it)
    const content = async function*() {
      for (const part of [...parts].sort((a, b) => a.number - b.number)) {
        for await (const chunk of createReadStream(path.join(folder, String(part.number)))) yield chunk as Uint8Array
      }
    }
    const written = await writePending(content())
    await replaceObject(bucket, key, written, metadata)
    await fs.rm(folder, { recursive: true, force: true })
    return { size: written.size, md5: written.md5 }
  }

  store.copyObject = async (srcBucket, srcKey, destBucket, destKey, replacementMetadata) => {
    const source = await store.getObject(srcBucket, srcKey)
    if (source === null || source.content === null) throw new S3Error("NoSuchKey", "The specified key does not exist.", { Key: srcKey })
    const written = await writePending(source.content)
    await replaceObject(destBucket, destKey, written, replacementMetadata ?? source.metadata)
    return store.getMetadata(destBucket, destKey)
  }

  store.deleteObject = (bucket, key) =>
    serialized(objectLock(bucket, key), async () => {
      // its tags too (s3rver left them, and a new object under the key had them)
      await Promise.all(["object", "object.md5", "metadata.json", "tagging.xml"].map((resource) =>
        fs.rm(store.getResourcePath(bucket, key, resource), { force: true })
      ))
    })

  store.listObjects = async (...args) => {
    for (let attempt = 1;; attempt++) {
      try {
        return await originalListObjects(...args)
      } catch (error) {
        if (!missing(error) || attempt === 10) throw error
      }
    }
  }
}
