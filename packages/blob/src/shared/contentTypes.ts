/**
 * Content-type patterns (`contentTypes` of a put or an upload route) and leading-bytes sniffing.
 *
 * A pattern is `type/subtype` (exact, case-insensitive, parameters ignored) or one of `image/*`,
 * `video/*`, `audio/*`. Anything else, or an empty list, is `invalid_content_type_pattern`. A wildcard
 * does not admit active content (`image/svg+xml`, any `+xml` subtype): only its exact name does.
 *
 * Sniffing recognises common binary formats by their first bytes and refuses a file whose bytes
 * contradict its declared type: declared `image/png` but the bytes are a JPEG (or not a PNG at all),
 * declared `text/plain` but the bytes are a PDF, declared `image/*` but the bytes are an executable.
 *
 * @module
 */
import { BlobError } from "./BlobError.ts"

const TOKEN = "[a-z0-9!#$&^_.+-]+"
const EXACT = new RegExp(`^${TOKEN}/${TOKEN}$`, "i")
const WILDCARDS = new Set(["image/*", "video/*", "audio/*"])

/** Validates patterns; returns them normalized (lower case) or an `invalid_content_type_pattern` error. */
export const checkContentTypePatterns = (patterns: ReadonlyArray<string>): BlobError | ReadonlyArray<string> => {
  if (!Array.isArray(patterns) || patterns.length === 0) {
    return new BlobError("invalid_content_type_pattern", {
      message: "Invalid content type pattern: the list is empty",
      hint: "Omit contentTypes to allow every type"
    })
  }
  const out: Array<string> = []
  for (const pattern of patterns) {
    const p = typeof pattern === "string" ? pattern.trim().toLowerCase() : ""
    if (!(WILDCARDS.has(p) || EXACT.test(p))) {
      return new BlobError("invalid_content_type_pattern", {
        message: `Invalid content type pattern ${JSON.stringify(String(pattern))}`,
        hint: "Use type/subtype or one of image/*, video/*, audio/*"
      })
    }
    out.push(p)
  }
  return out
}

/** The media type without parameters, lower-cased: `"Text/Plain; charset=utf-8"` -> `"text/plain"`. */
export const essence = (contentType: string): string => (contentType.split(";", 1)[0] ?? "").trim().toLowerCase()

/** A type as a refusal shows it: at most 100 characters (a 5,000-character one was echoed whole). */
const shownType = (contentType: string): string => contentType.length > 100 ? `${contentType.slice(0, 100)}…` : contentType

/**
 * Active content: types a browser opening the object renders as a document in which scripts run, so
 * that a stored file is a stored-XSS vector wherever the bucket shares an origin with an app.
 * `image/svg+xml` (`<svg><script>…</script></svg>`), and any other `+xml` subtype (a browser renders
 * every `*+xml` type as an XML document, and XHTML elements in it run scripts). A wildcard never admits
 * one; naming the type exactly does (`["image/*", "image/svg+xml"]`).
 */
export const isActiveContentType = (type: string): boolean => essence(type).endsWith("+xml")

/**
 * Whether `contentType` matches one of the (validated) patterns: exactly, or by a wildcard
 * (`image/*`) unless it is active content ({@link isActiveContentType}), which only an exact pattern admits.
 */
export const matchesContentType = (contentType: string, patterns: ReadonlyArray<string>): boolean => {
  const type = essence(contentType)
  const active = isActiveContentType(type)
  return patterns.some((p) => p.endsWith("/*") ? !active && type.startsWith(p.slice(0, -1)) : p === type)
}

/** `content_type_not_allowed` for `contentType`, or undefined when allowed. */
export const contentTypeRefusal = (
  contentType: string,
  patterns: ReadonlyArray<string> | undefined
): BlobError | undefined => {
  if (patterns === undefined || matchesContentType(contentType, patterns)) return undefined
  const type = essence(contentType)
  // an active type a wildcard would have admitted but for the rule: say so, and how to allow it
  const wildcard = isActiveContentType(type) ? patterns.find((p) => p.endsWith("/*") && type.startsWith(p.slice(0, -1))) : undefined
  if (wildcard !== undefined) {
    const shown = shownType(type)
    const named = type === "image/svg+xml" ? "SVG" : shown
    return new BlobError("content_type_not_allowed", {
      message: `${shown} is not allowed: ${wildcard} does not admit ${named}, which can carry scripts (active content); ` +
        `${named} must be listed explicitly${named === shown ? "" : ` (${shown})`} to be allowed`,
      hint: `Allowed: ${patterns.join(", ")}`
    })
  }
  return new BlobError("content_type_not_allowed", {
    message: `${shownType(type) || "(no type)"} is not allowed`,
    hint: `Allowed: ${patterns.join(", ")}`
  })
}

/**
 * `invalid_input` when `contentType`, the type a file is declared with (not a pattern), is not a media
 * type `type/subtype` (parameters allowed), written in ASCII without control characters, at most
 * {@link MAX_DECLARED_TYPE} characters. `image/*` was taken for one: it matched the pattern
 * `image/*`, escaped sniffing (no type has its signature) and was stored as the object's `Content-Type`.
 */
export const declaredTypeRefusal = (contentType: string): BlobError | undefined => {
  if (!EXACT.test(essence(contentType))) {
    return new BlobError("invalid_input", {
      message: `Invalid content type ${JSON.stringify(shownType(contentType))}: a file's type is type/subtype`,
      hint: "Declare the file's media type, e.g. image/png or application/octet-stream (image/* is a pattern, not a type)"
    })
  }
  // The type is sent as a `Content-Type` header: by the browser's PUT (it is signed into the URL) and by
  // the server itself (a multipart upload's create, a put). A control character or one outside ASCII in
  // its parameters made that header fail: undici refused it (502 "Storage could not be reached"), or it
  // was signed as UTF-8 and sent as Latin-1 (401 "Storage rejected the bucket token") — an outside sweep.
  if (!HEADER_TEXT.test(contentType)) {
    return new BlobError("invalid_input", {
      message: `Invalid content type ${JSON.stringify(shownType(contentType))}: it holds a control character or a character outside ASCII, which a Content-Type header cannot carry`,
      hint: "Declare the file's media type in ASCII, e.g. text/plain; charset=utf-8"
    })
  }
  if (contentType.length > MAX_DECLARED_TYPE) {
    return new BlobError("invalid_input", {
      message: `Invalid content type ${JSON.stringify(shownType(contentType))}: ${contentType.length} characters, over the limit of ${MAX_DECLARED_TYPE}`
    })
  }
  return undefined
}

/** What a header value can carry as sent by every client: tab and visible ASCII with spaces. */
const HEADER_TEXT = /^[\t\x20-\x7e]*$/

/** The longest declared type (storage refuses headers of a few KiB: a 20,000-character type was its 400). */
export const MAX_DECLARED_TYPE = 1024

// --- sniffing ------------------------------------------------------------------------------------------

const startsWith = (bytes: Uint8Array, signature: ReadonlyArray<number>, offset = 0) =>
  bytes.length >= offset + signature.length && signature.every((b, i) => bytes[offset + i] === b)
const ascii = (bytes: Uint8Array, text: string, offset = 0) => startsWith(bytes, [...text].map((c) => c.charCodeAt(0)), offset)

/** How many leading bytes sniffing looks at. */
export const SNIFF_BYTES = 64

/** The type the leading bytes announce, when they match a known signature. */
export const sniffContentType = (bytes: Uint8Array): string | undefined => {
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "image/png"
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return "image/jpeg"
  if (ascii(bytes, "GIF87a") || ascii(bytes, "GIF89a")) return "image/gif"
  if (ascii(bytes, "RIFF") && ascii(bytes, "WEBP", 8)) return "image/webp"
  if (ascii(bytes, "RIFF") && ascii(bytes, "WAVE", 8)) return "audio/wav"
  if (ascii(bytes, "RIFF") && ascii(bytes, "AVI ", 8)) return "video/x-msvideo"
  if (ascii(bytes, "BM") && bytes.length >= 14 && bytes[6] === 0 && bytes[7] === 0) return "image/bmp"
  if (startsWith(bytes, [0x00, 0x00, 0x01, 0x00])) return "image/x-icon"
  if (startsWith(bytes, [0x49, 0x49, 0x2a, 0x00]) || startsWith(bytes, [0x4d, 0x4d, 0x00, 0x2a])) return "image/tiff"
  if (ascii(bytes, "ftyp", 4)) {
    const brand = String.fromCharCode(...bytes.subarray(8, 12))
    if (brand === "avif" || brand === "avis") return "image/avif"
    if (brand === "heic" || brand === "heix" || brand === "mif1") return "image/heic"
    if (brand.startsWith("M4A")) return "audio/mp4"
    if (brand === "qt  ") return "video/quicktime"
    return "video/mp4"
  }
  if (startsWith(bytes, [0x1a, 0x45, 0xdf, 0xa3])) return "video/webm"
  if (ascii(bytes, "OggS")) return "audio/ogg"
  if (ascii(bytes, "fLaC")) return "audio/flac"
  if (ascii(bytes, "ID3") || (bytes.length >= 2 && bytes[0] === 0xff && ((bytes[1] ?? 0) & 0xe0) === 0xe0 && bytes[1] !== 0xff)) {
    return "audio/mpeg"
  }
  if (ascii(bytes, "%PDF-")) return "application/pdf"
  if (startsWith(bytes, [0x50, 0x4b, 0x03, 0x04])) return "application/zip"
  if (startsWith(bytes, [0x1f, 0x8b])) return "application/gzip"
  if (startsWith(bytes, [0x7f, 0x45, 0x4c, 0x46])) return "application/x-elf"
  if (ascii(bytes, "MZ")) return "application/x-msdownload"
  return undefined
}

/** Types that have a signature: declaring one of these requires the bytes to carry it. */
const SIGNED_TYPES = new Set([
  "image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp", "image/tiff", "image/avif", "image/heic",
  "image/x-icon", "audio/wav", "audio/ogg", "audio/flac", "audio/mpeg", "video/webm", "application/pdf",
  "application/zip", "application/gzip"
])
const ALIASES: Record<string, string> = {
  "image/jpg": "image/jpeg",
  "image/pjpeg": "image/jpeg",
  "audio/x-wav": "audio/wav",
  "audio/wave": "audio/wav",
  "audio/mp3": "audio/mpeg",
  "video/x-matroska": "video/webm",
  "audio/webm": "video/webm",
  "image/vnd.microsoft.icon": "image/x-icon",
  "application/x-zip-compressed": "application/zip",
  "application/x-gzip": "application/gzip",
  "image/heif": "image/heic"
}
const canonical = (type: string) => ALIASES[type] ?? type
/** Container families whose sniffed type can stand for several declared ones. */
const compatible = (declared: string, sniffed: string): boolean => {
  if (declared === sniffed) return true
  const iso = new Set(["video/mp4", "audio/mp4", "video/quicktime", "image/avif", "image/heic", "video/3gpp", "audio/x-m4a", "audio/aac"])
  if (iso.has(declared) && iso.has(sniffed)) return true
  if (sniffed === "video/webm" && (declared === "audio/webm" || declared.startsWith("video/"))) return true
  if (sniffed === "application/zip" && declared.startsWith("application/")) return true // docx, xlsx, epub, jar, ...
  if (sniffed === "audio/ogg" && (declared === "video/ogg" || declared === "application/ogg")) return true
  return false
}

/**
 * Whether the leading bytes contradict the declared type. Unknown bytes never contradict a type that has
 * no signature (text, JSON, CSV, SVG, ...).
 */
export const bytesContradict = (declaredType: string, leading: Uint8Array): boolean => {
  if (leading.length === 0) return false
  const declared = canonical(essence(declaredType))
  if (declared === "application/octet-stream" || declared === "") return false
  const sniffed = sniffContentType(leading)
  if (sniffed === undefined) return SIGNED_TYPES.has(declared) && leading.length >= 4
  return !compatible(declared, sniffed)
}

/** `content_type_not_allowed` when the bytes contradict `declaredType`. */
export const sniffRefusal = (declaredType: string, leading: Uint8Array): BlobError | undefined => {
  if (!bytesContradict(declaredType, leading)) return undefined
  const sniffed = sniffContentType(leading)
  return new BlobError("content_type_not_allowed", {
    message: `${essence(declaredType)} does not match the file's contents` +
      (sniffed === undefined ? "" : ` (they look like ${sniffed})`),
    hint: "Declare the file's real content type"
  })
}

/** A small extension -> type table for puts that declare no type. */
const BY_EXTENSION: Record<string, string> = {
  txt: "text/plain", html: "text/html", htm: "text/html", css: "text/css", csv: "text/csv", md: "text/markdown",
  js: "text/javascript", mjs: "text/javascript", json: "application/json", xml: "application/xml",
  png: "image/png", jpg: "image/jpeg", jpeg: "image/jpeg", gif: "image/gif", webp: "image/webp", avif: "image/avif",
  svg: "image/svg+xml", ico: "image/x-icon", bmp: "image/bmp", tif: "image/tiff", tiff: "image/tiff",
  heic: "image/heic", mp4: "video/mp4", webm: "video/webm", mov: "video/quicktime", mp3: "audio/mpeg",
  wav: "audio/wav", ogg: "audio/ogg", flac: "audio/flac", m4a: "audio/mp4", pdf: "application/pdf",
  zip: "application/zip", gz: "application/gzip", wasm: "application/wasm"
}

/** The type a path's extension suggests, else `application/octet-stream`. */
export const contentTypeFromPath = (path: string): string => {
  const name = path.slice(path.lastIndexOf("/") + 1)
  const dot = name.lastIndexOf(".")
  return (dot > 0 ? BY_EXTENSION[name.slice(dot + 1).toLowerCase()] : undefined) ?? "application/octet-stream"
}
