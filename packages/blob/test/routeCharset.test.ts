/**
 * The upload route's charset rule (the suite's, `JsonBody.charsetProblem` in @svc/platform): a message
 * whose `Content-Type` names a charset other than UTF-8 (`application/json; charset=utf-16`) is 415
 * `request_failed` naming the charset, unread, over a real socket (`toNodeListener`); before, its UTF-16
 * bytes were read as UTF-8 and refused 400 "not valid UTF-8", which named the bytes, not the label.
 * UTF-8 by any spelling (`UTF-8`, `"utf-8"`, `utf8`) is read as before. No storage is reached: an
 * accepted message stops at a sentinel `onBeforeUpload`, which a refused one never reaches.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { Bucket } from "../src/server/Bucket.ts"
import { createUploadRoute, toNodeListener } from "../src/server/route.ts"
import { BlobError } from "../src/shared/BlobError.ts"

// never reached: onBeforeUpload answers first
const offline = () =>
  Effect.runSync(Effect.scoped(Bucket.make({ token: "s3+http://k:s@127.0.0.1:1/offline-bucket", retry: { times: 0 } })))

const REACHED = "Reached onBeforeUpload"

describe("upload route: the charset of the JSON message", () => {
  it("another charset than UTF-8 is 415 request_failed naming it, before onBeforeUpload; UTF-8 by any spelling is read", async () => {
    let reached = 0
    const route = createUploadRoute({
      bucket: offline(),
      onBeforeUpload: () => {
        reached++
        throw new BlobError("conflict", { message: REACHED })
      }
    })
    const server: Server = createServer(toNodeListener(route))
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/upload`
    const message = JSON.stringify({ type: "begin", pathname: "a.png", contentType: "image/png", size: 10 })
    // the message in UTF-16LE with a byte order mark, as a client that meant its charset sends it
    const utf16 = new Uint8Array(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(message, "utf16le")]))
    try {
      for (const [charset, named] of [["utf-16", "utf-16"], ["\"UTF-16LE\"", "UTF-16LE"], ["iso-8859-1", "iso-8859-1"], ["Shift_JIS", "Shift_JIS"]]) {
        const response = await fetch(url, { method: "POST", body: utf16, headers: { "content-type": `application/json; charset=${charset}` } })
        const body = await response.json()
        assert.strictEqual(response.status, 415, JSON.stringify(body))
        assert.strictEqual(response.headers.get("content-type"), "application/json")
        assert.deepInclude(body, { code: "request_failed", status: 415 })
        assert.strictEqual(
          body.message,
          `Content-Type charset "${named}" is not supported: send the JSON body as UTF-8 (charset=utf-8, or no charset; RFC 8259)`
        )
        assert.isTrue(BlobError.is(BlobError.fromJSON(body), "request_failed"))
      }
      assert.strictEqual(reached, 0, "a refused message reached no hook")
      for (const type of ["application/json; charset=UTF-8", "application/json; charset=\"utf-8\"", "application/json;charset=utf8"]) {
        const response = await fetch(url, { method: "POST", body: message, headers: { "content-type": type } })
        assert.strictEqual(response.status, 409, type)
        assert.strictEqual((await response.json()).message, REACHED)
      }
      assert.strictEqual(reached, 3)
    } finally {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })
})
