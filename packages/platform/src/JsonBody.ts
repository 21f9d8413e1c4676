/**
 * JSON request bodies read by one set of rules: the queue's (`POST /v2/batch` and every `QueueApi`
 * endpoint with a JSON payload, through the `QueueJsonBody` middleware, before effect decodes the
 * payload), the upload route's (`@svc/blob`) and the MCP server's (`POST /mcp` and each stdio line). A body a service would store, or act on, as
 * something other than what was sent is refused with a 400 naming it:
 *
 * - the bytes must be UTF-8 (RFC 8259 §8.1): a lenient decoder turns an invalid sequence into
 *   U+FFFD, so `"\xff\xfe"` in a batch body was stored as two replacement characters;
 * - every string, key or value, must be well-formed Unicode: an unpaired surrogate escape
 *   (`"\ud800"`, which RFC 8259 §8.2 leaves unpredictable) cannot be written as UTF-8 either, and
 *   Postgres (and a batch's text body) would hold U+FFFD instead;
 * - arrays and objects nest at most {@link MAX_DEPTH} levels deep;
 * - no object has a key twice (`JSON.parse` would keep the last one, silently).
 *
 * Before any of that, the body's `Content-Type` may not name another charset ({@link charsetProblem}):
 * a UTF-16 body was read as UTF-8 and refused "not valid UTF-8" (or "not valid JSON"), naming
 * the bytes, not the label. Each server refuses it 415 in its own error shape, before reading the body.
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

/**
 * How deep arrays and objects may nest in a queue request body. The deepest a queue route takes is
 * 3 (a batch: array, message, `headers`); JSON.parse reads any depth, but what comes after it
 * (a schema's message echoing the value, `JSON.stringify`) recurses and would overflow the stack
 * on a 10 KB body of brackets, a 500 instead of a 400.
 */
export const MAX_DEPTH = 32

/** A value met by the walk: where it sits (its parent and its key there), so its path is built only for an issue. */
interface Visit {
  readonly value: unknown
  readonly parent: Visit | undefined
  readonly key: string | number | undefined
  readonly depth: number
}

const pathOf = (visit: Visit): string => {
  const keys: Array<string | number> = []
  for (let at: Visit | undefined = visit; at !== undefined && at.key !== undefined; at = at.parent) keys.push(at.key)
  return keys.reduceRight<string>((path, key) => child(path, key), "")
}

/**
 * The first problem of `root` (depth first, a key before its value), as an issue: a string, key or
 * value, that is not well-formed, or arrays and objects nested deeper than {@link MAX_DEPTH}. An
 * explicit stack, not recursion: the walk never overflows, whatever the depth.
 */
const illFormed = (root: unknown, wellFormedStrings: boolean): RequestIssue | undefined => {
  const issue = (visit: Visit, problem: string): RequestIssue => ({ in: "body", parameter: pathOf(visit), problem })
  const stack: Array<Visit> = [{ value: root, parent: undefined, key: undefined, depth: 0 }]
  while (stack.length > 0) {
    const visit = stack.pop()!
    // An object's key (a string; an array's index is a number) is checked before its value.
    if (wellFormedStrings && typeof visit.key === "string") {
      const keyProblem = unpairedSurrogateProblem(visit.key)
      if (keyProblem !== undefined) return issue(visit, `the key ${keyProblem}`)
    }
    const { value } = visit
    if (typeof value === "string") {
      const problem = wellFormedStrings ? unpairedSurrogateProblem(value) : undefined
      if (problem !== undefined) return issue(visit, problem)
      continue
    }
    if (typeof value !== "object" || value === null) continue
    const depth = visit.depth + 1
    if (depth > MAX_DEPTH) {
      return issue(visit, `nests arrays and objects more than ${MAX_DEPTH} levels deep`)
    }
    // Pushed last first, so that they come off the stack in order.
    if (Array.isArray(value)) {
      for (let index = value.length - 1; index >= 0; index--) {
        stack.push({ value: value[index], parent: visit, key: index, depth })
      }
    } else {
      const keys = Object.keys(value)
      for (let index = keys.length - 1; index >= 0; index--) {
        const key = keys[index]!
        stack.push({ value: (value as Record<string, unknown>)[key], parent: visit, key, depth })
      }
    }
  }
  return undefined
}

/**
 * The first key given twice in one object of `text`, valid JSON (`JSON.parse` read it), as an
 * issue. `JSON.parse` keeps the last of them, silently: `{"filter":{"url":"…/keep","url":"…/none"}}`
 * would act on the second url only. A scan of the text, not of the parsed value (where the first
 * one is gone): strings are skipped to their closing quote, and a key with an escape is compared
 * as JSON reads it (`"\u0075rl"` is `url`).
 */
const duplicateKey = (text: string): RequestIssue | undefined => {
  // Per open array or object: its keys so far (objects) and where the scan is in it (a key or an index).
  const open: Array<{ readonly keys: Set<string> | undefined; at: string | number }> = []
  let expectKey = false
  for (let i = 0; i < text.length; i++) {
    switch (text.charCodeAt(i)) {
      case 0x7b: // {
        open.push({ keys: new Set(), at: "" })
        expectKey = true
        break
      case 0x5b: // [
        open.push({ keys: undefined, at: 0 })
        expectKey = false
        break
      case 0x7d: // }
      case 0x5d: // ]
        open.pop()
        expectKey = false
        break
      case 0x2c: { // ,
        const inner = open[open.length - 1]!
        if (inner.keys !== undefined) expectKey = true
        else inner.at = (inner.at as number) + 1
        break
      }
      case 0x22: { // "
        let end = i + 1
        for (;;) {
          end = text.indexOf("\"", end)
          let backslashes = 0
          while (text.charCodeAt(end - 1 - backslashes) === 0x5c) backslashes++
          if (backslashes % 2 === 0) break
          end++
        }
        if (expectKey) {
          const raw = text.slice(i + 1, end)
          const key: string = raw.includes("\\") ? JSON.parse(text.slice(i, end + 1)) : raw
          const inner = open[open.length - 1]!
          inner.at = key
          if (inner.keys!.has(key)) {
            const parameter = open.reduce<string>((path, { at }) => child(path, at), "")
            return { in: "body", parameter, problem: "is given twice in one object: only the last would count, give it once" }
          }
          inner.keys!.add(key)
          expectKey = false
        }
        i = end
        break
      }
    }
  }
  return undefined
}

// -----------------------------------------------------------------------------
// The charset of a JSON body
// -----------------------------------------------------------------------------

/**
 * The `charset` values a JSON body may be declared with (compared lowercased): UTF-8, which RFC 8259
 * §8.1 requires of JSON between systems (`application/json` defines no charset parameter, so none is
 * needed), under its IANA name and the common alias `utf8`; and US-ASCII (`us-ascii`, `ascii`), a
 * subset of UTF-8: an ASCII body is a UTF-8 body, and a byte above 0x7F under that label is read as
 * UTF-8, so refused (400, not UTF-8) unless it is UTF-8.
 */
export const ACCEPTED_CHARSETS: ReadonlySet<string> = new Set(["utf-8", "utf8", "us-ascii", "ascii"])

/*
 * The parameters are read here, leniently, and not with the `content-type` package: it throws on what
 * clients send sloppily and every route accepts today ("application/json; foo", ";;charset=utf-8").
 */
/** One `; name=value` parameter of a media type; the value a quoted string (with `\` escapes) or a bare run up to the next `;`. */
const PARAMETER = /;[ \t]*([^;=]*?)[ \t]*(?:=[ \t]*("(?:[^"\\]|\\.)*"|[^;]*))?(?=;|$)/gs

/** A parameter value as meant: unquoted and unescaped when quoted, a stray quote dropped, trimmed. */
const parameterValue = (raw: string): string => {
  const value = raw.trim()
  if (value.length >= 2 && value.startsWith("\"") && value.endsWith("\"")) return value.slice(1, -1).replace(/\\(.)/gs, "$1")
  return value.replace(/^"|"$/g, "").trim()
}

/**
 * Why a JSON body sent with this `Content-Type` is refused before it is read, or none: a `charset`
 * parameter (its name in any case, its value bare or quoted, in any case) that is not in
 * {@link ACCEPTED_CHARSETS}, an empty one included. No `Content-Type`, or one without a charset, is
 * read as UTF-8. The media type itself is the route's to judge. The answer is a 415 (Unsupported Media
 * Type) in the server's error shape, with this sentence as its message.
 */
export const charsetProblem = (contentType: string | null | undefined): string | undefined => {
  if (contentType === null || contentType === undefined) return undefined
  const start = contentType.indexOf(";")
  if (start === -1) return undefined
  for (const [, name = "", value] of contentType.slice(start).matchAll(PARAMETER)) {
    if (name.toLowerCase() !== "charset") continue
    const charset = parameterValue(value ?? "")
    if (ACCEPTED_CHARSETS.has(charset.toLowerCase())) continue
    const shown = charset.length > 50 ? `${charset.slice(0, 50)}…` : charset
    return `Content-Type charset ${JSON.stringify(shown)} is not supported: send the JSON body as UTF-8 ` +
      "(charset=utf-8, or no charset; RFC 8259)"
  }
  return undefined
}

// -----------------------------------------------------------------------------
// Parsing
// -----------------------------------------------------------------------------

/**
 * A JSON body parsed, or the issue that refuses it: empty, not UTF-8, not JSON, a string that
 * is not well-formed Unicode, nested too deep, or a key given twice in one object. `expected` says
 * what the route takes ("a JSON array of messages"), for an empty body. A leading byte order mark
 * is skipped (RFC 8259 §8.1 allows that).
 */
export const parse = (bytes: Uint8Array, expected: string): Result.Result<unknown, RequestIssue> =>
  Result.flatMap(decodeText(bytes), (text) => parseText(text, expected))

/** A body's bytes as text, strictly: bytes that are not UTF-8 are refused, never read as U+FFFD. */
export const decodeText = (bytes: Uint8Array): Result.Result<string, RequestIssue> => {
  try {
    return Result.succeed(UTF8.decode(bytes))
  } catch {
    return Result.fail(issue("is not valid UTF-8: a JSON body must be UTF-8 (RFC 8259)"))
  }
}

const issue = (problem: string, parameter = ""): RequestIssue => ({ in: "body", parameter, problem })

/**
 * {@link parse} for a body already decoded by {@link decodeText}. With `wellFormedStrings: false`
 * the strings are left for the reader to check (an RPC procedure answers with its own typed error).
 */
export const parseText = (
  text: string,
  expected: string,
  rules: { readonly wellFormedStrings: boolean } = { wellFormedStrings: true }
): Result.Result<unknown, RequestIssue> => {
  if (text.trim() === "") return Result.fail(issue(`is empty: expected ${expected}`))
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    return Result.fail(issue(`is not valid JSON (${error instanceof Error ? error.message.slice(0, 200) : "unreadable"})`))
  }
  const found = illFormed(json, rules.wellFormedStrings) ?? duplicateKey(text)
  return found === undefined ? Result.succeed(json) : Result.fail(found)
}
