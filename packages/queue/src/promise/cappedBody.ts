/**
 * Reading a web body (a `Request`'s or a `Response`'s) whole, but never past a cap: what the Receiver
 * helpers read from a caller and what the Promise client reads from the queue. Plain node and web
 * APIs only, as everything under `promise/`.
 */

/**
 * The bytes of `message`'s body, or undefined once they are over `maxBytes`: declared (`Content-Length`,
 * refused before a byte is read) or read (the stream is cancelled there, never buffered whole). Either
 * way the body is cancelled, so its connection is let go. A stream that fails (broken off, aborted)
 * rejects with its error.
 */
export const readCappedBody = async (
  message: { readonly headers: Headers; readonly body: ReadableStream<Uint8Array> | null },
  maxBytes: number
): Promise<Uint8Array<ArrayBuffer> | undefined> => {
  if (Number(message.headers.get("content-length") ?? 0) > maxBytes) {
    void message.body?.cancel().catch(() => undefined)
    return undefined
  }
  if (message.body === null) return new Uint8Array(0)
  // throws when something else holds the stream (a reader taken and not released)
  const reader = message.body.getReader()
  const chunks: Array<Uint8Array> = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > maxBytes) {
      void reader.cancel().catch(() => undefined)
      return undefined
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks, size)
}
