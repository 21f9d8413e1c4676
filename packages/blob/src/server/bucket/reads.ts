/**
 * Reads: HEAD (`info`, `exists`) and GET (`get` as a stream, `getBytes`, `getText`). All retried.
 *
 * @module
 */
import { GetObjectCommand, HeadObjectCommand } from "@aws-sdk/client-s3"
import { Effect } from "effect"
import { BlobError } from "../../shared/BlobError.ts"
import type { S3Context } from "./client.ts"
import { quoted, requirePath } from "./keys.ts"
import type { GetResult, ObjectInfo } from "./types.ts"

export const makeReads = (s3: S3Context) => {
  const { Bucket, send, retried, url } = s3

  const objectInfo = (path: string, out: {
    ContentLength?: number | undefined
    ETag?: string | undefined
    ContentType?: string | undefined
    LastModified?: Date | undefined
    CacheControl?: string | undefined
    Metadata?: Record<string, string> | undefined
  }): ObjectInfo => ({
    path,
    url: url(path),
    size: out.ContentLength ?? 0,
    etag: quoted(out.ETag),
    contentType: out.ContentType ?? "application/octet-stream",
    lastModified: out.LastModified,
    cacheControl: out.CacheControl,
    metadata: out.Metadata ?? {}
  })

  const head = (path: string) =>
    retried(send(path, (client, signal) => client.send(new HeadObjectCommand({ Bucket, Key: path }), { abortSignal: signal })))
      .pipe(Effect.map((out) => objectInfo(path, out)))

  const info = (path: string) => Effect.flatMap(requirePath(path), head)

  const exists = (path: string) =>
    info(path).pipe(
      Effect.as(true),
      Effect.catchIf(BlobError.hasCode("not_found"), () => Effect.succeed(false))
    )

  const get = Effect.fn("Bucket.get")(function*(path: string) {
    yield* requirePath(path)
    const out = yield* retried(send(path, (client, signal) =>
      client.send(new GetObjectCommand({ Bucket, Key: path }), { abortSignal: signal })
    ))
    const body = out.Body?.transformToWebStream() as ReadableStream<Uint8Array> | undefined
    return { ...objectInfo(path, out), body: body ?? new Blob([]).stream() } satisfies GetResult
  })

  const getBytes = (path: string) =>
    Effect.flatMap(requirePath(path), () =>
      retried(send(path, async (client, signal) => {
        const out = await client.send(new GetObjectCommand({ Bucket, Key: path }), { abortSignal: signal })
        return out.Body === undefined ? new Uint8Array(0) : await out.Body.transformToByteArray()
      })))

  const getText = (path: string) => Effect.map(getBytes(path), (bytes) => new TextDecoder().decode(bytes))

  return { head, info, exists, get, getBytes, getText }
}

export type Reads = ReturnType<typeof makeReads>
