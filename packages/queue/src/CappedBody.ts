/**
 * The limits on what the queue's clients read, written once: `readCappedBody` reads a web body (a
 * `Request`'s or a `Response`'s) whole but never past a cap, and the `maxAnswerBytes` and `timeoutMs`
 * options of the clients (their defaults, their checks and the refusals' wording) are defined here. The Promise client
 * (`promise/QueueClient.ts`) and the Receiver helpers (`promise/handlers.ts`) read through it directly;
 * the effect client (`Client.ts`) and the RPC client (`RpcClient.ts`) through `AnswerCap.ts`, which hands
 * effect's response stream to it. Plain node and web APIs only: `@svc/queue/client` loads this file and
 * must load no effect.
 */

/**
 * The default `maxAnswerBytes`. Above the largest answer a queue with default settings gives: a DLQ page
 * of 100 entries, each with a body and a last response body of up to `QUEUE_MAX_MESSAGE_BYTES` (1 MiB)
 * sent base64 (1.33 MiB), is about 270 MiB. A cap of a few MiB would refuse such pages; no cap read
 * whatever a server sent (an endless body until a timeout, gigabytes on a fast link) into memory.
 */
export const DEFAULT_MAX_ANSWER_BYTES = 320 * 1024 * 1024

/** An option's value in a refusal: a number as written (NaN, Infinity too), anything else as JSON. */
const shown = (value: unknown): string => typeof value === "number" ? String(value) : JSON.stringify(value) ?? typeof value

/** Why `value` cannot be a `maxAnswerBytes` (a whole number of bytes from 1), or undefined when it can. */
export const maxAnswerBytesProblem = (value: unknown): string | undefined =>
  Number.isSafeInteger(value) && (value as number) >= 1
    ? undefined
    : `maxAnswerBytes must be a whole number of bytes from 1, got ${shown(value)}`

/** The refusal of an answer over the cap, as both clients word it. */
export const answerTooLargeMessage = (baseUrl: string, maxAnswerBytes: number): string =>
  `The answer from ${baseUrl} is larger than ${maxAnswerBytes} bytes, the most this client reads (maxAnswerBytes)`

/** The default `timeoutMs`: how long one call may take, its answer read whole. */
export const DEFAULT_TIMEOUT_MS = 60_000

/** node's timers hold at most 2^31 - 1 ms: a larger delay fires at once. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1

/** Why `value` cannot be a `timeoutMs`, or undefined when it can. */
export const timeoutMsProblem = (value: unknown): string | undefined =>
  Number.isSafeInteger(value) && (value as number) >= 1 && (value as number) <= MAX_TIMEOUT_MS
    ? undefined
    : `timeoutMs must be a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS}, got ${shown(value)}`

/** The failure of a call with no whole answer within `timeoutMs`, as the clients word it. */
export const noAnswerInTimeMessage = (baseUrl: string, timeoutMs: number): string =>
  `No whole answer from the queue at ${baseUrl} within ${timeoutMs} ms`

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
