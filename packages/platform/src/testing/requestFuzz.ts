/**
 * Property-based request fuzzing (fast-check) for the services' HTTP routes: hostile values for
 * parameters, URL building that survives any string, and the check every answer must pass
 * (DESIGN.md §3 "Errors", "Input limits"):
 *
 * - never a 5xx;
 * - an error (4xx) is JSON `{code, message, ...}` with a snake_case `code`;
 * - no body carries a stack trace, SQL or its errors, or a file path of the server.
 *
 * A run is deterministic: the seed is fixed unless `FUZZ_SEED` is set (to explore: `FUZZ_SEED=$RANDOM`),
 * and `FUZZ_RUNS_SCALE` multiplies the number of runs. A failure prints the seed and the shrunk request.
 */
import fc from "fast-check"

// -----------------------------------------------------------------------------
// Values
// -----------------------------------------------------------------------------

/** What must never appear in an error body: stack frames, SQL and its errors, server paths. */
export const LEAK_MARKERS: ReadonlyArray<RegExp> = [
  /\n\s*at\s/,
  /\bat [^\s()]+ \(/,
  /node_modules/,
  /\/packages\//,
  /\/work\//,
  /\/home\//,
  /\/tmp\//,
  /file:\/\//,
  /\.[cm]?[jt]s:\d+/,
  /SqlError/,
  /PostgresError/i,
  /SQLSTATE/i,
  /syntax error at/i,
  /invalid byte sequence/i,
  /out of range for type/i,
  /\btsquery\b/i,
  /\bSELECT\b[\s\S]*\bFROM\b/i,
  /\bWHERE\b[\s\S]*=\s*\$\d/i
]

const clean = (value: string): boolean => !LEAK_MARKERS.some((marker) => marker.test(value))

/** Numbers as a client might type them, and what their parsers choke on. */
export const numberLike: fc.Arbitrary<string> = fc.oneof(
  fc.integer().map(String),
  fc.integer({ min: -5, max: 3000 }).map(String),
  fc.double().map(String),
  fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map(String),
  fc.constantFrom(
    "99999999999",
    "-99999999999",
    "2147483648",
    "-2147483649",
    "9223372036854775808",
    "1e400",
    "-1e400",
    "1e-400",
    "NaN",
    "Infinity",
    "-Infinity",
    "-0",
    "0x10",
    "0b11",
    "1_000",
    "1,5",
    "1.5",
    "  7 ",
    "",
    "+1",
    "007",
    "1e3",
    "١٢٣"
  )
)

/** Strings with a NUL somewhere. */
export const withNul: fc.Arbitrary<string> = fc.tuple(fc.string({ maxLength: 10 }), fc.string({ maxLength: 10 }))
  .map(([before, after]) => `${before}\u0000${after}`)

/** Long values: one word, many words, long lists; up to 60,000 characters. */
export const huge: fc.Arbitrary<string> = fc.tuple(
  fc.constantFrom("a", "é", "1", "\u3316", "x ", "x,", ",", " ", "%", "'", "\\", "\u0000", "😀"),
  fc.constantFrom(201, 2_049, 10_000, 60_000)
).map(([unit, length]) => unit.repeat(Math.ceil(length / unit.length)))

/** What breaks storage and search: NULs, long words, long lists, encodings that grow when folded. */
export const nulOrHuge: fc.Arbitrary<string> = fc.oneof(
  withNul,
  huge,
  fc.tuple(fc.constantFrom("a", "\u3316", "é", "ß"), fc.integer({ min: 150, max: 3_000 })).map(([unit, n]) => unit.repeat(n)),
  fc.array(fc.string({ minLength: 1, maxLength: 300 }), { minLength: 40, maxLength: 80 }).map((items) => items.join(","))
)

/** Strings that mean something to someone: SQL, tsquery, LIKE, JSON, paths, prototypes. */
export const tricky: fc.Arbitrary<string> = fc.constantFrom(
  "",
  " ",
  ",",
  ",,,",
  "a,,b, ,",
  "'",
  "''",
  "\"",
  "\\",
  "%",
  "_",
  "*",
  "!",
  "&",
  "|",
  ":*",
  "a:* & b",
  "') | ! & :*",
  "(",
  "<->",
  "--",
  "/*",
  "$1",
  "{}",
  "[]",
  "null",
  "true",
  "undefined",
  "__proto__",
  "constructor",
  "toString",
  "hasOwnProperty",
  "../..",
  "/etc/passwd",
  "..%2f",
  "\r\n",
  "\t",
  "\u0001\u007f",
  "\ud800",
  "\udfff\ud800",
  "\uffff",
  "\u202e",
  "😀",
  "Ł",
  "ﷺ"
)

/** Any value for a parameter, clean of the leak markers (an echo of the value is not a leak). */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.string({ maxLength: 30 }), weight: 3 },
  { arbitrary: fc.string({ unit: "grapheme", maxLength: 15 }), weight: 2 },
  { arbitrary: fc.string({ unit: "binary", maxLength: 30 }), weight: 2 },
  { arbitrary: numberLike, weight: 4 },
  { arbitrary: withNul, weight: 3 },
  { arbitrary: huge, weight: 2 },
  { arbitrary: tricky, weight: 2 },
  { arbitrary: fc.array(fc.string({ maxLength: 8 }), { maxLength: 60 }).map((items) => items.join(",")), weight: 1 }
).filter(clean)

/** Parameter names: the route's own, and others (unknown, prototype keys, case variants). */
export const paramName = (known: ReadonlyArray<string>): fc.Arbitrary<string> => {
  const others = [
    {
      arbitrary: fc.constantFrom("__proto__", "constructor", "prototype", "toString", "x", "svc_token", "a[b]", "a.b"),
      weight: 1
    },
    { arbitrary: fc.string({ maxLength: 12 }).filter(clean), weight: 1 }
  ]
  return known.length === 0 ? fc.oneof(...others) : fc.oneof(
    { arbitrary: fc.constantFrom(...known), weight: 6 },
    { arbitrary: fc.constantFrom(...known).map((name) => name.toUpperCase()), weight: 1 },
    ...others
  )
}

/** Raw URL pieces a client's encoder would never produce: bad escapes, encoded slashes. */
export const rawPiece: fc.Arbitrary<string> = fc.constantFrom(
  "%",
  "%zz",
  "%C3%28",
  "%FF%FE",
  "%E0%80%80",
  "%ED%A0%80",
  "%00",
  "+",
  "%2B",
  "%25",
  "%2F",
  "%2F..%2F",
  "%5C",
  "&&",
  "=",
  "=="
)

// -----------------------------------------------------------------------------
// URLs
// -----------------------------------------------------------------------------

const utf8 = new TextEncoder()

/**
 * Percent-encodes every byte of the UTF-8 of `value` outside the unreserved set. Unlike
 * `encodeURIComponent` it never throws (a lone surrogate becomes U+FFFD, as any client sends it).
 */
export const percentEncode = (value: string): string => {
  let out = ""
  for (const byte of utf8.encode(value)) {
    out += (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) ||
        byte === 0x2d || byte === 0x2e || byte === 0x5f || byte === 0x7e
      ? String.fromCharCode(byte)
      : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`
  }
  return out
}

/** A parameter value as sent: an encoded hostile string, at times a raw piece. */
export const encodedValue: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: hostileString.map(percentEncode), weight: 9 },
  { arbitrary: rawPiece, weight: 1 }
)

const part = ([name, value, withEquals]: readonly [string, string, boolean]) =>
  withEquals || value !== "" ? `${percentEncode(name)}=${value}` : percentEncode(name)

/** One query parameter of any name (see {@link paramName}). */
export const queryPart = (known: ReadonlyArray<string>): fc.Arbitrary<string> =>
  fc.tuple(paramName(known), encodedValue, fc.boolean()).map(part)

/**
 * A query string (`?…`, or ""). Mostly one to three of the route's own parameters with hostile
 * values and the rest absent — so that one bad value does not hide another behind a 400 — plus at
 * times parameters of any name, repeated ones included.
 */
export const queryString = (known: ReadonlyArray<string>): fc.Arbitrary<string> => {
  const own = known.length === 0
    ? fc.constant<Array<string>>([])
    : fc.uniqueArray(fc.constantFrom(...known), { minLength: 1, maxLength: Math.min(3, known.length) }).chain((names) =>
      fc.tuple(...names.map((name) => fc.tuple(fc.constant(name), encodedValue, fc.boolean()).map(part)))
    )
  return fc.tuple(
    own,
    fc.oneof({ arbitrary: fc.constant<Array<string>>([]), weight: 2 }, { arbitrary: fc.array(queryPart(known), { maxLength: 4 }), weight: 1 })
  ).map(([mine, others]) => {
    const parts = [...mine, ...others]
    return parts.length === 0 ? "" : `?${parts.join("&")}`
  })
}

/** A path segment: an encoded hostile string, or a raw piece. */
export const pathSegment: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: hostileString.filter((value) => value !== "").map(percentEncode), weight: 9 },
  { arbitrary: rawPiece, weight: 1 }
)

/**
 * A request body's `Content-Type`, or none (`""`): JSON, with and without a charset, the charsets a JSON
 * route refuses with 415 (anything but UTF-8: `JsonBody.charsetProblem`), and other media types.
 */
export const contentType: fc.Arbitrary<string> = fc.constantFrom(
  "application/json",
  "application/json; charset=utf-8",
  "application/json; charset=utf-16",
  "application/json; charset=\"ISO-8859-1\"",
  "text/plain",
  "",
  "multipart/form-data; boundary=x",
  "application/x-www-form-urlencoded"
)

/** A request of any method at any path below one of `prefixes`, with a hostile query, body and content type. */
export interface AnyRequest {
  /** The path and query, encoded. */
  readonly path: string
  readonly init: RequestInit & { readonly method: string }
}

/** {@link AnyRequest}s below `prefixes` (`""` for the root), their queries made of `params` and unknown names. */
export const anyRequest = (prefixes: ReadonlyArray<string>, params: ReadonlyArray<string>): fc.Arbitrary<AnyRequest> =>
  fc.record({
    method: fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"),
    prefix: fc.constantFrom(...prefixes),
    segments: fc.array(pathSegment, { maxLength: 3 }),
    query: queryString(params),
    body: fc.oneof(hostileString, fc.jsonValue({ maxDepth: 2 }).map((value) => JSON.stringify(value))),
    contentType
  }).map(({ body, contentType, method, prefix, query, segments }) => ({
    path: `${`${prefix}${segments.map((segment) => `/${segment}`).join("")}` || "/"}${query}`,
    init: {
      method,
      ...(method === "GET" || method === "HEAD" ? {} : { body }),
      headers: contentType === "" ? {} : { "content-type": contentType }
    }
  }))

// -----------------------------------------------------------------------------
// The check
// -----------------------------------------------------------------------------

/** What a test reads of an answer. */
export interface Answer {
  readonly status: number
  readonly contentType: string | null
  readonly text: string
}

/** Reads a web `Response` into an {@link Answer}. */
export const readAnswer = async (response: Response): Promise<Answer> => ({
  status: response.status,
  contentType: response.headers.get("content-type"),
  text: await response.text()
})

/**
 * Throws (with the request in the message) unless the answer follows the suite's conventions:
 * no 5xx, errors as `{code, message}` JSON, nothing of the server's insides in any error body.
 */
export const checkAnswer = (request: string, answer: Answer): void => {
  const fail = (why: string) => {
    throw new Error(`${request} -> ${answer.status}: ${why}\n${answer.text.slice(0, 500)}`)
  }
  if (answer.status >= 500) fail("a server error")
  // A 2xx body holds data (docs snippets hold code); only the unmistakable signs of an error apply.
  const markers = answer.status >= 400 ? LEAK_MARKERS : LEAK_MARKERS.slice(0, 2)
  const leak = markers.find((marker) => marker.test(answer.text))
  if (leak !== undefined) fail(`the body matches ${leak}`)
  if (answer.status < 400) return
  if (!(answer.contentType ?? "").startsWith("application/json")) fail(`content type ${answer.contentType}`)
  let body: unknown
  try {
    body = JSON.parse(answer.text)
  } catch {
    return fail("the body is not JSON")
  }
  if (typeof body !== "object" || body === null) return fail("the body is not an object")
  const { code, message } = body as { readonly code?: unknown; readonly message?: unknown }
  if (typeof code !== "string" || !/^[a-z][a-z0-9_]*$/.test(code)) fail("no snake_case code")
  if (typeof message !== "string" || message === "") fail("no message")
  if (code === "internal_error") fail("internal_error")
}

/** Reads the answer to `method path` and checks it with {@link checkAnswer} (a HEAD answer has no body: its status only). */
export const checkResponse = async (method: string, path: string, response: Response): Promise<Answer> => {
  const answer = await readAnswer(response)
  if (method !== "HEAD") checkAnswer(`${method} ${path}`, answer)
  else if (answer.status >= 500) throw new Error(`HEAD ${path} -> ${answer.status}: a server error`)
  return answer
}

/**
 * Throws unless the answer to `request` is a 400 `invalid_request` whose issues name `parameter` (in
 * `location`, when given) and whose message quotes it, with nothing of the server's insides in it.
 */
export const checkInvalid = (
  request: string,
  answer: { readonly status: number; readonly body: any },
  parameter: string,
  location?: "query" | "path" | "header" | "body"
): void => {
  const text = JSON.stringify(answer.body)
  const fail = (why: string) => {
    throw new Error(`${request.slice(0, 100)} -> ${answer.status}: ${why}\n${text.slice(0, 300)}`)
  }
  if (answer.status !== 400 || answer.body?.code !== "invalid_request") fail("not a 400 invalid_request")
  const named = (answer.body.issues ?? []).some((issue: { in?: string; parameter?: string }) =>
    issue.parameter === parameter && (location === undefined || issue.in === location)
  )
  if (!named) fail(`no issue names ${location ?? "the"} parameter "${parameter}"`)
  if (typeof answer.body.message !== "string" || !answer.body.message.includes(`"${parameter}"`)) {
    fail(`the message does not quote "${parameter}"`)
  }
  const leak = LEAK_MARKERS.find((marker) => marker.test(text))
  if (leak !== undefined) fail(`the body matches ${leak}`)
}

/**
 * Throws unless an answer of an internal RPC (`POST /rpc`, NDJSON, always 200 once authorized) is
 * clean: no 5xx, no `Defect` (the RPC's 500: a failure the server did not expect, sent with its
 * message), and none of the leak markers anywhere. A payload that fails to decode is answered with
 * the schema's message, which is the RPC's 400.
 */
export const checkRpcAnswer = (
  request: string,
  answer: Answer,
  options?: {
    /** A malformed envelope or an unknown procedure is answered as a `Defect` by the RPC server itself. */
    readonly malformed?: boolean | undefined
  }
): void => {
  const fail = (why: string) => {
    throw new Error(`${request} -> ${answer.status}: ${why}\n${answer.text.slice(0, 500)}`)
  }
  if (answer.status >= 500) fail("a server error")
  if (answer.status >= 400) return checkAnswer(request, answer)
  if (options?.malformed !== true && answer.text.includes("\"_tag\":\"Defect\"")) fail("a defect")
  const leak = LEAK_MARKERS.find((marker) => marker.test(answer.text))
  if (leak !== undefined) fail(`the body matches ${leak}`)
}

/** fast-check parameters of a fuzz run: a fixed seed unless `FUZZ_SEED` is set; `FUZZ_RUNS_SCALE` multiplies the runs. */
export const fuzzParameters = (numRuns: number): fc.Parameters<unknown> => {
  const seed = process.env["FUZZ_SEED"]
  const scale = Number(process.env["FUZZ_RUNS_SCALE"] ?? "1")
  return {
    numRuns: Math.max(1, Math.round(numRuns * (Number.isFinite(scale) && scale > 0 ? scale : 1))),
    seed: seed === undefined || !/^-?\d+$/.test(seed) ? 16_17 : Number(seed)
  }
}

export { fc }
