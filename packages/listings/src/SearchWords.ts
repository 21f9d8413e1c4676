/**
 * The words free-text search matches on. One function makes them for an offer's title, make and
 * model (at ingest, stored as the offer's `search` document) and for a request's `query`, so the two
 * always split and fold text the same way.
 *
 * Made here rather than by Postgres (`to_tsvector` over `unaccent`, as the `search` column was until
 * migration 0010): measured on 100,000 offers, computing the document in the database was a seventh
 * of writing them with every index (3.45 s against 2.97 s), in the one statement every ingest batch
 * waits for. And the two sides disagreed: the database's parser kept "1.6" as one word while a query
 * was split at the dot, so "1.6" found nothing.
 */
import { ownCopy } from "@svc/platform/OwnCopy"

/** Letters that carry no combining mark to strip (so NFKD leaves them) but are read as these. */
const FOLDED: Readonly<Record<string, string>> = {
  "ł": "l",
  "ø": "o",
  "đ": "d",
  "ð": "d",
  "ħ": "h",
  "ı": "i",
  "ß": "ss",
  "æ": "ae",
  "œ": "oe",
  "þ": "th"
}
const UNFOLDED = /[łøđðħıßæœþ]/g

/** Longest word a document keeps: nobody searches for longer, and Postgres refuses words over 2 KB. */
const MAX_WORD = 200

/** "Škoda Octavia 1.6 TDI" -> ["skoda", "octavia", "1", "6", "tdi"]: lower case, accents folded, split at anything but letters and digits. */
export const searchWords = (text: string): Array<string> =>
  text.normalize("NFKD").replace(/\p{M}+/gu, "").toLowerCase()
    .replace(UNFOLDED, (letter) => FOLDED[letter]!)
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word !== "")

/**
 * An offer's search document as the text of a `tsvector`: its distinct words separated by spaces.
 * The words hold only letters and digits, so the text needs no quoting.
 */
export const searchDocument = (text: string): string =>
  [...new Set(searchWords(text).filter((word) => word.length <= MAX_WORD))].join(" ")

/** Words of a query that are searched; the rest are ignored. */
const MAX_QUERY_WORDS = 16

/**
 * Free text -> a prefix tsquery ("merc benz" -> "merc:* & benz:*"); "" when no word (no condition);
 * `null` when no offer can match: a word longer than any document keeps ({@link MAX_WORD}) is the
 * prefix of no document word. Such a word never reaches Postgres, which refuses tsquery words over
 * 2,047 bytes (a 500 otherwise; the request's `query` is bounded, but folding can lengthen a word:
 * NFKD makes 18 letters of "ﷺ").
 */
export const toPrefixQuery = (text: string): string | null => {
  const words = searchWords(text).slice(0, MAX_QUERY_WORDS)
  if (words.some((word) => word.length > MAX_WORD)) return null
  return words.map((word) => `${word}:*`).join(" & ")
}

/**
 * What a request's `query` did not search, said in the answer's `warnings`: text with no word (only
 * punctuation, "%" or "___") filters nothing, and words past the first {@link MAX_QUERY_WORDS} are not
 * searched. Both used to pass without a word: `?query=%` answered every offer as if it had matched.
 */
export const queryWarning = (text: string | undefined): string | undefined => {
  if (text === undefined || text.trim() === "") return undefined
  const count = searchWords(text).length
  if (count === 0) return `The query ${JSON.stringify(text.slice(0, 100))} has no letters or digits to search for: it filters nothing`
  return count > MAX_QUERY_WORDS ? `Only the first ${MAX_QUERY_WORDS} words of the query are searched` : undefined
}

/**
 * The key a text filter compares by (`make`, `model`, `fuelTypes`, `transmissions`, `regions` of GET
 * /offers and `region` of GET /import-services), made by this one function for the request's value and
 * for the offer's (at ingest, stored as `make_key`, `model_key`, … and indexed for `make`): case,
 * accents and the punctuation or spacing between words do not count, so what a phone keyboard gives
 * finds what the feed wrote. "Škoda" -> "skoda", "Citroën" -> "citroen", " Mercedes-Benz" ->
 * "mercedes benz", "ŚLĄSKIE" -> "slaskie". The answer keeps the offer's own spelling.
 *
 * It folds the lower-cased text, so two values equal in lower case always have one key. The
 * de-duplication key (Dedup.ts) compares make and model by this key too (since migration 0016), so
 * "Škoda" and "Skoda" offers of one car are one offer, and a make or model filter may be answered from
 * the ingest's `dedup_winner` flags (every offer of a dedup key has the same make and model keys).
 * A change here needs a migration that computes every stored offer's keys again (as 0015 did first:
 * the content hash does not cover them, so an ingest rewrites no unchanged offer for it) and then
 * their dedup keys and winners (0016's `rekeyDedup`).
 */
export const filterKey = (text: string): string => {
  const known = filterKeys.get(text)
  if (known !== undefined) return known
  const key = searchWords(text.toLowerCase()).join(" ")
  if (filterKeys.size >= FILTER_KEYS_REMEMBERED) filterKeys.clear()
  // kept as a copy: a value cut from a longer string (an item of a comma-separated filter) held that
  // whole string alive, up to the 10 KiB of a list filter per entry
  filterKeys.set(ownCopy(text), key)
  return key
}

/**
 * Keys made, by value. The ingest makes five per offer (~2.5 µs of folding and splitting the five,
 * 0.25 s per 100,000 offers, as much as the search document) from a few vocabularies (makes, models,
 * fuels, transmissions, regions): remembered, a key is a lookup. Bounded: emptied when full, and a
 * value (a filter's, from a client, up to 200 characters) kept as a copy, so ~8 MB at most.
 */
const filterKeys = new Map<string, string>()
const FILTER_KEYS_REMEMBERED = 20_000
