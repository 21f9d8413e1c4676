/**
 * `dimensionsRefusal`: the dimensions an image's header declares (read without decoding) decide
 * whether the cache keeps it: over 10,000 px a side or 40 MP, unreadable, or of another format than
 * declared is refused; ordinary listing photos pass.
 */
import { assert, describe, it } from "@effect/vitest"
import { defaultDimensionLimits, dimensionsRefusal } from "../../src/Images.ts"
import { gifBytes, jpegBytes, pngBomb, pngBytes, webpBytes } from "../imageBytes.ts"

const refused = (bytes: Uint8Array, type: string, pattern: RegExp) => {
  const reason = dimensionsRefusal(bytes, type)
  assert.isDefined(reason, `${type} should be refused`)
  assert.match(reason!, pattern)
}

describe("dimensionsRefusal", () => {
  it("a PNG of under 100 bytes declaring 2147483647 × 2147483647 px is refused", () => {
    const bomb = pngBomb()
    assert.isBelow(bomb.length, 100)
    refused(bomb, "image/png", /2147483647 × 2147483647 px are over the limit of 10000 px a side/)
  })

  it("a JPEG whose SOF0 declares 65535 × 65535 px is refused; so are one long side and 48 MP", () => {
    refused(jpegBytes(65535, 65535, 2000), "image/jpeg", /65535 × 65535 px are over the limit/)
    refused(jpegBytes(20_000, 100, 2000), "image/jpeg", /20000 × 100 px are over the limit of 10000 px a side/)
    refused(jpegBytes(8000, 6000, 2000), "image/jpeg", /8000 × 6000 px are over the limit of 40000000 pixels/)
  })

  it("GIF logical screen and WebP canvas are measured too", () => {
    refused(gifBytes(65535, 65535), "image/gif", /65535 × 65535 px/)
    refused(webpBytes(16384, 16384), "image/webp", /16384 × 16384 px/)
    assert.isUndefined(dimensionsRefusal(gifBytes(640, 480), "image/gif"))
    assert.isUndefined(dimensionsRefusal(webpBytes(1600, 1200), "image/webp"))
  })

  it("ordinary listing photos pass, up to the limits", () => {
    assert.isUndefined(dimensionsRefusal(pngBytes(1200, 800, 1500), "image/png"))
    assert.isUndefined(dimensionsRefusal(jpegBytes(4032, 3024, 3000), "image/jpeg"))
    assert.isUndefined(dimensionsRefusal(jpegBytes(10_000, 4000, 500), "image/jpeg"))
    assert.isUndefined(dimensionsRefusal(pngBytes(10_000, 4000), "image/png"))
    assert.strictEqual(defaultDimensionLimits.maxSide, 10_000)
    assert.strictEqual(defaultDimensionLimits.maxPixels, 40_000_000)
    // custom limits
    assert.match(dimensionsRefusal(pngBytes(1200, 800), "image/png", { maxSide: 1000, maxPixels: 1e9 }) ?? "", /1000 px a side/)
  })

  it("no readable dimensions, a side of 0, or another format than declared: refused", () => {
    refused(jpegBytes(0, 0, 500, { sof: false }), "image/jpeg", /dimensions cannot be read from the image\/jpeg header/)
    // signature and the IHDR name, then nothing: truncated (a pooled Buffer's spare bytes must not count)
    const truncated = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52, 1, 2, 3])
    refused(truncated, "image/png", /cannot be read/)
    const pooled = Buffer.concat([truncated]) // from the allocation pool, more bytes behind it
    refused(pooled, "image/png", /cannot be read/)
    refused(Buffer.from("<html><body>not an image</body></html>"), "image/png", /cannot be read/)
    refused(pngBytes(0, 800), "image/png", /0 × 800 px are not an image/)
    refused(pngBytes(1200, 800), "image/jpeg", /the bytes are png, not image\/jpeg/)
    refused(gifBytes(640, 480), "image/avif", /the bytes are gif, not image\/avif/)
  })
})
