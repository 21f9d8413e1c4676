/**
 * Object paths: `a/b/c.png`. A path with an empty segment (`""`, `"/a"`, `"a/"`, `"a//b"`) is refused with
 * `invalid_input`, as are `.`/`..` segments and control characters; a leading or trailing `/` is named
 * as such, without repeating the path.
 *
 * @module
 */
import { BlobError } from "./BlobError.ts"

/** Why `path` is not a valid object path, or undefined when it is. */
export const pathProblem = (path: unknown): string | undefined => {
  if (typeof path !== "string") return "a path must be a string"
  if (path === "") return "the path is empty"
  // The leading and trailing slash are named as such, without the path: "/etc/passwd" was refused as
  // "the path \"<path>\" has an empty segment", naming the wrong problem, and the message scrubber
  // (BlobError's, which hides filesystem paths in every message) hid the client's own value.
  if (path.startsWith("/")) return `a path must not start with "/" (object paths are relative to the bucket: a/b.png)`
  if (path.endsWith("/")) return `a path must not end with "/" (it names an object, not a folder)`
  if (path.split("/").some((segment) => segment === "")) return `the path ${JSON.stringify(path)} has an empty segment ("//")`
  if (path.split("/").some((segment) => segment === "." || segment === "..")) {
    return `the path ${JSON.stringify(path)} has a "." or ".." segment`
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(path)) return "the path contains a control character"
  // UTF-8 cannot carry a lone surrogate: storage was sent U+FFFD, refused it, and the client retried as an outage
  if (!path.isWellFormed()) return "the path holds a lone surrogate (\\ud800-\\udfff alone), which UTF-8 cannot carry"
  if (new TextEncoder().encode(path).length > 1024) return "the path is longer than 1024 bytes"
  return undefined
}

/** The path, or an `invalid_input` BlobError. */
export const checkPath = (path: unknown): BlobError | string => {
  const problem = pathProblem(path)
  return problem === undefined ? path as string : new BlobError("invalid_input", { message: `Invalid path: ${problem}` })
}

/** Metadata values and keys must be printable ASCII (what S3 carries in x-amz-meta-* headers). */
export const metadataProblem = (metadata: Readonly<Record<string, string>>): string | undefined => {
  for (const [key, value] of Object.entries(metadata)) {
    if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(key)) return `metadata key ${JSON.stringify(key)} is not a header token`
    if (typeof value !== "string" || !/^[\x20-\x7e]*$/.test(value)) {
      return `metadata ${JSON.stringify(key)} must be printable ASCII`
    }
  }
  return undefined
}
