/**
 * Test support: a scripted HTTP server standing in for S3 or STS. Each request is recorded and answered by
 * the script (status, headers, body); `xmlError` builds S3's XML error body.
 */
import { Effect } from "effect"
import type { Scope } from "effect"
import { createServer, type IncomingMessage } from "node:http"
import type { AddressInfo } from "node:net"

export interface ScriptedRequest {
  readonly method: string
  readonly url: string
  readonly headers: IncomingMessage["headers"]
  readonly body: string
}

export interface ScriptedAnswer {
  readonly status: number
  readonly headers?: Record<string, string>
  readonly body?: string
}

export const xmlError = (code: string, message = "scripted"): string =>
  `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message><RequestId>r</RequestId></Error>`

/** STS's error body (the query protocol's shape). */
export const stsError = (code: string, message = "scripted"): string =>
  `<ErrorResponse><Error><Type>Sender</Type><Code>${code}</Code><Message>${message}</Message></Error><RequestId>r</RequestId></ErrorResponse>`

export const scriptedServer = (
  script: (request: ScriptedRequest, index: number) => ScriptedAnswer
): Effect.Effect<{ readonly url: string; readonly requests: Array<ScriptedRequest> }, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const requests: Array<ScriptedRequest> = []
      const server = createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (c: Buffer) => chunks.push(c))
        req.on("end", () => {
          const request = {
            method: req.method ?? "GET",
            url: req.url ?? "/",
            headers: req.headers,
            body: Buffer.concat(chunks).toString("utf8")
          }
          requests.push(request)
          const answer = script(request, requests.length - 1)
          res.writeHead(answer.status, { "content-type": "application/xml", ...answer.headers })
          res.end(answer.body ?? "")
        })
      })
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      const { port } = server.address() as AddressInfo
      return { server, url: `http://127.0.0.1:${port}`, requests }
    }),
    ({ server }) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          server.closeAllConnections()
          server.close(() => resolve())
        })
      )
  ).pipe(Effect.map(({ url, requests }) => ({ url, requests })))
