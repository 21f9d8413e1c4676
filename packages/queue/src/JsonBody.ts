/**
 * The queue's JSON request bodies, read by one set of rules: `POST /v2/batch` (`http.ts`) and every
 * `QueueApi` endpoint with a JSON payload (the `QueueJsonBody` middleware, before effect decodes the
 * payload). A body the queue would store, or act on, as something other than what was sent is
 * refused with a 400 naming it:
 *
 * - the bytes must be UTF-8 (RFC 8259 §8.1): a lenient decoder turns an invalid sequence into
 *   U+FFFD, so `"\xff\xfe"` in a batch body was stored as two replacement characters;
 * - every string, key or value, must be well-formed Unicode: an unpaired surrogate escape
 *   (`"\ud800"`, which RFC 8259 §8.2 leaves unpredictable) cannot be written as UTF-8 either, and
 *   Postgres (and a batch's text body) would hold U+FFFD instead.
 */
import type { RequestIssue } from "@svc/schema"
import { Result } from "effect"

const UTF8 = new TextDecoder("utf-8", { fatal: true })

/** An unpaired surrogate: `u` mode matches a pair as one code point, so only a lone half is `Cs`. */
const UNPAIRED_SURROGATE = /\p{Cs}/u

/** Why `text` is not well-formed Unicode (it holds an unpaired surrogate), or none. */
export const unpairedSurrogateProblem = (text: string): string | undefined => {
  const found = UNPAIRED_SURROGATE.exec(text)
  if (found === null) return undefined
  const hex = found[0].charCodeAt(0).toString(16)
  return `holds an unpaired surrogate (\\u${hex} at character ${found.index}), which UTF-8 cannot carry: ` +
    "it would be stored as U+FFFD, not as sent"
}

/** The path of a body field as the suite's 400s name it (`[3].headers.Svc-Delay`, `filter.url`). */
const child = (path: string, key: string | number) => typeof key === "number" ? `${path}[${key}]` : path === "" ? key : `${path}.${key}`

/** The first string of `value` (a key or a value, depth first) that is not well-formed, as an issue. */
const illFormed = (value: unknown, path: string): RequestIssue | undefined => {
  if (typeof value === "string") {
    const problem = unpairedSurrogateProblem(value)
    return problem === undefined ? undefined : { in: "body", parameter: path, problem }
  }
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const found = illFormed(value[index], child(path, index))
      if (found !== undefined) return found
    }
    return undefined
  }
  if (typeof value === "object" && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      const keyProblem = unpairedSurrogateProblem(key)
      if (keyProblem !== undefined) return { in: "body", parameter: child(path, key), problem: `the key ${keyProblem}` }
      const found = illFormed(item, child(path, key))
      if (found !== undefined) return found
    }
  }
  return undefined
}

/**
 * A JSON body parsed, or the issue that refuses it: empty, not UTF-8, not JSON, or a string that
 * is not well-formed Unicode. `expected` says what the route takes ("a JSON array of messages"), for
 * an empty body. A leading byte order mark is skipped (RFC 8259 §8.1 allows that).
 */
export const parse = (bytes: Uint8Array, expected: string): Result.Result<unknown, RequestIssue> => {
  const issue = (problem: string, parameter = ""): RequestIssue => ({ in: "body", parameter, problem })
  let text: string
  try {
    text = UTF8.decode(bytes)
  } catch {
    return Result.fail(issue("is not valid UTF-8: a JSON body must be UTF-8 (RFC 8259)"))
  }
  if (text.trim() === "") return Result.fail(issue(`is empty: expected ${expected}`))
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    return Result.fail(issue(`is not valid JSON (${error instanceof Error ? error.message.slice(0, 200) : "unreadable"})`))
  }
  const found = illFormed(json, "")
  return found === undefined ? Result.succeed(json) : Result.fail(found)
}
