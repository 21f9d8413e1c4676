/**
 * The uploads demo (`svc start uploads`) over a real socket against radosgw: what its own `onBeforeUpload`
 * makes of the file names a client sends (the page's route; the browser flows are in browser/).
 */
import { assert, layer } from "@effect/vitest"
import { Context, Effect, Layer, References } from "effect"
import { HttpServer } from "effect/http"
import { TestObjectStorage } from "../../platform/src/testing/objectStorage.ts"
import * as Demo from "../src/demo/Service.ts"
import { freshBucket } from "./support/storage.ts"

const startDemo = Effect.gen(function*() {
  const bucket = yield* freshBucket("demonames")
  const context = yield* Layer.build(
    Demo.make({ bucket, port: 0, host: "127.0.0.1" }).pipe(Layer.provide(Layer.succeed(References.MinimumLogLevel, "Warn")))
  )
  const address = Context.get(context, HttpServer.HttpServer).address
  return `http://127.0.0.1:${address._tag === "UnixPathAddress" ? 0 : address.port}`
})

const begin = (url: string, pathname: string, size: number, contentType = "application/octet-stream") =>
  Effect.promise(async () => {
    const response = await fetch(`${url}/api/upload/files`, {
      method: "POST",
      body: JSON.stringify({ type: "begin", pathname, contentType, size }),
      headers: { "content-type": "application/json" }
    })
    return { status: response.status, body: await response.json() as any }
  })

layer(TestObjectStorage, { excludeTestServices: true, timeout: 120_000 })("uploads demo over a socket (radosgw)", (it) => {
  it.effect("a long file name is cut, its extension kept, so a large file's begin is not a 502 from the local store", () =>
    Effect.gen(function*() {
      // The local radosgw refuses a multipart create for an object name over 366 bytes: a 346-character
      // name passed the path rule (1,024 bytes) and a 40 MB file's begin was 502 request_failed; past
      // the path rule, a name was 400 "the path is longer than 1024 bytes": both are cut now.
      const url = yield* startDemo
      const large = 40 * 1024 * 1024
      for (const [pathname, size] of [[`${"b".repeat(346)}.bin`, large], [`${"a".repeat(1_000)}.tar.gz`, large], [`${"c".repeat(990)}`, 6]] as const) {
        const answer = yield* begin(url, pathname, size)
        assert.strictEqual(answer.status, 200, `${pathname.length} characters: ${JSON.stringify(answer.body)}`)
        const name = answer.body.path.split("/").pop()
        assert.match(answer.body.path, /^uploads\/[0-9a-f]{12}\//)
        assert.strictEqual(name.length, Math.min(pathname.length, 200))
        assert.strictEqual(name.slice(-3), pathname.slice(-3), "the extension is kept")
        if (size === large) assert.isAbove(answer.body.multipart.parts.length, 1)
      }
      // a name within the bound is stored as the demo always stored it
      const short = yield* begin(url, "Résumé 🎉.pdf", 6)
      assert.strictEqual(short.status, 200, JSON.stringify(short.body))
      assert.match(short.body.path, /^uploads\/[0-9a-f]{12}\/R_sum_ _\.pdf$/)
    }).pipe(Effect.scoped))

  it.effect("an SVG (active content) is refused by the default allowlist's image/*, saying it must be listed; a PNG is not", () =>
    Effect.gen(function*() {
      const url = yield* startDemo
      const svg = yield* begin(url, "x.svg", 71, "image/svg+xml")
      assert.strictEqual(svg.status, 400, JSON.stringify(svg.body))
      assert.strictEqual(svg.body.code, "content_type_not_allowed")
      assert.include(svg.body.message, "SVG must be listed explicitly (image/svg+xml)")
      const png = yield* begin(url, "x.png", 71, "image/png")
      assert.strictEqual(png.status, 200, JSON.stringify(png.body))
    }).pipe(Effect.scoped))

  it.effect("a pathname starting with \"/\" is 400 invalid_input saying so, not \"<path>\" and an empty segment", () =>
    Effect.gen(function*() {
      const url = yield* startDemo
      const answer = yield* begin(url, "/etc/passwd", 71, "image/png")
      assert.deepStrictEqual(answer.body, {
        code: "invalid_input",
        status: 400,
        message: 'Invalid path: a path must not start with "/" (object paths are relative to the bucket: a/b.png)'
      })
    }).pipe(Effect.scoped))
})
