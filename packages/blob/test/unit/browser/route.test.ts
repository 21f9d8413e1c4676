/**
 * One route call (`src/browser/upload/route.ts`) against routes that answer badly: a real local HTTP
 * server that sends headers and then stalls (the stall timer must cover the body too, not only the
 * headers), and scripted answers of the wrong shape, each of which must be a BlobError naming the field
 * and must never send the file's bytes anywhere.
 */
import { assert, describe, it } from "@effect/vitest"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { upload } from "../../../src/browser/upload.ts"
import { BlobError } from "../../../src/shared/BlobError.ts"
import { fileOf, scriptedStorage } from "../../browser/scripted.ts"

const fast = { retryDelay: { base: 1, cap: 5 }, resume: false } as const

const failure = (promise: Promise<unknown>) => promise.then(() => assert.fail("expected a rejection"), (e: unknown) => e)

/** Settles within `ms` or fails the test (the fault was an upload that never settles). */
const within = <A>(promise: Promise<A>, ms: number) =>
  Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`not settled after ${ms} ms`)), ms))])

/** A route on 127.0.0.1 that answers 200 with JSON headers, writes `start` of the body, then nothing. */
const stallingRoute = async (start: string) => {
  let requests = 0
  const server = http.createServer((req, res) => {
    requests++
    req.resume()
    res.writeHead(200, { "content-type": "application/json" })
    if (start === "") res.flushHeaders()
    else res.write(start)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/api/upload`,
    requests: () => requests,
    close: () => {
      server.closeAllConnections()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

describe("route call: stallTimeout covers the whole answer", () => {
  for (const [name, start] of [["headers, then nothing", ""], ["headers and half a body, then nothing", "{\"type\":"]] as const) {
    it(`a route that sends ${name} is given up after stallTimeout, retried, then request_failed`, async () => {
      const route = await stallingRoute(start)
      try {
        const storage = scriptedStorage(() => ({ status: 200, etag: "\"e\"" }))
        const error = await within(
          failure(upload(fileOf(5), { route: route.url, XMLHttpRequest: storage.Xhr, stallTimeout: 150, retries: 1, ...fast })),
          5_000
        )
        assert.isTrue(BlobError.is(error, "request_failed"), String(error))
        assert.match((error as BlobError).message, /^Starting the upload failed after 2 attempts \(last status none: no answer\)/)
        assert.strictEqual(route.requests(), 2)
        assert.strictEqual(storage.puts.length, 0)
      } finally {
        await route.close()
      }
    })
  }
})
