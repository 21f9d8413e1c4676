/**
 * Receiver helpers, as QStash's `verifySignature*` are: wrap a request handler so that it runs only
 * for requests the queue signed. The raw body is read once, verified against `Svc-Signature`
 * (`Receiver`), and handed to the handler; any other request is answered `401`
 * `{"code":"invalid_signature","message":...,"reason":...}` without calling the handler.
 *
 * - {@link verifySignatureNode}: a `node:http` request listener (also Express, whose `req`/`res`
 *   are node's, as long as no body parser ran before it).
 * - {@link verifySignatureFetch}: a Fetch handler `(Request, ...rest) => Response` (a Next.js route
 *   handler, Hono's `c.req.raw`, Deno, Bun, Cloudflare Workers).
 */
import { described } from "@svc/platform/Arguments"
import type { IncomingMessage, ServerResponse } from "node:http"
import { readCappedBody } from "../CappedBody.ts"
import { clockToleranceProblem, type SignatureClaims } from "../Signing.ts"
import { Receiver, SignatureError, type SigningKeyPair } from "./Receiver.ts"

/** The keys (or a `Receiver` holding them) and what else to check. */
export type ReceiverOptions<Request> = (SigningKeyPair | { readonly receiver: Receiver }) & {
  /**
   * The URL the queue calls this endpoint at (the signature's `sub` must equal it), or how to
   * compute it from the request. Without it the signature is accepted for any URL.
   */
  readonly url?: string | ((request: Request) => string) | undefined
  /** Allowed clock difference, seconds (default 5). */
  readonly clockTolerance?: number | undefined
  /** The largest body read, in bytes (default 16 MiB; the queue's callbacks carry base64): larger is `413`. */
  readonly maxBodyBytes?: number | undefined
}

const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024

/** The options' body cap; one that is not a whole number of bytes is a `TypeError` when the handler is wrapped. */
const maxBodyBytesOf = (options: { readonly maxBodyBytes?: unknown }): number => {
  const max = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
  if (!Number.isSafeInteger(max) || (max as number) < 0) {
    throw new TypeError(`Receiver: maxBodyBytes must be a whole number of bytes, got ${JSON.stringify(max) ?? typeof max}`)
  }
  return max as number
}

/** The options' receiver; a bad `clockTolerance` is a `TypeError` when the handler is wrapped, not a 401 on every delivery. */
const receiverOf = <Request>(options: ReceiverOptions<Request>): Receiver => {
  if (typeof options !== "object" || options === null) {
    throw new TypeError(
      `Receiver: the handler's options must be an object ({ currentSigningKey, nextSigningKey, url? } or { receiver, url? }), got ${described(options)}`
    )
  }
  const problem = clockToleranceProblem(options.clockTolerance)
  if (problem !== undefined) throw new TypeError(`Receiver: ${problem}`)
  return "receiver" in options ? options.receiver : new Receiver(options)
}

/** The suite's error body: `{code, message}` and any details. */
const errorBody = (code: string, message: string, details: Record<string, string> = {}) =>
  JSON.stringify({ code, message, ...details })

/** Why a request is refused before its handler runs: the status and the suite's error body. */
interface Refusal {
  readonly status: number
  readonly body: string
}

const tooLarge = (maxBytes: number): Refusal => ({
  status: 413,
  body: errorBody("payload_too_large", `The body is larger than ${maxBytes} bytes`)
})

/** Verifies a read body: its claims, or the 401 answer. */
const check = async <Request>(
  options: ReceiverOptions<Request>,
  receiver: Receiver,
  request: Request,
  signature: string | null | undefined,
  body: Uint8Array
): Promise<SignatureClaims | Refusal> => {
  if (signature === null || signature === undefined || signature === "") {
    return { status: 401, body: errorBody("invalid_signature", "The request has no Svc-Signature header", { reason: "malformed" }) }
  }
  try {
    const url = typeof options.url === "function" ? options.url(request) : options.url
    return await receiver.verify({ signature, body, url, clockTolerance: options.clockTolerance })
  } catch (error) {
    if (!(error instanceof SignatureError)) throw error
    return { status: 401, body: errorBody("invalid_signature", error.message, { reason: error.reason }) }
  }
}

const isRefusal = (verdict: SignatureClaims | Refusal): verdict is Refusal => "status" in verdict

/**
 * The body of a node request, or undefined once it is over `maxBytes` (declared or read); the rest
 * is then drained unread, so the refusal can still be answered on the connection.
 */
const readBody = (request: IncomingMessage, maxBytes: number): Promise<Buffer | undefined> =>
  new Promise((resolve, reject) => {
    // A body parser that ran first (express.json()) read it: its end will never come again.
    if (request.readableEnded || request.readableFlowing === true) {
      return reject(new Error("it was already read before this handler"))
    }
    if (Number(request.headers["content-length"] ?? 0) > maxBytes) {
      request.resume()
      return resolve(undefined)
    }
    const chunks: Array<Buffer> = []
    let size = 0
    request.on("data", (chunk: Buffer) => {
      if (size > maxBytes) return
      size += chunk.length
      if (size > maxBytes) resolve(undefined)
      else chunks.push(chunk)
    })
    request.on("end", () => resolve(Buffer.concat(chunks)))
    request.on("error", reject)
  })

/**
 * The body of a Fetch request, or undefined once it is over `maxBytes` (`readCappedBody`), or a refusal
 * when it cannot be read (already read, broken off by the client).
 */
const readFetchBody = async (request: Request, maxBytes: number): Promise<Uint8Array<ArrayBuffer> | undefined | Refusal> => {
  if (request.bodyUsed) return unreadable("it was already read before this handler")
  try {
    return await readCappedBody(request, maxBytes)
  } catch (error) {
    return unreadable((error as Error).message)
  }
}

const unreadable = (why: string): Refusal => ({
  status: 400,
  body: errorBody("invalid_request", `The request body could not be read: ${why}`)
})

/**
 * A `node:http` listener that verifies each request before `handler` runs with the raw body (a
 * `Buffer`, read once) and the signature's claims. A handler that throws (or rejects) is answered
 * `500` when it has not answered yet, and its error goes to `onError` (default `console.error`).
 *
 * ```ts
 * http.createServer(verifySignatureNode(async (req, res, body) => {
 *   await handleOrder(JSON.parse(body.toString()))
 *   res.writeHead(200).end()
 * }, { currentSigningKey: process.env.SVC_CURRENT_SIGNING_KEY!, nextSigningKey: process.env.SVC_NEXT_SIGNING_KEY! }))
 * ```
 */
export const verifySignatureNode = (
  handler: (request: IncomingMessage, response: ServerResponse, body: Buffer, claims: SignatureClaims) => unknown,
  options: ReceiverOptions<IncomingMessage> & { readonly onError?: ((error: unknown) => void) | undefined }
): (request: IncomingMessage, response: ServerResponse) => Promise<void> => {
  const receiver = receiverOf(options)
  const maxBytes = maxBodyBytesOf(options)
  const report = options.onError ?? ((error: unknown) => console.error("verifySignatureNode: the handler failed", error))
  const refuse = (response: ServerResponse, refusal: Refusal) => {
    response.writeHead(refusal.status, { "content-type": "application/json" }).end(refusal.body)
  }
  return async (request, response) => {
    let body: Buffer | undefined
    try {
      body = await readBody(request, maxBytes)
    } catch (error) {
      // The client broke off the body: the handler never ran, so this is not its failure.
      if (!response.headersSent) refuse(response, unreadable((error as Error).message))
      return
    }
    try {
      if (body === undefined) {
        response.setHeader("connection", "close")
        return refuse(response, tooLarge(maxBytes))
      }
      const header = request.headers["svc-signature"]
      const verdict = await check(options, receiver, request, Array.isArray(header) ? header[0] : header, body)
      if (isRefusal(verdict)) return refuse(response, verdict)
      await handler(request, response, body, verdict)
    } catch (error) {
      if (!response.headersSent) refuse(response, { status: 500, body: errorBody("internal_error", "The handler failed") })
      else response.end()
      report(error)
    }
  }
}

/**
 * A Fetch handler that verifies each request before `handler` runs. The body is read once; the
 * handler gets a copy of the request whose body it can read as usual (`await request.json()`), and
 * whatever else the framework passes (Next.js's route context, ...).
 *
 * ```ts
 * // app/api/orders/route.ts (Next.js)
 * export const POST = verifySignatureFetch(async (request) => {
 *   await handleOrder(await request.json())
 *   return new Response("ok")
 * }, { currentSigningKey: process.env.SVC_CURRENT_SIGNING_KEY!, nextSigningKey: process.env.SVC_NEXT_SIGNING_KEY! })
 * ```
 */
export const verifySignatureFetch = <Rest extends Array<unknown>>(
  handler: (request: Request, ...rest: Rest) => Response | Promise<Response>,
  options: ReceiverOptions<Request>
): (request: Request, ...rest: Rest) => Promise<Response> => {
  const receiver = receiverOf(options)
  const maxBytes = maxBodyBytesOf(options)
  const refuse = (refusal: Refusal) =>
    new Response(refusal.body, { status: refusal.status, headers: { "content-type": "application/json" } })
  return async (request, ...rest) => {
    const body = await readFetchBody(request, maxBytes)
    if (body === undefined) return refuse(tooLarge(maxBytes))
    if (!(body instanceof Uint8Array)) return refuse(body)
    const verdict = await check(options, receiver, request, request.headers.get("svc-signature"), body)
    if (isRefusal(verdict)) return refuse(verdict)
    // GET and HEAD requests carry no body; anything else gets the bytes read above.
    const copy = request.method === "GET" || request.method === "HEAD" ? new Request(request) : new Request(request, { body })
    return handler(copy, ...rest)
  }
}
