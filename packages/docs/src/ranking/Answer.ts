/**
 * From ranked snippets to the answer an agent reads (pure, shared by both Search layers):
 *
 * - **No duplicate**: the snippets of one section (same file, same heading path) become one entry,
 *   ranked by its best snippet's score plus a share of the others' ({@link EVIDENCE}), its parts
 *   in document order: a section's prose and code blocks, or
 *   the parts of a long section, are read together and never twice. A merged section holds its parts
 *   in the order of their ranks while it stays within {@link SECTION_TOKENS} (its best part always);
 *   what does not fit is left out of the answer rather than repeated in a second entry. A section whose
 *   text the answer already holds (effect's AGENTS.md and CLAUDE.md are one file under two names; on this
 *   page or an earlier one) is left out too: the budget goes to something the answer does not hold yet.
 * - **Budget and pages**: sections are taken in rank order while they fit, then while the room the
 *   answer saves as it is sent lasts ({@link fitBudget}); page 2 is the same over what page 1 left, and so on.
 *   A section larger than a whole page is cut to it where it comes first on a page, so that every
 *   section is on some page however small the budget.
 * - **One entry per file** ({@link byFile}): the sections an answer took from one file are read together
 *   as one entry, best first; a file ranks by its best section's score plus a share of its others'
 *   ({@link EVIDENCE}, as a section does by its snippets). An agent reads what one page says before the
 *   next page (docs-mcp-server likewise answers with pages reassembled from its chunks), and the
 *   answer's first entries are the files that answer (docs README, "Answers by file").
 * - **The peer's view** (PlainView.ts): with the question, the files' order is fused with their order
 *   under docs-mcp-server's own formula over the same sections; what the answer holds does not change.
 */
import type { ContextSection, ContextSnippet } from "@svc/schema"
import { fuseWithView } from "./PlainView.ts"
import { estimateTokens, render, SEPARATOR, type Snippet, tokensOf, tokensOfLength } from "../Splitter.ts"

/** A merged section's size bound, in tokens (one snippet is at most ~1,000: Splitter.MAX_SNIPPET_CHARS). */
export const SECTION_TOKENS = 1500

/** A snippet in rank order: its position in its file's snippets, and its score (none: rank order only). */
export type Ranked = Omit<Snippet, "tokens"> & {
  readonly tokens: number
  readonly ordinal: number
  readonly score?: number | undefined
}
/**
 * A section ranks by its best snippet's score plus this share of each other snippet's in it, and a file's
 * entry by its best section's plus this share of its other sections': a section whose prose and code
 * both answer beats one matching once (eval dev Hit@5 0.839 -> 0.853, MRR 0.724 -> 0.726; 0.3 and more
 * let long sections win on volume), and a file that answers in several places beats one that matches
 * once (eval dev by entry Hit@1 / MRR 0.769 / 0.845 -> 0.797 / 0.861; 0.2 and 0.3 the same, 0.5 lower).
 */
export const EVIDENCE = 0.1

const sectionKey = (snippet: Ranked) => `${snippet.sourcePath}\u0000${snippet.headingPath.join("\u0000")}`

/** A code snippet as Markdown inside a merged section. */
const asMarkdown = (part: Snippet) =>
  part.kind === "prose"
    ? part.body
    : `${part.description === "" ? "" : `${part.description}\n\n`}\`\`\`${part.language ?? ""}\n${part.body}\n\`\`\``

/** A section with its score (its best snippet's plus {@link EVIDENCE} of the others'). */
export type Section = Snippet & { readonly score: number }

/** An answer's entry: one file's sections; `sections` names them when there are more than one. */
export type Entry = Snippet & { readonly sections?: ReadonlyArray<ContextSection> | undefined }

/** One entry from a section's parts (document order): itself for one part, else a prose entry. */
const merge = (parts: ReadonlyArray<Ranked>): Snippet => {
  if (parts.length === 1) {
    const { ordinal: _, score: __, ...snippet } = parts[0]!
    return snippet
  }
  const first = parts[0]!
  const merged = {
    kind: "prose" as const,
    title: first.title.replace(/ \(part \d+\)$/, ""),
    headingPath: first.headingPath,
    description: "",
    language: null,
    body: parts.map(asMarkdown).join("\n\n"),
    sourcePath: first.sourcePath,
    ...(first.sourceUrl === undefined ? {} : { sourceUrl: first.sourceUrl })
  }
  return { ...merged, tokens: tokensOf(merged) }
}

/** Ranked snippets into sections, best first, each file-and-heading pair once. */
export const sections = (ranked: ReadonlyArray<Ranked>): ReadonlyArray<Section> => {
  const groups = new Map<string, { parts: Array<Ranked>; tokens: number; score: number; rank: number }>()
  for (const snippet of ranked) {
    const key = sectionKey(snippet)
    const group = groups.get(key)
    if (group === undefined) groups.set(key, { parts: [snippet], tokens: snippet.tokens, score: snippet.score ?? 0, rank: groups.size })
    else {
      group.score += EVIDENCE * (snippet.score ?? 0)
      if (group.tokens + snippet.tokens <= SECTION_TOKENS) {
        group.parts.push(snippet)
        group.tokens += snippet.tokens
      }
    }
  }
  return [...groups.values()].sort((a, b) => b.score - a.score || a.rank - b.rank)
    .map((group) => ({ ...merge([...group.parts].sort((a, b) => a.ordinal - b.ordinal)), score: group.score }))
}

/**
 * A section's text, whitespace aside: an answer holds each once (the same text under two file names,
 * effect's AGENTS.md and CLAUDE.md). Computed only for a section that fits: over every candidate it cost
 * ~0.35 ms a request (100 sections of a synthetic library), as much as the rest of the answer.
 */
const sameText = (section: Snippet) => section.body.replace(/\s+/g, " ").trim()

const sectionOf = (section: Snippet): ContextSection => ({
  title: section.title,
  headingPath: section.headingPath,
  ...(section.sourceUrl === undefined ? {} : { sourceUrl: section.sourceUrl })
})

/**
 * A next section of a file's entry as the entry's text holds it: under its own title and, when it
 * differs from the first section's (a line anchor: sources/SourceLinks.ts), its `Source:` line.
 */
const nextSection = (part: Snippet, first: Snippet) => {
  const source = part.sourceUrl ?? part.sourcePath
  return `\n\n#### ${part.title}\n\n${source === (first.sourceUrl ?? first.sourcePath) ? "" : `Source: ${source}\n\n`}${asMarkdown(part)}`
}

/**
 * One file's sections (best first) as one entry: the first section as it reads alone, then each next
 * one ({@link nextSection}).
 */
const fileEntry = (sections: ReadonlyArray<Section>): Entry => {
  const [first, ...rest] = sections.map(({ score: _, ...section }) => section)
  if (rest.length === 0) return first!
  const merged = {
    ...first!,
    kind: "prose" as const,
    description: "",
    language: null,
    body: asMarkdown(first!) + rest.map((part) => nextSection(part, first!)).join("")
  }
  return { ...merged, tokens: tokensOf(merged), sections: [first!, ...rest].map(sectionOf) }
}

/** A cut section's whole one: a page that took the cut copy took the section. */
const cutFrom = new WeakMap<Section, Section>()

/**
 * `section` cut to `budget` tokens (at a line, an open code fence closed), saying it was cut and how
 * to ask for it whole; undefined when not even its heading fits. Only for a section larger than a
 * whole page, which would otherwise be on no page at all (below ~1,500 tokens a page: the default
 * 5,000 never cuts).
 */
const cutToBudget = (section: Section, budget: number): Section | undefined => {
  const note = `\n\n(Cut at this page's budget of ${budget} tokens: ask with tokens=${section.tokens} or more for the whole section.)`
  const whole = asMarkdown(section)
  for (let length = Math.floor(whole.length * 0.9); length > 0; length = Math.floor(length * 0.8)) {
    // at the last line break, else the last space, of the second half of the length
    const head = whole.slice(0, length)
    const line = head.lastIndexOf("\n")
    const at = line > length / 2 ? line : head.lastIndexOf(" ")
    let text = (at > length / 2 ? head.slice(0, at) : head).trimEnd()
    if ((text.match(/^```/gm)?.length ?? 0) % 2 === 1) text += "\n```"
    const cut = { ...section, kind: "prose" as const, description: "", language: null, body: text + note }
    const tokens = tokensOf(cut)
    if (tokens <= budget) {
      const fitted = { ...cut, tokens }
      cutFrom.set(fitted, section)
      return fitted
    }
  }
  return undefined
}

/**
 * The sections of an answer within `budget`, in rank order, in two passes:
 * - each at its size apart (`tokens`: a rendered snippet and its separator) while it fits, one too big
 *   skipped for smaller ones after it: the selection the ranking was measured with;
 * - then, as the answer is sent (one entry per file: a next section of a file adds no separator or `###`
 *   heading and often no `Source:` line) it costs less, and the room that leaves takes further sections,
 *   each at what it adds to the answer (eval dev Hit@5 / contains 0.951 / 0.958 -> 0.958 / 0.965, 16.3 ->
 *   18.0 sections an answer; taking sections by that cost from the start moved dev down: 0.944 / 0.951).
 */
export const fitBudget = (
  ranked: ReadonlyArray<Section>,
  budget: number,
  /** The texts the answer holds already (earlier pages'); those taken now are added. */
  seen: Set<string> = new Set()
): ReadonlyArray<Section> => {
  /** Whether the answer holds this text yet; it does from now on. */
  const isNew = (section: Section) => {
    const text = sameText(section)
    if (seen.has(text)) return false
    seen.add(text)
    return true
  }
  const list = [...ranked]
  const apart = new Set<Section>()
  let apartUsed = 0
  list.forEach((section, rank) => {
    if (apartUsed + section.tokens > budget) {
      // larger than a whole page, it would be on none: first on a page that holds nothing yet, it is cut to fit
      const cut = apart.size === 0 && section.tokens > budget ? cutToBudget(section, budget) : undefined
      if (cut === undefined || !isNew(section)) return
      list[rank] = cut
      apart.add(cut)
      apartUsed += cut.tokens
      return
    }
    if (!isNew(section)) return
    apart.add(section)
    apartUsed += section.tokens
  })
  /** Per file in the answer: its first section, that one's rank, and the characters of its entry so far. */
  const files = new Map<string, { readonly first: Section; readonly rank: number; chars: number }>()
  let used = 0
  /**
   * Adds the section of rank `rank` to the answer as sent if it fits (always, for one already chosen);
   * whether it did. One ranked above its file's first would open the entry instead: left out.
   */
  const take = (section: Section, rank: number, chosen: boolean) => {
    const file = files.get(section.sourcePath)
    if (!chosen && file !== undefined && rank < file.rank) return false
    const chars = file === undefined ? (render(section) + SEPARATOR).length : file.chars + nextSection(section, file.first).length
    const cost = file === undefined ? Math.max(section.tokens, tokensOfLength(chars)) : tokensOfLength(chars) - tokensOfLength(file.chars)
    if (!chosen && (used + cost > budget || !isNew(section))) return false
    used += cost
    if (file === undefined) files.set(section.sourcePath, { first: section, rank, chars })
    else file.chars = chars
    return true
  }
  list.forEach((section, rank) => apart.has(section) && take(section, rank, true))
  return list.filter((section, rank) => apart.has(section) || take(section, rank, false))
}

/** The picked sections (best first) as one entry per file, best file first (module comment). */
export const byFile = (picked: ReadonlyArray<Section>): ReadonlyArray<Entry> => {
  const files = new Map<string, { sections: Array<Section>; score: number; rank: number }>()
  for (const section of picked) {
    const file = files.get(section.sourcePath)
    if (file === undefined) files.set(section.sourcePath, { sections: [section], score: section.score, rank: files.size })
    else {
      file.sections.push(section)
      file.score += EVIDENCE * section.score
    }
  }
  return [...files.values()].sort((a, b) => b.score - a.score || a.rank - b.rank).map((file) => fileEntry(file.sections))
}

/**
 * Page `page` (1-based) of the answer within `budget` tokens a page, one entry per file; `reserved`
 * tokens of page 1 hold something else (the library's rules: {@link answerRules}). With the `question`,
 * the entries' order is fused with the plain view of their sections (PlainView.ts).
 */
export const answerPage = (ranked: ReadonlyArray<Ranked>, budget: number, page = 1, reserved = 0, question?: string) => {
  let remaining = sections(ranked)
  const seen = new Set<string>()
  let picked = fitBudget(remaining, budget - reserved, seen)
  for (let n = 1; n < page; n++) {
    const taken = new Set(picked.map((section) => cutFrom.get(section) ?? section))
    remaining = remaining.filter((entry) => !taken.has(entry))
    picked = fitBudget(remaining, budget, seen)
  }
  const entries = question === undefined ? byFile(picked) : fuseWithView(question, picked, byFile(picked))
  return { picked: entries, used: entries.reduce((sum, entry) => sum + entry.tokens, 0) }
}

/** An answer's entry as the API sends it (`content` is the entry's body). */
export const toContextSnippet = (snippet: Entry): ContextSnippet => ({
  kind: snippet.kind,
  title: snippet.title,
  headingPath: snippet.headingPath,
  description: snippet.description,
  language: snippet.language,
  content: snippet.body,
  sourcePath: snippet.sourcePath,
  ...(snippet.sourceUrl === undefined ? {} : { sourceUrl: snippet.sourceUrl }),
  tokens: snippet.tokens,
  ...(snippet.sections === undefined ? {} : { sections: snippet.sections })
})

/**
 * At most this share of page 1's budget goes to the library's rules for agents; the rest, at least,
 * to its documentation.
 */
export const RULES_SHARE = 0.5

/** A library's rules as the text answer shows them, above its first snippet. */
export const renderRules = (libraryId: string, rules: ReadonlyArray<string>): string =>
  `### Rules for ${libraryId}\n\n${rules.map((rule) => `- ${rule}`).join("\n")}`

/**
 * The rules of page 1 (`svc.json`'s `rules`; Context7 likewise answers with a library's rules beside its
 * snippets): in their order while they fit in {@link RULES_SHARE} of the budget, and the tokens they take
 * from it as sent (their block and its separator).
 */
export const answerRules = (libraryId: string, rules: ReadonlyArray<string>, budget: number) => {
  const cost = (kept: ReadonlyArray<string>) => kept.length === 0 ? 0 : estimateTokens(renderRules(libraryId, kept) + SEPARATOR)
  let kept: ReadonlyArray<string> = []
  for (const rule of rules) {
    if (cost([...kept, rule]) > budget * RULES_SHARE) break
    kept = [...kept, rule]
  }
  return { rules: kept, tokens: cost(kept) }
}
