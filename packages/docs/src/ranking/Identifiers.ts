/**
 * The words inside the identifiers of a snippet's title and heading path, for ranking (ranking/Bm25.ts,
 * weight D of `snippets.search`, migration 0004): documentation titles its API sections after names
 * (`maxRetryAfter`, `dnsLookupIpVersion`, `return503OnClosing`, `pino.destination`, `UND_ERR_HEADERS_TIMEOUT`),
 * which full text keeps as one word, while a question says "retry after", "ip version", "closing".
 *
 * An identifier is a word with an inner capital, an underscore, a dot or a hyphen between letters; its
 * parts are split at camelCase humps, digits and those separators. Plain words are left out (the title
 * and the heading path are in the vector already, weights A and B).
 */

/** At most this many characters (a heading path is short; a title with a long signature is cut). */
const MAX_CHARS = 2000

/**
 * A run of letters and digits, joined to further runs by `_`, `.` or `-`: the text an identifier can be.
 * The identifier rules below look inside one such run at a time, so each character is read a bounded
 * number of times. As one regular expression (`[\p{L}\p{N}]*\p{Ll}\p{Lu}…`, tried at every position) a
 * long word with no capital in it (2,000 × "é", a question of the longest length) was read again from
 * every position: 0.17-0.34 s of CPU per request (an outside audit).
 */
const CHUNK = /[\p{L}\p{N}]+(?:[_.-]+[\p{L}\p{N}]+)*/gu
const SEPARATOR = /[_.-]/
/** camelCase: a lower-case letter followed by a capital. */
const HUMP = /\p{Ll}\p{Lu}/u
const CAPITALS = /\p{Lu}+/gu
const LOWER = /^\p{Ll}$/u

/**
 * The identifier in one chunk, or undefined: the whole chunk when it joins runs (`pino.destination`,
 * `UND_ERR_HEADERS_TIMEOUT`) or has a camelCase hump (`maxRetryAfter`); else from the first run of two
 * or more capitals followed by a lower-case letter to the chunk's end (`HTTPError`, `2XXStatus` → XXStatus).
 */
const identifierIn = (chunk: string): string | undefined => {
  if (SEPARATOR.test(chunk) || HUMP.test(chunk)) return chunk
  for (const capitals of chunk.matchAll(CAPITALS)) {
    const end = capitals.index + capitals[0].length
    if ([...capitals[0]].length >= 2 && LOWER.test(String.fromCodePoint(chunk.codePointAt(end) ?? 0))) return chunk.slice(capitals.index)
  }
  return undefined
}

/** The parts of one identifier: `maxRetryAfter` → max retry after; `HTTPError` → http error. */
export const splitIdentifier = (identifier: string): ReadonlyArray<string> =>
  identifier
    .replace(/(\p{Ll})(\p{Lu})/gu, "$1 $2")
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, "$1 $2")
    .replace(/(\p{L})(\p{N})/gu, "$1 $2")
    .replace(/(\p{N})(\p{L})/gu, "$1 $2")
    .split(/[^\p{L}\p{N}]+/u)
    .filter((part) => part !== "")
    .map((part) => part.toLowerCase())

/** The split parts of every identifier in `text`, space-separated (empty when it has none). */
export const identifierWords = (text: string): string =>
  [...text.slice(0, MAX_CHARS).matchAll(CHUNK)].flatMap((match) => {
    const identifier = identifierIn(match[0])
    return identifier === undefined ? [] : splitIdentifier(identifier)
  }).join(" ")
