/**
 * Put bodies: every accepted form (string, bytes, Blob, web stream, async iterable, Request) turned into
 * bytes or a byte stream, a peek at the leading bytes (for sniffing) that loses nothing, byte counting
 * with size limits, and cutting a stream into multipart parts.
 *
 * @module
 */
import { Effect } from "effect"
import { BlobError } from "../../shared/BlobError.ts"
import { formatBytes, formatOverLimit } from "../../shared/size.ts"
import type { PutBody } from "./types.ts"

const encoder = new TextEncoder()

export type Prepared =
  | { readonly kind: "bytes"; readonly bytes: Uint8Array; readonly typeHint: string | undefined }
  | {
    readonly kind: "stream"
    readonly source: AsyncIterable<Uint8Array>
    readonly length: number | undefined
    readonly typeHint: string | undefined
  }

const isAsyncIterable = (u: unknown): u is AsyncIterable<Uint8Array> =>
  typeof u === "object" && u !== null && Symbol.asyncIterator in u

const webStreamIterable = (stream: ReadableStream<Uint8Array>): AsyncIterable<Uint8Array> => ({
  async *[Symbol.asyncIterator]() {
    const reader = stream.getReader()
    try {
      while (true) {
        const { done, value } = await reader.read()
        if (done) return
        yield value
      }
    } finally {
      reader.releaseLock()
    }
  }
})

const toBytes = (chunk: unknown): Uint8Array =>
  chunk instanceof Uint8Array
    ? chunk
    : typeof chunk === "string"
    ? encoder.encode(chunk)
    : chunk instanceof ArrayBuffer
    ? new Uint8Array(chunk)
    : (() => {
      throw new BlobError("invalid_input", { message: "A body stream must yield bytes" })
    })()

export const prepareBody = (body: PutBody): Prepared | BlobError => {
  if (typeof body === "string") return { kind: "bytes", bytes: encoder.encode(body), typeHint: undefined }
  if (body instanceof Uint8Array) return { kind: "bytes", bytes: body, typeHint: undefined }
  if (body instanceof ArrayBuffer) return { kind: "bytes", bytes: new Uint8Array(body), typeHint: undefined }
  if (typeof Request !== "undefined" && body instanceof Request) {
    if (body.body === null || body.bodyUsed) {
      return new BlobError("empty_body", { message: "The request has no body left to store" })
    }
    const lengthHeader = body.headers.get("content-length")
    const length = lengthHeader !== null && /^\d+$/.test(lengthHeader) ? Number(lengthHeader) : undefined
    return {
      kind: "stream",
      source: webStreamIterable(body.body),
      length,
      typeHint: body.headers.get("content-type") ?? undefined
    }
  }
  if (typeof Blob !== "undefined" && body instanceof Blob) {
    return {
      kind: "stream",
      source: webStreamIterable(body.stream()),
      length: body.size,
      typeHint: body.type === "" ? undefined : body.type
    }
  }
  if (typeof ReadableStream !== "undefined" && body instanceof ReadableStream) {
    return { kind: "stream", source: webStreamIterable(body), length: undefined, typeHint: undefined }
  }
  if (isAsyncIterable(body)) return { kind: "stream", source: body, length: undefined, typeHint: undefined }
  return new BlobError("invalid_input", {
    message: "Unsupported body: pass a string, bytes, a Blob, a stream or a Request"
  })
}

/** Reads up to `n` leading bytes without losing them: returns them and an iterable of the whole body. */
export const peek = async (source: AsyncIterable<Uint8Array>, n: number) => {
  const iterator = source[Symbol.asyncIterator]()
  const head: Array<Uint8Array> = []
  let got = 0
  let done = false
  while (got < n) {
    const next = await iterator.next()
    if (next.done === true) {
      done = true
      break
    }
    const chunk = toBytes(next.value)
    head.push(chunk)
    got += chunk.length
  }
  const leading = concat(head, got)
  const rest: AsyncIterable<Uint8Array> = {
    async *[Symbol.asyncIterator]() {
      for (const chunk of head) yield chunk
      if (done) return
      while (true) {
        const next = await iterator.next()
        if (next.done === true) return
        yield toBytes(next.value)
      }
    }
  }
  return { leading, done, whole: done ? leading : undefined, rest }
}

export const concat = (chunks: ReadonlyArray<Uint8Array>, total: number): Uint8Array => {
  if (chunks.length === 1 && chunks[0] !== undefined) return chunks[0]
  const out = new Uint8Array(total)
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.length
  }
  return out
}

export const tooLarge = (size: number | string, limit: number, hint?: string) => {
  const [shownSize, shownLimit] = typeof size === "number" ? formatOverLimit(size, limit) : [size, formatBytes(limit)]
  return new BlobError("too_large", {
    message: `The body is ${shownSize}, over the limit of ${shownLimit}`,
    ...(hint === undefined ? {} : { hint })
  })
}

/** Counts bytes as they pass; throws too_large past `max`, invalid_input when `exact` is not met. */
export const counted = (source: AsyncIterable<Uint8Array>, limits: { max?: number | undefined; exact?: number | undefined }) => {
  const state = { bytes: 0 }
  const iterable: AsyncIterable<Uint8Array> = {
    async *[Symbol.asyncIterator]() {
      for await (const chunk of source) {
        state.bytes += chunk.length
        if (limits.max !== undefined && state.bytes > limits.max) throw tooLarge(`over ${formatBytes(limits.max)}`, limits.max)
        if (limits.exact !== undefined && state.bytes > limits.exact) {
          throw new BlobError("invalid_input", { message: `The body is longer than its declared size of ${limits.exact} bytes` })
        }
        yield chunk
      }
      if (limits.exact !== undefined && state.bytes !== limits.exact) {
        throw new BlobError("invalid_input", {
          message: `The body ended after ${state.bytes} bytes; its declared size is ${limits.exact}`
        })
      }
    }
  }
  return { iterable, state }
}

/** Cuts a byte stream into parts of `partSize` (the last one shorter), numbered from 1. */
export async function* partsOf(source: AsyncIterable<Uint8Array>, partSize: number) {
  let buffer: Array<Uint8Array> = []
  let buffered = 0
  let partNumber = 1
  for await (const chunk of source) {
    let offset = 0
    while (offset < chunk.length) {
      const take = Math.min(partSize - buffered, chunk.length - offset)
      buffer.push(chunk.subarray(offset, offset + take))
      buffered += take
      offset += take
      if (buffered === partSize) {
        yield { partNumber: partNumber++, bytes: concat(buffer, buffered) }
        buffer = []
        buffered = 0
      }
    }
  }
  if (buffered > 0 || partNumber === 1) yield { partNumber, bytes: concat(buffer, buffered) }
}

/** The whole of a stream, counted (too_large past `max`, invalid_input when `exact` is not met). */
export const readAll = (
  source: AsyncIterable<Uint8Array>,
  limits: { max?: number | undefined; exact?: number | undefined }
): Effect.Effect<Uint8Array, BlobError> =>
  Effect.tryPromise({
    try: async () => {
      const chunks: Array<Uint8Array> = []
      let total = 0
      for await (const chunk of counted(source, limits).iterable) {
        chunks.push(chunk)
        total += chunk.length
      }
      return concat(chunks, total)
    },
    catch: (error) => BlobError.is(error) ? error : new BlobError("invalid_input", { message: "The body stream failed", cause: error })
  })
