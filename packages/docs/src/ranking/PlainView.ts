/**
 * A second, plain view of an answer's own sections (issue 19): docs-mcp-server's full-text formula,
 * which ranks files well where ours does not (it keeps stop words: "only", "before", "off", "own" carry
 * many how-to questions; it weighs the file's path), fused with the answer's file order.
 *
 * - **The formula** is SQLite FTS5's `bm25(10, 1, 5, 1)` under the `porter unicode61` tokenizer, as the peer
 *   ranks its chunks (its `DocumentStore.ts`, 2.4.4): columns content (title, description, body), title
 *   (the file's first heading), url (the file's path) and path (the heading path); a phrase's frequency in
 *   a row is its occurrences weighted by column, saturated against the row's length; the question is its
 *   whole phrase OR each of its words.
 * - **Over the answer's sections only**, with their own statistics (document frequency and length among
 *   them): no second index, no second statement. Measured on the evaluation's dev half against the view
 *   over the whole library (SQLite, scripts/bench/docs-baseline.ts), it re-orders the same: the sections the
 *   ranking chose are where both views disagree (docs README, Ranking).
 * - **Fusion** by reciprocal rank: an entry's score is `1 / (k + its rank)` plus {@link VIEW_WEIGHT} times
 *   `1 / (k + its file's rank in the view)`, k {@link FUSION_K}; a file the view does not match keeps only
 *   its own term. Only the order of entries changes: what the answer holds is the ranking's choice.
 * - **Among the ranking's first {@link REORDERED_FILES} files only**: the view decides which of them comes
 *   first, never which files are among them (fused over every file, it moved a file the ranking placed
 *   fifth down past one the view matched on a common word, and cost Hit@5 what it gained in first places).
 */
import { ownCopy } from "@svc/platform/OwnCopy"
import { stemmer } from "stemmer"

/** FTS5's bm25 constants. */
const K1 = 1.2
const B = 0.75
/** docs-mcp-server's column weights: content 10, title 1, url 5, path 1. */
export const COLUMN_WEIGHTS = [10, 1, 5, 1] as const
/** Reciprocal-rank fusion's k and the view's weight beside the ranking's (chosen on the dev half: docs README). */
export const FUSION_K = 5
export const VIEW_WEIGHT = 0.75
/** How many of the answer's first files the view re-orders; the rest keep the ranking's order (module comment). */
export const REORDERED_FILES = 5

/** What the view reads of a section. */
export interface ViewedSection {
  readonly title: string
  readonly headingPath: ReadonlyArray<string>
  readonly description: string
  readonly body: string
  readonly sourcePath: string
}

/**
 * Stems by word, kept across requests: documentation repeats its words, and stemming each of an answer's
 * ~5,000 words again was most of the view's cost. Emptied when it grows past {@link STEM_CACHE_SIZE}.
 * Bounded in bytes too: a word longer than {@link STEM_CACHED_CHARS} (no English word is; a question may
 * be one 2,000-character "word") is stemmed each time, and a kept word is a copy, since the word as
 * matched is a cut of its whole text and kept that text alive (a 2,000-character question per entry).
 */
const stems = new Map<string, string>()
const STEM_CACHE_SIZE = 100_000
const STEM_CACHED_CHARS = 40
const stem = (word: string): string => {
  const known = stems.get(word)
  if (known !== undefined) return known
  const stemmed = stemmer(word)
  if (word.length > STEM_CACHED_CHARS) return stemmed
  if (stems.size >= STEM_CACHE_SIZE) stems.clear()
  const kept = ownCopy(stemmed)
  stems.set(ownCopy(word), kept)
  return kept
}

/** How many words the stem cache holds, and the longest (tests). */
export const stemCacheSize = (): { readonly words: number; readonly longest: number } => {
  let longest = 0
  for (const word of stems.keys()) longest = Math.max(longest, word.length)
  return { words: stems.size, longest }
}

/**
 * A text's tokens as `porter unicode61` makes them: runs of letters and digits, case and the accents of
 * Latin letters folded, stemmed. ASCII text (most documentation) skips the Unicode folding, 6x the cost of the rest.
 */
export const viewTokens = (text: string): ReadonlyArray<string> => {
  const words = /^[\x00-\x7f]*$/.test(text)
    ? text.toLowerCase().match(/[a-z0-9]+/g)
    : text.normalize("NFD").replace(/[\u0300-\u036f]/g, "").normalize("NFC").toLowerCase().match(/[\p{L}\p{N}\p{M}\p{Co}]+/gu)
  return (words ?? []).map(stem)
}

/** The question's phrases as the peer queries them: the whole question, then each space-separated word. */
export const viewPhrases = (question: string): ReadonlyArray<ReadonlyArray<string>> => {
  const words = question.split(" ").filter((word) => word !== "")
  const phrases = words.length > 1 ? [words.join(" "), ...words] : words
  return phrases.map(viewTokens).filter((phrase) => phrase.length > 0)
}

/** How often `phrase` occurs in `tokens`, as consecutive tokens. */
const occurrences = (phrase: ReadonlyArray<string>, tokens: ReadonlyArray<string>): number => {
  let count = 0
  for (let i = 0; i + phrase.length <= tokens.length; i++) {
    let at = 0
    while (at < phrase.length && tokens[i + at] === phrase[at]) at++
    if (at === phrase.length) count++
  }
  return count
}

/** A section as the peer's four columns ({@link COLUMN_WEIGHTS}): content, title, url, path. */
export const viewColumns = (section: ViewedSection): ReadonlyArray<string> => [
  `${section.title}\n${section.description}\n${section.body}`,
  section.headingPath[0] ?? section.title,
  section.sourcePath,
  section.headingPath.join(" > ")
]

/** Each section's score in the view (0: it holds none of the question's phrases), in the order given. */
export const viewScores = (question: string, sections: ReadonlyArray<ViewedSection>): ReadonlyArray<number> => {
  const phrases = viewPhrases(question)
  const rows = sections.map((section) => viewColumns(section).map(viewTokens))
  const lengths = rows.map((columns) => columns.reduce((sum, column) => sum + column.length, 0))
  const avgdl = Math.max(lengths.reduce((sum, length) => sum + length, 0) / Math.max(rows.length, 1), 1)
  // per phrase, per row: its occurrences weighted by column
  const frequencies = phrases.map((phrase) =>
    rows.map((columns) => columns.reduce((sum, column, c) => sum + COLUMN_WEIGHTS[c]! * occurrences(phrase, column), 0))
  )
  return rows.map((_, row) =>
    frequencies.reduce((score, inRows) => {
      const f = inRows[row]!
      if (f === 0) return score
      const hits = inRows.filter((g) => g > 0).length
      // FTS5 floors a phrase most rows hold at a tiny positive weight
      const idf = Math.max(Math.log((rows.length - hits + 0.5) / (hits + 0.5)), 1e-6)
      return score + idf * (f * (K1 + 1)) / (f + K1 * (1 - B + B * lengths[row]! / avgdl))
    }, 0)
  )
}

/**
 * `entries` (one per file, best first) with the first {@link REORDERED_FILES} re-ordered by reciprocal-rank
 * fusion with their files' order in the view of `sections` (the sections the answer holds): a file ranks
 * there by its best section.
 */
export const fuseWithView = <E extends { readonly sourcePath: string }>(
  question: string,
  sections: ReadonlyArray<ViewedSection>,
  entries: ReadonlyArray<E>
): ReadonlyArray<E> => {
  if (entries.length < 2) return entries
  const best = new Map<string, number>()
  viewScores(question, sections).forEach((score, i) => {
    const file = sections[i]!.sourcePath
    if (score > 0 && score > (best.get(file) ?? 0)) best.set(file, score)
  })
  const viewRank = new Map(
    [...best.entries()].sort((a, b) => b[1] - a[1]).map(([file], rank) => [file, rank + 1])
  )
  const fused = (entry: E, rank: number) => {
    const inView = viewRank.get(entry.sourcePath)
    return 1 / (FUSION_K + rank + 1) + (inView === undefined ? 0 : VIEW_WEIGHT / (FUSION_K + inView))
  }
  const reordered = entries.slice(0, REORDERED_FILES)
    .map((entry, rank) => ({ entry, score: fused(entry, rank) }))
    .sort((a, b) => b.score - a.score)
    .map(({ entry }) => entry)
  return [...reordered, ...entries.slice(REORDERED_FILES)]
}
