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

const IDENTIFIER = /[\p{L}\p{N}]+(?:[_.-]+[\p{L}\p{N}]+)+|[\p{L}\p{N}]*\p{Ll}\p{Lu}[\p{L}\p{N}]*|\p{Lu}{2,}\p{Ll}[\p{L}\p{N}]*/gu

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
  [...text.slice(0, MAX_CHARS).matchAll(IDENTIFIER)].flatMap((match) => splitIdentifier(match[0])).join(" ")
