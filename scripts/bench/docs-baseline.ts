/**
 * A plain full-text baseline beside svc's ranking in the held-out evaluation (issue 19: the bar is to
 * beat docs-mcp-server, "full-text only", on the same files and questions). The peer itself cannot run
 * here (the registry this machine reaches answers 404 for `@arabold/docs-mcp-server`), so its full-text
 * ranking is **emulated** over the snippets svc indexed, as its source describes it
 * (`src/store/DocumentStore.ts`, version 2.4.4):
 *
 * - SQLite FTS5 with the `porter unicode61` tokenizer (stemmed, stop words kept) over four columns:
 *   content, title, url, path;
 * - `bm25(documents_fts, 10, 1, 5, 1)`: content 10, title 1, url 5, path 1;
 * - the question as its whole phrase OR each of its space-separated words, each quoted.
 *
 * Mapped onto a snippet as ranking/PlainView.ts (`viewColumns`) maps a section: content = its heading,
 * description and body; title = its file's title (the first heading); url = its file's path; path = its
 * heading path. Not emulated: the peer's own chunking
 * and its reassembly of neighbouring chunks into pages. The ranked snippets become entries as svc's
 * answer makes them (one per file and heading path, first occurrence), so both are scored the same way.
 */
import { DatabaseSync } from "node:sqlite"
import { COLUMN_WEIGHTS, viewColumns } from "../../packages/docs/src/ranking/PlainView.ts"

export interface BaselineSnippet {
  readonly title: string
  readonly headingPath: ReadonlyArray<string>
  readonly description: string
  readonly body: string
  readonly sourcePath: string
}


/** The peer's FTS5 query: the whole question as a phrase, OR each word (quotes dropped, as it escapes them). */
export const ftsQuery = (question: string): string => {
  const words = question.split(" ").map((word) => word.replaceAll("\"", "")).filter((word) => word !== "")
  const quoted = words.map((word) => `"${word}"`)
  return quoted.length <= 1 ? (quoted[0] ?? "\"\"") : `"${words.join(" ")}" OR ${quoted.join(" OR ")}`
}

/** How many snippets a question reads before they become entries (the peer's overfetch is similar). */
const CANDIDATES = 400

/** An in-memory FTS5 index of one library's snippets; `rank(question, entries)` its first `entries` entries. */
export const makeBaseline = (snippets: ReadonlyArray<BaselineSnippet>) => {
  const db = new DatabaseSync(":memory:")
  db.exec(`CREATE VIRTUAL TABLE f USING fts5(content, title, url, path, tokenize = "porter unicode61")`)
  const insert = db.prepare("INSERT INTO f (rowid, content, title, url, path) VALUES (?, ?, ?, ?, ?)")
  snippets.forEach((s, i) => insert.run(i, ...viewColumns(s)))
  const search = db.prepare(
    `SELECT rowid FROM f WHERE f MATCH ? ORDER BY bm25(f, ${COLUMN_WEIGHTS.join(", ")}) LIMIT ${CANDIDATES}`
  )
  return {
    rank: (question: string, entries: number): ReadonlyArray<BaselineSnippet> => {
      const seen = new Set<string>()
      const picked: Array<BaselineSnippet> = []
      for (const row of search.all(ftsQuery(question)) as Array<{ rowid: number }>) {
        const snippet = snippets[row.rowid]!
        const key = `${snippet.sourcePath}\u0000${snippet.headingPath.join("\u0000")}`
        if (seen.has(key)) continue
        seen.add(key)
        picked.push(snippet)
        if (picked.length === entries) break
      }
      return picked
    },
    close: () => db.close()
  }
}
