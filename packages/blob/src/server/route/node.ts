/**
 * `toNodeListener`: an upload handler on a `node:http` server, the body handed over as a stream so the
 * handler's body cap holds there too.
 *
 * @module
 */
import type { UploadHandler } from "./types.ts"

/**
 * Serves a handler on a `node:http` server: `createServer(toNodeListener(handler))`. The body is handed
 * to the handler as a stream, so the handler's cap (`maxBodySize`) holds here too: once the handler stops
 * reading (a body over the cap), nothing more is read, and the answer closes the connection.
 */
export const toNodeListener = (handler: UploadHandler) =>
(
  req: import("node:http").IncomingMessage,
  res: import("node:http").ServerResponse
): void => {
  let ended = false
  req.on("end", () => {
    ended = true
  })
  req.on("error", () => res.destroy())
  const headers = new Headers()
  for (const [key, value] of Object.entries(req.headers)) {
    if (value === undefined) continue
    for (const v of Array.isArray(value) ? value : [value]) headers.append(key, v)
  }
  const method = req.method ?? "GET"
  const body = method === "GET" || method === "HEAD" ? undefined : new ReadableStream<Uint8Array>({
    start(controller) {
      req.on("data", (chunk: Buffer) => {
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length))
        if ((controller.desiredSize ?? 1) <= 0) req.pause()
      })
      req.on("end", () => controller.close())
      req.on("error", (error) => controller.error(error))
      req.pause()
    },
    pull() {
      req.resume()
    },
    cancel() {
      // the handler has read enough (a body over its cap): stop reading; the answer closes the connection
      req.pause()
      req.removeAllListeners("data")
    }
  })
  let request: Request
  try {
    request = new Request(`http://${req.headers.host ?? "localhost"}${req.url ?? "/"}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body, duplex: "half" } as RequestInit)
    })
  } catch {
    res.writeHead(400, { "content-type": "application/json", connection: "close" })
    res.end(JSON.stringify({ code: "invalid_input", status: 400, message: "The request could not be read" }))
    return
  }
  handler(request).then(
    async (response) => {
      const answer = Buffer.from(await response.arrayBuffer())
      const responseHeaders: Record<string, string> = Object.fromEntries(response.headers)
      // a body left unread is not read now: the connection ends with this answer
      if (!ended && body !== undefined) responseHeaders["connection"] = "close"
      res.writeHead(response.status, responseHeaders)
      res.end(answer)
    },
    (error: unknown) => {
      // an application bug (rethrown by the handler): a bare 500 for the client, the error in the
      // server's log (it was written nowhere, so a throwing hook left no trace)
      console.error("upload route: the handler failed (an application error, answered 500)", error)
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json", ...(ended ? {} : { connection: "close" }) })
      res.end(JSON.stringify({ code: "internal_error", status: 500, message: "Internal error" }))
    }
  )
}
