import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"
import {
  BLOB_ERROR_CODES,
  BLOB_ERROR_DEFAULT_MESSAGE,
  BLOB_ERROR_STATUS,
  BlobError,
  BlobErrorJsonSchema,
  sanitizeText,
  sentenceCase
} from "../../src/shared/BlobError.ts"
import * as Browser from "../../src/browser/index.ts"
import * as React from "../../src/react/index.ts"
import * as Server from "../../src/server/index.ts"
import { parseSize } from "../../src/shared/size.ts"

const specTable: ReadonlyArray<readonly [string, number, string]> = [
  ["not_found", 404, "Not found"],
  ["already_exists", 409, "Already exists"],
  ["conflict", 409, "The object changed since it was read"],
  ["content_type_not_allowed", 400, "Content type not allowed"],
  ["invalid_input", 400, "Invalid input"],
  ["too_large", 413, "Too large"],
  ["empty_body", 400, "Empty body"],
  ["length_required", 411, "Length required"],
  ["signature_mismatch", 403, "Signature mismatch"],
  ["unauthorized", 401, "Unauthorized"],
  ["forbidden", 403, "Forbidden"],
  ["rate_limited", 429, "Rate limited"],
  ["mint_backoff", 429, "The credential service asked for a backoff longer than a request can wait"],
  ["not_ready", 503, "Bucket is not ready"],
  ["partial_delete", 500, "Some paths were not deleted"],
  ["move_left_a_copy", 500, "Move left a copy at the source"],
  ["invalid_content_type_pattern", 500, "Invalid content type pattern"],
  ["request_failed", 500, "Request failed"]
]

describe("BlobError codes", () => {
  it("has exactly the spec's codes, statuses and default messages", () => {
    assert.deepStrictEqual([...BLOB_ERROR_CODES], specTable.map(([code]) => code))
    for (const [code, status, message] of specTable) {
      const error = new BlobError(code as Server.BlobErrorCode)
      assert.strictEqual(error.code, code)
      assert.strictEqual(error.status, status)
      assert.strictEqual(BLOB_ERROR_STATUS[code as Server.BlobErrorCode], status)
      assert.strictEqual(BLOB_ERROR_DEFAULT_MESSAGE[code as Server.BlobErrorCode], message)
      if (code !== "signature_mismatch" && code !== "length_required") assert.strictEqual(error.message, message)
      assert.strictEqual(error._tag, "BlobError")
      assert.strictEqual(error.name, "BlobError")
      assert.instanceOf(error, Error)
    }
  })

  it("lets only request_failed choose its status", () => {
    assert.strictEqual(new BlobError("request_failed", { status: 502 }).status, 502)
    assert.strictEqual(new BlobError("request_failed", { status: 418 }).status, 418)
    assert.throws(() => new BlobError("not_found", { status: 410 }), TypeError)
    assert.strictEqual(new BlobError("not_found", { status: 404 }).status, 404)
    assert.throws(() => new BlobError("request_failed", { status: 200 }), TypeError)
    assert.throws(() => new BlobError("request_failed", { status: 502.5 }), TypeError)
  })

  it("throws TypeError for bad option values", () => {
    assert.throws(() => new BlobError("nope" as never), TypeError)
    assert.throws(() => new BlobError("already_exists", { size: -1 }), TypeError)
    assert.throws(() => new BlobError("rate_limited", { retryAfter: Number.NaN }), TypeError)
    assert.throws(() => new BlobError("partial_delete", { failed: [1] as never }), TypeError)
    assert.throws(() => parseSize("ten megabytes", "maxSize"), TypeError, /maxSize/)
    assert.strictEqual(parseSize("10MB"), 10 * 1024 * 1024)
    assert.strictEqual(parseSize("1.5 KiB"), 1536)
    assert.strictEqual(parseSize(42), 42)
  })

  it("carries hint, failed, etag, size, retryAfter and cause", () => {
    const cause = new Error("underlying")
    const e = new BlobError("already_exists", { etag: "\"abc\"", size: 12, cause })
    assert.strictEqual(e.etag, "\"abc\"")
    assert.strictEqual(e.size, 12)
    assert.strictEqual(e.cause, cause)
    const p = new BlobError("partial_delete", { failed: ["a", "b"] })
    assert.deepStrictEqual(p.failed, ["a", "b"])
    const r = new BlobError("mint_backoff", { retryAfter: 30 })
    assert.strictEqual(r.retryAfter, 30)
  })
})

describe("message rules", () => {
  it("appends a hint once, in parentheses, and keeps it separately", () => {
    const e = new BlobError("too_large", { message: "The file is 12 MiB", hint: "The limit is 10 MiB" })
    assert.strictEqual(e.message, "The file is 12 MiB (the limit is 10 MiB)")
    assert.strictEqual(e.hint, "The limit is 10 MiB")
    const again = new BlobError("too_large", { message: e.message, hint: e.hint })
    assert.strictEqual(again.message, e.message)
    const contained = new BlobError("too_large", { message: "Too large: the limit is 10 MiB", hint: "the limit is 10 MiB" })
    assert.strictEqual(contained.message, "Too large: the limit is 10 MiB")
  })

  it("gives signature_mismatch and length_required their built-in hints", () => {
    const s = new BlobError("signature_mismatch")
    assert.match(s.hint ?? "", /did not match what was authorized.*size or content type/)
    assert.strictEqual(s.message, `Signature mismatch (${"the upload did not match what was authorized, usually a different size or content type"})`)
    const l = new BlobError("length_required")
    assert.match(l.hint ?? "", /size or maxSize/)
    assert.match(l.message, /^Length required \(pass size or maxSize so the length is known before the first byte\)$/)
    const own = new BlobError("signature_mismatch", { hint: "Stored 10 bytes, declared 12" })
    assert.strictEqual(own.hint, "Stored 10 bytes, declared 12")
  })

  it("sentence-cases, but keeps a leading identifier's case", () => {
    assert.strictEqual(new BlobError("invalid_input", { message: "size is missing" }).message, "Size is missing")
    assert.strictEqual(
      new BlobError("content_type_not_allowed", { message: "image/svg+xml is not allowed" }).message,
      "image/svg+xml is not allowed"
    )
    assert.strictEqual(new BlobError("too_large", { message: "photo.JPG is too large" }).message, "photo.JPG is too large")
    assert.strictEqual(new BlobError("invalid_input", { message: "eTag looks odd" }).message, "eTag looks odd")
    assert.strictEqual(sentenceCase("  storage answered 500 "), "Storage answered 500")
    assert.strictEqual(new BlobError("not_found", { message: "   " }).message, "Not found")
  })

  it("never lets a credential, token or internal path into the message", () => {
    const secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    const e = new BlobError("request_failed", {
      message: `failed for s3://AKIAIOSFODNN7EXAMPLE:${secret}@127.0.0.1:7480/b?token=abc at /home/app/src/x.ts ` +
        `signed https://h/b/k?X-Amz-Signature=deadbeef&X-Amz-Security-Token=FQoGZXIvYXdzEJr Bearer abc.def.ghi ` +
        `sessionToken=IQoJb3JpZ2luX2VjEHgaCXVzLWVhc3QtMSJHMEUCIQ`
    })
    assert.notInclude(e.message, secret)
    assert.notInclude(e.message, "AKIAIOSFODNN7EXAMPLE")
    assert.notInclude(e.message, "/home/app")
    assert.notInclude(e.message, "deadbeef")
    assert.notInclude(e.message, "FQoGZXIvYXdzEJr")
    assert.notInclude(e.message, "abc.def.ghi")
    assert.notInclude(e.message, "IQoJb3JpZ2luX2VjEHgaCXVzLWVhc3QtMSJHMEUCIQ")
    assert.include(e.message, "https://h/b/k")
    // hashes, etags and ordinary long paths stay
    const hash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert.include(sanitizeText(`offers/${hash}.jpg`), hash)
    assert.include(sanitizeText("uploads/2024/holiday-pictures-from-the-beach-in-summer.png"), "holiday-pictures")
    assert.notInclude(sanitizeText("key ABCDEFGHIJ0123456789ABCD", []), "ABCDEFGHIJ0123456789ABCD")
    assert.notInclude(sanitizeText("oops 1234", ["1234"]), "1234")
  })

  it("puts a suspended bucket's notice on cause, not message", () => {
    const notice = new Error("Bucket suspended: billing")
    const e = new BlobError("unauthorized", { cause: notice })
    assert.strictEqual(e.message, "Unauthorized")
    assert.strictEqual(e.cause, notice)
  })
})

describe("toJSON / fromJSON", () => {
  it("round-trips every field except cause", () => {
    const e = new BlobError("already_exists", { etag: "\"e\"", size: 3, hint: "Pass allowOverwrite", cause: new Error("x") })
    const json = JSON.parse(JSON.stringify(e))
    assert.deepStrictEqual(json, {
      code: "already_exists",
      status: 409,
      message: "Already exists (pass allowOverwrite)",
      hint: "Pass allowOverwrite",
      etag: "\"e\"",
      size: 3
    })
    assert.notProperty(json, "cause")
    assert.notProperty(json, "_tag")
    const back = BlobError.fromJSON(json)
    assert.isTrue(BlobError.is(back))
    assert.deepStrictEqual(back.toJSON(), e.toJSON())
    assert.isUndefined(back.cause)
    const partial = BlobError.fromJSON(new BlobError("partial_delete", { failed: ["a"] }).toJSON())
    assert.deepStrictEqual(partial.failed, ["a"])
    const rate = BlobError.fromJSON(JSON.stringify(new BlobError("rate_limited", { retryAfter: 4 })))
    assert.strictEqual(rate.retryAfter, 4)
    const failed = BlobError.fromJSON({ code: "request_failed", status: 502, message: "Storage answered 500 InternalError" })
    assert.strictEqual(failed.status, 502)
    assert.throws(() => BlobError.fromJSON({ code: "nope" }), TypeError)
    assert.throws(() => BlobError.fromJSON("not json"), TypeError)
  })

  it("encodes and decodes through its schema", () =>
    Effect.gen(function*() {
      const e = new BlobError("conflict", { hint: "Read it again" })
      const encoded = yield* Schema.encodeUnknownEffect(BlobError)(e)
      const decoded = yield* Schema.decodeUnknownEffect(BlobError)(encoded)
      assert.isTrue(BlobError.is(decoded, "conflict"))
      assert.strictEqual(decoded.message, e.message)
      const body = yield* Schema.decodeUnknownEffect(BlobErrorJsonSchema)(e.toJSON())
      assert.strictEqual(body.code, "conflict")
    }).pipe(Effect.runPromise))
})

describe("BlobError.is", () => {
  it("narrows and filters by code", () => {
    const u: unknown = new BlobError("not_found")
    assert.isTrue(BlobError.is(u))
    assert.isTrue(BlobError.is(u, "not_found", "conflict"))
    assert.isFalse(BlobError.is(u, "conflict"))
    assert.isFalse(BlobError.is(new Error("x")))
    assert.isFalse(BlobError.is({ code: "not_found", status: 404, message: "Not found" }))
    assert.isFalse(BlobError.is(null))
    if (BlobError.is(u)) {
      const code: Server.BlobErrorCode = u.code
      assert.strictEqual(code, "not_found")
    }
  })

  it("holds across a second ESM instance of the module", async () => {
    const specifier = new URL("../../src/shared/BlobError.ts?copy=2", import.meta.url).href
    const copy = await import(specifier) as typeof import("../../src/shared/BlobError.ts")
    assert.notStrictEqual(copy.BlobError, BlobError)
    const theirs = new copy.BlobError("conflict")
    assert.isFalse(theirs instanceof BlobError) // the reason for the guard
    assert.isTrue(BlobError.is(theirs))
    assert.isTrue(BlobError.is(theirs, "conflict"))
    assert.isTrue(copy.BlobError.is(new BlobError("not_found")))
  })

  it("holds across a copy loaded with require (Node's own loader, outside vitest)", () => {
    const require = createRequire(import.meta.url)
    const path = fileURLToPath(new URL("../../src/shared/BlobError.ts", import.meta.url))
    const cjs = require(path) as typeof import("../../src/shared/BlobError.ts")
    assert.notStrictEqual(cjs.BlobError, BlobError)
    const theirs = new cjs.BlobError("forbidden")
    assert.isFalse(theirs instanceof BlobError)
    assert.isTrue(BlobError.is(theirs, "forbidden"))
    assert.isTrue(cjs.BlobError.is(new BlobError("forbidden")))
    // fromJSON of one copy reads the other's JSON
    assert.isTrue(BlobError.is(BlobError.fromJSON(theirs.toJSON()), "forbidden"))
  })

  it("is exported from the server, browser and react entrypoints", () => {
    assert.strictEqual(Server.BlobError, BlobError)
    assert.strictEqual(Browser.BlobError, BlobError)
    assert.strictEqual(React.BlobError, BlobError)
  })

  it("is catchable by tag and by code in Effect code", () =>
    Effect.gen(function*() {
      const byTag = yield* Effect.fail(new BlobError("not_found")).pipe(
        Effect.catchTag("BlobError", (e) => Effect.succeed(e.code))
      )
      assert.strictEqual(byTag, "not_found")
      const byCode = yield* Effect.fail(new BlobError("conflict")).pipe(
        Effect.catchIf(BlobError.hasCode("conflict"), (e) => Effect.succeed(e.status))
      )
      assert.strictEqual(byCode, 409)
    }).pipe(Effect.runPromise))
})
