/**
 * The upload route's body cap (issue 16, item 11): a begin/complete/resume message over `maxBodySize`
 * (default 64 KiB) is 413 `too_large` with BlobError's body, without reading past the cap — a declared
 * Content-Length over it is refused unread, a chunked body is cut off once over it — in process and over
 * a real socket (`toNodeListener`). No storage is reached: every accepted request stops at a sentinel.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { createServer, type Server } from "node:http"
import type { AddressInfo, Socket } from "node:net"
import { Bucket } from "../src/server/Bucket.ts"
import {
  createUploadHandler,
  createUploadRoute,
  DEFAULT_MAX_BODY_SIZE,
  toNodeListener,
  type UploadHandler,
  type UploadRouteOptions
} from "../src/server/route.ts"
import { BlobError } from "../src/shared/BlobError.ts"

// never reached: onBeforeUpload answers first
const offline = () =>
  Effect.runSync(Effect.scoped(Bucket.make({ token: "s3+http://k:s@127.0.0.1:1/offline-bucket", retry: { times: 0 } })))

/**
 * onBeforeUpload refuses with a conflict: reaching it proves the body was read and decoded. Files of at
 * most 1 GiB (multipart plans of at most 205 parts: the default cap stays 64 KiB).
 */
const REACHED = "Reached onBeforeUpload"
const routeWith = (overrides: Partial<UploadRouteOptions> = {}) =>
  createUploadRoute({
    bucket: offline(),
    maxSize: "1GB",
    onBeforeUpload: () => {
      throw new BlobError("conflict", { message: REACHED })
    },
    ...overrides
  })

/** A begin message of about `bytes` bytes (the client payload fills it). */
const beginOf = (bytes: number) => {
  const bare = JSON.stringify({ type: "begin", pathname: "a.png", contentType: "image/png", size: 10, clientPayload: "" })
  return JSON.stringify({
    type: "begin",
    pathname: "a.png",
    contentType: "image/png",
    size: 10,
    clientPayload: "x".repeat(Math.max(0, bytes - bare.length))
  })
}

/** A body stream of `total` bytes in 16 KiB chunks that counts what was pulled from it. */
const countingStream = (total: number) => {
  const state = { pulled: 0 }
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (state.pulled >= total) return controller.close()
      const chunk = new Uint8Array(Math.min(16 * 1024, total - state.pulled)).fill(0x20)
      state.pulled += chunk.length
      controller.enqueue(chunk)
    }
  }, { highWaterMark: 0 })
  return { stream, state }
}

const JSON_TYPE = { "content-type": "application/json" }

const post = (handler: UploadHandler, body: BodyInit, headers: Record<string, string> = {}, path = "/api/upload/default") =>
  handler(new Request(`http://app${path}`, { method: "POST", body, headers: { ...JSON_TYPE, ...headers }, duplex: "half" } as RequestInit))

const expectTooLarge = async (response: Response, limit: string) => {
  assert.strictEqual(response.status, 413)
  assert.strictEqual(response.headers.get("content-type"), "application/json")
  const body = await response.json()
  assert.strictEqual(body.code, "too_large")
  assert.strictEqual(body.status, 413)
  assert.include(body.message, limit)
  assert.isTrue(BlobError.is(BlobError.fromJSON(body), "too_large"))
}

const expectReached = async (response: Response) => {
  assert.strictEqual(response.status, 409)
  assert.strictEqual((await response.json()).message, REACHED)
}

describe("upload route: body cap", () => {
  it("default 64 KiB: a message under it is read, one over it is 413 too_large", async () => {
    const handler = routeWith()
    assert.strictEqual(DEFAULT_MAX_BODY_SIZE, 64 * 1024)
    await expectReached(await post(handler, beginOf(60 * 1024)))
    await expectTooLarge(await post(handler, beginOf(65 * 1024)), "64 KiB")
  })

  it("a declared Content-Length over the cap is refused without reading the body", async () => {
    const handler = routeWith()
    const { stream, state } = countingStream(10 * 1024 * 1024)
    const response = await post(handler, stream, { "content-length": String(10 * 1024 * 1024) })
    await expectTooLarge(response, "64 KiB")
    assert.strictEqual(state.pulled, 0)
  })

  it("a chunked body is read only until it goes over the cap", async () => {
    const handler = routeWith()
    const { stream, state } = countingStream(10 * 1024 * 1024)
    await expectTooLarge(await post(handler, stream), "64 KiB")
    // the cap and the chunk that crossed it (16 KiB), plus what the stream buffered ahead (one chunk)
    assert.isAtMost(state.pulled, DEFAULT_MAX_BODY_SIZE + 2 * 16 * 1024)
  })

  it("the cap is a route option (and a handler option, which a route's own overrides)", async () => {
    const small = routeWith({ maxBodySize: "2KB" })
    await expectReached(await post(small, beginOf(1500)))
    await expectTooLarge(await post(small, beginOf(3000)), "2 KiB")

    const handler = createUploadHandler({
      maxBodySize: 4096,
      routes: {
        tiny: { bucket: offline(), onBeforeUpload: () => true, maxBodySize: 1024 },
        usual: {
          bucket: offline(),
          maxSize: "1GB",
          onBeforeUpload: () => {
            throw new BlobError("conflict", { message: REACHED })
          }
        }
      }
    })
    await expectReached(await post(handler, beginOf(3000), {}, "/api/upload/usual"))
    await expectTooLarge(await post(handler, beginOf(5000), {}, "/api/upload/usual"), "4 KiB")
    await expectTooLarge(await post(handler, beginOf(2000), {}, "/api/upload/tiny"), "1 KiB")
    // a route named in the body alone: read with the largest cap, then held to its own
    const named = JSON.stringify({ ...JSON.parse(beginOf(2000)), route: "tiny" })
    await expectTooLarge(await post(handler, named, {}, "/api/upload"), "1 KiB")

    assert.throws(() => routeWith({ maxBodySize: "lots" }), TypeError, /maxBodySize/)
    assert.throws(() => routeWith({ maxBodySize: 10 }), TypeError, /maxBodySize/)
  })

  it("the default grows for routes whose multipart complete message needs more (128 bytes a part)", async () => {
    // 2,000 parts: a ~100 KB complete message, possible on a route without maxSize (up to 10,000 parts)
    const parts = Array.from({ length: 2000 }, (_, i) => ({ partNumber: i + 1, etag: `"${"0".repeat(32)}"` }))
    const complete = JSON.stringify({ type: "complete", completionToken: "v1.bad.token", parts })
    assert.isAbove(complete.length, DEFAULT_MAX_BODY_SIZE)
    const unbounded = routeWith({ maxSize: undefined })
    const forbidden = await post(unbounded, complete)
    assert.strictEqual(forbidden.status, 403) // read, decoded, its token refused
    // a route whose files are at most 100 MiB has at most 20 parts of 5 MiB: 64 KiB holds its messages
    await expectTooLarge(await post(routeWith({ maxSize: "100MB" }), complete), "64 KiB")
  })

  it("over a real socket: a 413 with the error body, and the server stops reading", async () => {
    const sockets: Array<Socket> = []
    const server: Server = createServer(toNodeListener(routeWith()))
    server.on("connection", (socket) => sockets.push(socket))
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/upload`
    try {
      // accepted as before
      await expectReached(await fetch(url, { method: "POST", body: beginOf(1000), headers: JSON_TYPE }))
      // declared length over the cap
      const declared = await fetch(url, { method: "POST", body: beginOf(200 * 1024), headers: JSON_TYPE })
      await expectTooLarge(declared, "64 KiB")
      // chunked, 50 MiB on offer
      const total = 50 * 1024 * 1024
      const { stream } = countingStream(total)
      const chunked = await fetch(url, { method: "POST", body: stream, headers: JSON_TYPE, duplex: "half" } as RequestInit)
      await expectTooLarge(chunked, "64 KiB")
      assert.strictEqual(chunked.headers.get("connection"), "close")
      const read = Math.max(...sockets.map((socket) => socket.bytesRead))
      assert.isBelow(read, 4 * 1024 * 1024, `the server read ${read} bytes of a ${total}-byte body`)
    } finally {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })
})
