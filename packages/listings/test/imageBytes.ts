/**
 * Image bytes for the image tests: headers as real encoders write them (PNG signature + IHDR with
 * its CRC, JPEG SOI + APP0 + SOF0, GIF logical screen, WebP VP8X), padded with random bytes, so the
 * cacher's signature and dimension checks see what a source would send. Nothing here is decodable
 * past the header; the cache never decodes.
 */
import { randomBytes } from "node:crypto"
import { crc32, deflateSync } from "node:zlib"

const u32 = (n: number) => {
  const b = Buffer.alloc(4)
  b.writeUInt32BE(n >>> 0)
  return b
}
const u16 = (n: number) => Buffer.from([(n >> 8) & 0xff, n & 0xff])
const u16le = (n: number) => Buffer.from([n & 0xff, (n >> 8) & 0xff])
const u24le = (n: number) => Buffer.from([n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff])

const pngChunk = (type: string, data: Buffer) => {
  const typed = Buffer.concat([Buffer.from(type, "ascii"), data])
  return Buffer.concat([u32(data.length), typed, u32(crc32(typed))])
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

/** A PNG of `width` × `height` (8-bit RGB): signature, IHDR, then random bytes up to `size`. */
export const pngBytes = (width: number, height: number, size = 0) => {
  const header = Buffer.concat([
    PNG_SIGNATURE,
    pngChunk("IHDR", Buffer.concat([u32(width), u32(height), Buffer.from([8, 2, 0, 0, 0])]))
  ])
  return Buffer.concat([header, randomBytes(Math.max(0, size - header.length))])
}

/**
 * The image bomb of the finding: a complete, well-formed PNG (IHDR, one IDAT, IEND; 68 bytes) whose
 * IHDR declares `side` × `side` px (default 2147483647, the PNG maximum).
 */
export const pngBomb = (side = 2147483647) =>
  Buffer.concat([
    PNG_SIGNATURE,
    pngChunk("IHDR", Buffer.concat([u32(side), u32(side), Buffer.from([8, 0, 0, 0, 0])])),
    pngChunk("IDAT", deflateSync(Buffer.alloc(16), { level: 9 })),
    pngChunk("IEND", Buffer.alloc(0))
  ])

/**
 * A baseline JPEG of `width` × `height` (each ≤ 65535): SOI, APP0 (JFIF), SOF0, then random bytes up
 * to `size`. `sof: false` leaves the SOF out (a header without dimensions).
 */
export const jpegBytes = (width: number, height: number, size = 0, options: { readonly sof?: boolean } = {}) => {
  const app0 = Buffer.concat([
    Buffer.from([0xff, 0xe0]),
    u16(16),
    Buffer.from("JFIF\0", "ascii"),
    Buffer.from([1, 1, 0, 0, 1, 0, 1, 0, 0])
  ])
  const sof0 = Buffer.concat([
    Buffer.from([0xff, 0xc0]),
    u16(17),
    Buffer.from([8]),
    u16(height),
    u16(width),
    Buffer.from([3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1])
  ])
  const header = Buffer.concat([Buffer.from([0xff, 0xd8]), app0, ...(options.sof === false ? [] : [sof0])])
  const body = options.sof === false
    ? Buffer.alloc(Math.max(0, size - header.length - 2)) // no random FF C0 by chance
    : randomBytes(Math.max(0, size - header.length - 2))
  return Buffer.concat([header, body, Buffer.from([0xff, 0xd9])])
}

/** A GIF89a whose logical screen is `width` × `height` (each ≤ 65535). */
export const gifBytes = (width: number, height: number, size = 32) =>
  Buffer.concat([Buffer.from("GIF89a", "ascii"), u16le(width), u16le(height), Buffer.alloc(Math.max(0, size - 10))])

/** An extended WebP (VP8X) whose canvas is `width` × `height` (each ≤ 16777216). */
export const webpBytes = (width: number, height: number, size = 64) => {
  const vp8x = Buffer.concat([Buffer.from("VP8X", "ascii"), Buffer.from([10, 0, 0, 0]), Buffer.from([0, 0, 0, 0]), u24le(width - 1), u24le(height - 1)])
  const body = Buffer.concat([Buffer.from("WEBP", "ascii"), vp8x, Buffer.alloc(Math.max(0, size - 38))])
  const riffSize = Buffer.alloc(4)
  riffSize.writeUInt32LE(body.length)
  return Buffer.concat([Buffer.from("RIFF", "ascii"), riffSize, body])
}
