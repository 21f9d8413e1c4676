/**
 * The read side: library search by name (pg_trgm plus exact and prefix boosts, plus how well the
 * library's snippets answer the question) and the context for a question within a token budget.
 *
 * Every answer's snippets come from one statement that follows the version's generation pointer
 * itself, so a concurrent re-index (Indexer.ts) is seen entirely or not at all. A version's `state` is
 * as listed (RunLocks.ts `listedState`): `indexing` whose run's process died is `queued`.
 */
import { atDatabaseBoundary } from "@svc/platform"
import {
  type ContextSnippet,
  DEFAULT_CONTEXT_TOKENS,
  IndexState,
  LibraryNotFound,
  type LibrarySearchResult,
  type TeamSettings
} from "@svc/schema"
import { Context, Effect, Layer, Ref, Schema } from "effect"
import { SqlClient, SqlSchema, type Statement } from "effect/sql"
import { listedVersionState, MemoryIndex } from "./MemoryIndex.ts"
import { answerPage, answerRules, toContextSnippet } from "./ranking/Answer.ts"
import { rankedIds } from "./ranking/Bm25.ts"
import { identifierWords } from "./ranking/Identifiers.ts"
import { RowId, Timestamp } from "./Rows.ts"
import { listedState } from "./RunLocks.ts"

/** Results of one library search. */
export const SEARCH_LIMIT = 10
/**
 * A ready library with fewer snippets than this has little to answer with (vitest's npm package ships a
 * badge README): library search says so in its description and ranks it a name band lower, below a
 * namesake that can answer.
 */
export const FEW_SNIPPETS = 2

/** A thin library's description, saying so. */
const describeThin = (description: string, state: string, snippets: number) =>
  state === "ready" && snippets < FEW_SNIPPETS
    ? `${description === "" ? "" : `${description} `}(few snippets: ${snippets} indexed, its source ships little documentation)`
    : description
/** Libraries, best names first, whose snippets the question then ranks (name scores differ by 0.25 or more between bands). */
const SHORTLIST = 50
/** Snippets considered for one page of a context answer (ranked before the budget is applied). */
const CANDIDATES = 400

/**
 * A question as an OR of its words for `to_tsquery` (english: stemmed, stop words dropped), or
 * undefined when it has no word. Words only: the user's punctuation never reaches the query parser.
 */
export const orQuery = (question: string | undefined, ignored: ReadonlyArray<string> = []): string | undefined => {
  const words = questionWords(question, ignored)
  return words.length === 0 ? undefined : words.join(" | ")
}

/**
 * The distinct words of a question (letters and digits), lower-cased, `ignored` left out; at most 32.
 * A version number written apart ("HTTP/2", "utf-8", "ES 2015" is not one) is also taken joined
 * ("http2", "utf8"), as documentation names it in identifiers and headings.
 */
export const questionWords = (question: string | undefined, ignored: ReadonlyArray<string> = []): ReadonlyArray<string> => {
  const skip = new Set(ignored.map((word) => word.toLowerCase()))
  const text = question?.toLowerCase() ?? ""
  const joined = [...text.matchAll(/(?<![\p{L}\p{N}])(?=([\p{L}]+[/.-]\p{N}+)(?![\p{L}\p{N}]))/gu)].map((match) => match[1]!.replace(/[/.-]/, ""))
  const parts = identifierWords(question ?? "").split(" ").filter((part) => part !== "")
  return [...new Set([...(text.match(/[\p{L}\p{N}]+/gu) ?? []), ...joined, ...parts])].filter((word) => !skip.has(word)).slice(0, 32)
}

/** The words of a library's own name, left out of a question within it (see `context`). */
const nameWords = (id: string) => id.split("/").slice(1).flatMap((part) => part.split(/[^\p{L}\p{N}]+/u))

/**
 * The SQL condition on `docs.libraries l` for a caller's team settings (ApiKeys.ts): the library's
 * id is one of the listed ids or starts with one of the `*` prefixes, and its source kind is one of
 * the allowed ones. Empty lists (and no settings) restrict nothing.
 */
export const accessCondition = (sql: SqlClient.SqlClient, access: TeamSettings | undefined): Statement.Fragment => {
  const conditions: Array<Statement.Fragment> = []
  if (access !== undefined && access.libraries.length > 0) {
    const ids = access.libraries.filter((entry) => !entry.endsWith("*"))
    const prefixes = access.libraries.filter((entry) => entry.endsWith("*"))
      // `_` and `%` in an id are literal characters, not LIKE wildcards
      .map((entry) => entry.slice(0, -1).replace(/[\\%_]/g, "\\$&") + "%")
    conditions.push(sql.or([
      ...(ids.length > 0 ? [sql`l.id IN ${sql.in(ids)}`] : []),
      ...prefixes.map((pattern) => sql`l.id LIKE ${pattern}`)
    ]))
  }
  if (access !== undefined && access.sources.length > 0) {
    conditions.push(sql`l.source_kind IN ${sql.in(access.sources)}`)
  }
  return conditions.length === 0 ? sql`true` : sql.and(conditions)
}

/** What {@link accessCondition} says, for one library in memory (`Search.layerMemory`). */
const allows = (access: TeamSettings | undefined, library: { readonly id: string; readonly kind: string }): boolean =>
  (access === undefined || access.libraries.length === 0 ||
    access.libraries.some((entry) => entry.endsWith("*") ? library.id.startsWith(entry.slice(0, -1)) : library.id === entry)) &&
  (access === undefined || access.sources.length === 0 || access.sources.some((kind) => kind === library.kind))

export type ContextAnswer =
  | {
    readonly _tag: "Found"
    /** `/owner/repo/version`. */
    readonly libraryId: string
    readonly version: string
    readonly snippets: ReadonlyArray<ContextSnippet>
    /** The library's rules for agents (`svc.json`) that page 1 shows; none on later pages. */
    readonly rules: ReadonlyArray<string>
    /** The snippets' tokens and the rules'. */
    readonly totalTokens: number
  }
  | { readonly _tag: "Indexing"; readonly libraryId: string; readonly version: string; readonly state: IndexState }

/** `/owner/repo` or `/owner/repo/version` into its parts (the id is validated by the API schema). */
export const parseLibraryId = (libraryId: string) => {
  const [, owner, repo, version] = libraryId.split("/")
  return { id: `/${owner}/${repo}`, version }
}

const SnippetRow = Schema.Struct({
  kind: Schema.Literals(["code", "prose"]),
  title: Schema.String,
  heading_path: Schema.Array(Schema.String),
  description: Schema.String,
  language: Schema.NullOr(Schema.String),
  body: Schema.String,
  source_path: Schema.String,
  source_url: Schema.NullOr(Schema.String),
  tokens: Schema.Number,
  ordinal: Schema.Number,
  score: Schema.optional(Schema.Number)
})

/** A library found by name, with its default version's figures (null: the version is missing). */
const LibraryRow = Schema.Struct({
  id: Schema.String,
  title: Schema.String,
  description: Schema.String,
  trust_score: Schema.Number,
  state: Schema.NullOr(IndexState),
  snippet_count: Schema.NullOr(Schema.Number),
  token_count: Schema.NullOr(Schema.Number),
  last_update: Schema.NullOr(Timestamp),
  versions: Schema.NullOr(Schema.Array(Schema.String))
})

/** The library a context question is about, and the version asked (null: no such version). */
const byId = (a: { readonly id: string }, b: { readonly id: string }) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0

const TargetRow = Schema.Struct({
  library_id: Schema.String,
  default_version: Schema.String,
  version: Schema.NullOr(Schema.String),
  state: Schema.NullOr(IndexState),
  generation_id: Schema.NullOr(RowId),
  versions: Schema.NullOr(Schema.Array(Schema.String)),
  rules: Schema.Array(Schema.String)
})
const decodeTarget = Schema.decodeUnknownEffect(TargetRow)
const decodeSnippets = Schema.decodeUnknownEffect(Schema.Array(SnippetRow))

export class Search extends Context.Service<Search, {
  /** `access`: the caller's team settings; libraries outside them are not found. */
  readonly libraries: (
    libraryName: string,
    query?: string,
    access?: TeamSettings
  ) => Effect.Effect<ReadonlyArray<LibrarySearchResult>>
  /** A library outside `access` is `LibraryNotFound`, exactly like one that does not exist. */
  readonly context: (options: {
    readonly libraryId: string
    readonly query?: string | undefined
    readonly tokens?: number | undefined
    /** Page of the answer past the budget: 1 (default) to `MAX_CONTEXT_PAGE` (ranking/Answer.ts). */
    readonly page?: number | undefined
    readonly access?: TeamSettings | undefined
  }) => Effect.Effect<ContextAnswer, LibraryNotFound>
}>()("@svc/docs/Search") {
  static readonly layer = Layer.effect(
    Search,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const libraries = Effect.fn("Search.libraries")(function*(libraryName: string, query?: string, access?: TeamSettings) {
        const name = libraryName.trim().toLowerCase()
        const escaped = name.replace(/[\\%_]/g, (c) => `\\${c}`)
        const tsquery = orQuery(query)
        // Name score: trigram similarity (0-1) + 1 for an exact name, 0.5 for a prefix, 0.25 for a
        // substring. Question score (with `query`): ts_rank of the library's topics vector (what its
        // live snippets are about), at most 1.
        //
        // One statement per way of finding names, each simple enough to plan in a fraction of a
        // millisecond: a single statement holding both (a UNION of CTEs) took 1 to 4 ms to plan, more
        // than running it, and its look-alike branch had to be planned for every search.
        const ranked = (matching: Statement.Fragment, rankBy = tsquery) =>
          SqlSchema.findAll({ Request: Schema.Void, Result: LibraryRow, execute: () => sql`
            WITH shortlist AS (
              SELECT l.id, l.title, l.description, l.trust_score, l.default_version,
                greatest(
                  similarity(lower(split_part(l.id, '/', 3)), ${name}), similarity(lower(l.title), ${name}),
                  word_similarity(${name}, lower(l.id || ' ' || l.title))
                ) + CASE
                  WHEN lower(split_part(l.id, '/', 3)) = ${name} OR lower(l.title) = ${name} OR lower(l.id) = ${name} THEN 1
                  WHEN starts_with(lower(split_part(l.id, '/', 3)), ${name}) OR starts_with(lower(l.title), ${name}) THEN 0.5
                  WHEN strpos(lower(l.id || ' ' || l.title), ${name}) > 0 THEN 0.25
                  ELSE 0
                END AS name_score
              FROM docs.libraries l
              WHERE ${matching} AND ${accessCondition(sql, access)}
              -- the question ranks only the best names: asked of every look-alike name (hundreds in a
              -- large index) it ranked each one's snippets, and a search took 200 ms to 500 ms
              ORDER BY name_score DESC, l.trust_score DESC, l.id
              LIMIT ${SHORTLIST}
            )
            SELECT s.id, s.title, s.description, s.trust_score, v.state, v.snippet_count, v.token_count, v.last_update,
              (SELECT array_agg(version ORDER BY created_at) FROM docs.versions WHERE library_id = s.id) AS versions
            FROM shortlist s
            -- LATERAL ... LIMIT 1: one index probe per shortlisted library, also in the generic plan of
            -- the prepared statement, which expects 50 and preferred hashing all versions (10,000)
            LEFT JOIN LATERAL (
              SELECT ${listedState(sql)} AS state, v.snippet_count, v.token_count, v.last_update, v.generation_id FROM docs.versions v
              WHERE v.library_id = s.id AND v.version = s.default_version LIMIT 1
            ) v ON true
            ${
            rankBy === undefined ? sql`` : sql`
            LEFT JOIN LATERAL (
              -- one vector per library: what its docs are about (Indexer, migration 0003)
              -- the question parsed once (a scalar subquery), not once per library of a generic plan
              SELECT ts_rank(g.topics, (SELECT to_tsquery('english', ${rankBy})), 1) AS rank
              FROM docs.generations g WHERE g.id = v.generation_id LIMIT 1
            ) r ON true`
          }
            ORDER BY s.name_score ${rankBy === undefined ? sql`` : sql`+ least(coalesce(r.rank, 0), 1)`}
                       - CASE WHEN v.state = 'ready' AND v.snippet_count < ${FEW_SNIPPETS} THEN 1 ELSE 0 END DESC,
                     s.trust_score DESC, s.id
            LIMIT ${SEARCH_LIMIT}` })()
        // Names that contain what was asked come from the trigram index (a LIKE on the indexed
        // expression). Only when there are none are look-alike names searched: similarity has to be
        // computed for every library (74 ms per search at 10,000 libraries), which a typo may need but
        // a name never does.
        //
        // The pattern is a scalar subquery, which the planner cannot see into: a plan made for the
        // pattern (1 matching library estimated) looked cheaper than the prepared statement's generic
        // plan (50), so Postgres planned the statement at every call. Estimated alike, the generic plan
        // (the same index scan, the pattern as a run-time key) is kept after five calls: 0.72 -> 0.30 ms
        // a call at 10,000 libraries (docs README, "Search planned once").
        let rows = yield* ranked(sql`lower(l.id || ' ' || l.title) LIKE (SELECT ${`%${escaped}%`}::text)`)
        if (rows.length === 0) {
          rows = yield* ranked(sql`(${name} <% lower(l.id || ' ' || l.title) OR lower(l.id || ' ' || l.title) % ${name})`)
        }
        // No name comes near: the libraries whose documentation is about it (every word of the name in
        // the topics of their default version: its snippets' titles, headings and descriptions), so a
        // name an agent knows a library by but its id does not spell ("mcp" for the MCP SDK) still
        // finds it. Ranked by how much their docs are about the question, else the name; the topics'
        // index (migration 0007) finds them without reading every library's vector.
        const about = orQuery(name)
        if (rows.length === 0 && about !== undefined) {
          rows = yield* ranked(
            sql`l.id IN (
              SELECT v.library_id FROM docs.generations g
              JOIN docs.versions v ON v.generation_id = g.id
              JOIN docs.libraries d ON d.id = v.library_id AND d.default_version = v.version
              WHERE g.topics @@ (SELECT plainto_tsquery('english', ${name}))
            )`,
            tsquery ?? about
          )
        }
        return rows.map((row): LibrarySearchResult => ({
          id: row.id,
          title: row.title,
          description: describeThin(row.description, row.state ?? "queued", row.snippet_count ?? 0),
          totalSnippets: row.snippet_count ?? 0,
          totalTokens: row.token_count ?? 0,
          trustScore: row.trust_score,
          versions: row.versions ?? [],
          state: row.state ?? "queued",
          lastUpdateDate: row.last_update?.toISOString() ?? null
        }))
      })

      const context = Effect.fn("Search.context")(function*(options: {
        readonly libraryId: string
        readonly query?: string | undefined
        readonly tokens?: number | undefined
        readonly page?: number | undefined
        readonly access?: TeamSettings | undefined
      }) {
        const { id, version: asked } = parseLibraryId(options.libraryId)
        // Within a library its own name says nothing ("effect" is in every snippet of effect's docs):
        // left in, it ranks whatever repeats the name most over what answers the question.
        const tsquery = orQuery(options.query, nameWords(id)) ?? orQuery(options.query)
        const words = questionWords(options.query, nameWords(id))
        const terms = words.length > 0 ? words : questionWords(options.query)
        const page = options.page ?? 1
        const columns = sql`s.kind, s.title, s.heading_path, s.description, s.language, s.body, s.source_path, s.source_url, s.tokens, s.ordinal`
        // The library and the version asked (its default when none is), within the caller's access. An id
        // in another case finds the library too (`/Effect-TS/effect`, as its repository's links write it,
        // is `/effect-ts/effect`); an exact match wins where both exist.
        const target = sql`
          SELECT l.id AS library_id, l.default_version, v.version, ${listedState(sql)} AS state, v.generation_id, l.rules,
            (SELECT array_agg(version ORDER BY created_at) FROM docs.versions WHERE library_id = l.id) AS versions
          FROM docs.libraries l
          LEFT JOIN docs.versions v ON v.library_id = l.id AND v.version = coalesce(${asked ?? null}, l.default_version)
          WHERE l.id IN (${id}, ${id.toLowerCase()}) AND ${accessCondition(sql, options.access)}
          ORDER BY l.id = ${id} DESC
          LIMIT 1`
        // With a question, the target and the version's best snippets come in one statement (one row
        // per snippet, the target's columns on each; one row with no snippet when none matches; none
        // when there is no such library): a second round trip cost 8-15 % of the requests per second
        // at 16 clients. The snippets are ranked by ranking/Bm25.ts (BM25 with field weights from the
        // version's own statistics), joined through the version's generation pointer (module comment).
        //
        // The version's snippets are read through the generation index and only then matched against
        // the question (OFFSET 0 keeps the planner from merging the two): offered the full-text index
        // over every library's snippets, it combined both indexes after a bulk load (stale
        // statistics) and read 100,000 index entries for a common word: 29 ms instead of 0.3 ms,
        // p99 0.9 s at 16 clients. A library's own snippets are few enough to match one by one.
        const rankedWithTarget = (tsquery: string) =>
          sql<Record<string, unknown>>`
          WITH target AS MATERIALIZED (${target})
          SELECT t.library_id, t.default_version, t.version, t.state, t.generation_id, t.versions, t.rules, a.*
          FROM target t LEFT JOIN (
            SELECT ${columns}, r.score, r.id AS ranked_id
            FROM (${
          rankedIds(sql, {
            libraryId: sql`(SELECT library_id FROM target)`,
            version: sql`(SELECT version FROM target)`,
            words: terms.join(" "),
            tsquery,
            limit: CANDIDATES * page
          })
        }) r
            JOIN docs.snippets s ON s.id = r.id
          ) a ON true
          ORDER BY a.score DESC, a.ranked_id`
        const rows = tsquery === undefined ? yield* sql<Record<string, unknown>>`${target}` : yield* rankedWithTarget(tsquery)
        if (rows.length === 0) return yield* new LibraryNotFound({ libraryId: options.libraryId })
        const library = yield* decodeTarget(rows[0])
        const libraryId = library.library_id
        if (library.version === null) {
          return yield* new LibraryNotFound({
            libraryId: options.libraryId,
            message: `Library ${libraryId} has no version ${asked ?? library.default_version}; indexed versions: ${(library.versions ?? []).join(", ") || "none"}`
          })
        }
        const version = library.version
        if (library.generation_id === null) {
          return { _tag: "Indexing", libraryId: `${libraryId}/${version}`, version, state: library.state ?? "queued" } as const
        }
        const budget = options.tokens ?? DEFAULT_CONTEXT_TOKENS
        // Without a question, or when no snippet matches, the version's snippets in document order.
        const inOrder = SqlSchema.findAll({ Request: Schema.Void, Result: SnippetRow, execute: () => sql`
          SELECT ${columns} FROM docs.versions v
          JOIN docs.snippets s ON s.generation_id = v.generation_id
          WHERE v.library_id = ${libraryId} AND v.version = ${version}
          ORDER BY s.ordinal
          LIMIT ${CANDIDATES * page}` })
        const ranked = yield* decodeSnippets(rows.filter((row) => row.kind !== null && row.kind !== undefined))
        const snippets = ranked.length > 0 ? ranked : yield* inOrder()
        // page 1's rules take their room on every page's count, so that page n starts where n - 1 ended
        const rules = answerRules(`${libraryId}/${version}`, library.rules, budget)
        const { picked, used } = answerPage(
          snippets.map(({ source_url, ...row }) => ({
            ...row,
            headingPath: row.heading_path,
            sourcePath: row.source_path,
            ...(source_url === null ? {} : { sourceUrl: source_url })
          })),
          budget,
          page,
          rules.tokens,
          options.query
        )
        return {
          _tag: "Found",
          libraryId: `${libraryId}/${version}`,
          version,
          totalTokens: used + (page === 1 ? rules.tokens : 0),
          rules: page === 1 ? rules.rules : [],
          snippets: picked.map(toContextSnippet)
        } as const
      })

      return Search.of({
        libraries: (libraryName, query, access) => atDatabaseBoundary(libraries(libraryName, query, access)),
        context: (options) => atDatabaseBoundary(context(options))
      })
    })
  )

  /**
   * In memory (tests only), over the index `IndexStore.layerMemory` writes (one build shares it).
   * Same answers as {@link layer} where the contract suite (test/contracts/Search.ts) says they must
   * agree; the ranking is simpler and need not equal Postgres's:
   * - libraries: those whose `id + " " + title` contains the name (no look-alike names); score 1 for
   *   an exact name, 0.5 for a prefix, 0.25 otherwise, plus (with a question) the share of its words
   *   found in the live snippets' titles, headings and descriptions; ties by trust, then id; when no
   *   name matches, those whose live snippets' titles, headings and descriptions hold every word of
   *   the name, ranked by the question's share (or the name's);
   * - context: a snippet's score is the number of the question's words (its library's name left out)
   *   its title, heading path, description or body contains (a substring: "switch" finds
   *   "switching"), doubled for code; best first, then document order; no word found: the
   *   version's snippets in document order.
   */
  static readonly layerMemory = Layer.effect(
    Search,
    Effect.gen(function*() {
      const index = yield* MemoryIndex

      const libraries = Effect.fnUntraced(function*(libraryName: string, query?: string, access?: TeamSettings) {
        const state = yield* Ref.get(index)
        const name = libraryName.trim().toLowerCase()
        const words = questionWords(query)
        const nameWordsAsked = questionWords(name)
        const candidates = [...state.libraries.values()].filter((library) => allows(access, library)).map((library) => {
          const versions = state.versions.filter((v) => v.libraryId === library.id)
          const current = versions.find((v) => v.version === library.defaultVersion)
          const topics = (current?.live ?? []).map((s) => `${s.title} ${s.headingPath.join(" ")} ${s.description}`.toLowerCase()).join(" ")
          return { library, versions, current, topics }
        })
        const share = (asked: ReadonlyArray<string>, topics: string) =>
          asked.length === 0 ? 0 : asked.filter((word) => topics.includes(word)).length / asked.length
        const score = (candidate: typeof candidates[number], nameScore: number, asked = words) => {
          const thin = candidate.current?.state === "ready" && candidate.current.snippetCount < FEW_SNIPPETS ? 1 : 0
          return { ...candidate, score: nameScore + share(asked, candidate.topics) - thin }
        }
        const byName = candidates.flatMap((candidate) => {
          const { library } = candidate
          const repo = library.id.split("/")[2]!.toLowerCase()
          const title = library.title.toLowerCase()
          if (!`${library.id} ${library.title}`.toLowerCase().includes(name)) return []
          return [score(candidate, repo === name || title === name || library.id.toLowerCase() === name
            ? 1
            : repo.startsWith(name) || title.startsWith(name) ? 0.5 : 0.25)]
        })
        // no name matches: the libraries whose docs are about it (as in layer)
        const scored = byName.length > 0 || nameWordsAsked.length === 0
          ? byName
          : candidates.filter((candidate) => candidate.current?.live != null && share(nameWordsAsked, candidate.topics) === 1)
            .map((candidate) => score(candidate, 0, words.length > 0 ? words : nameWordsAsked))
        scored.sort((a, b) => b.score - a.score || b.library.trustScore - a.library.trustScore || byId(a.library, b.library))
        return scored.slice(0, SEARCH_LIMIT).map(({ current, library, versions }): LibrarySearchResult => ({
          id: library.id,
          title: library.title,
          description: describeThin(library.description, current?.state ?? "queued", current?.snippetCount ?? 0),
          totalSnippets: current?.snippetCount ?? 0,
          totalTokens: current?.tokenCount ?? 0,
          trustScore: library.trustScore,
          versions: versions.map((v) => v.version),
          state: current === undefined ? "queued" : listedVersionState(current),
          lastUpdateDate: current?.lastUpdate?.toISOString() ?? null
        }))
      })

      const context = Effect.fnUntraced(function*(options: {
        readonly libraryId: string
        readonly query?: string | undefined
        readonly tokens?: number | undefined
        readonly page?: number | undefined
        readonly access?: TeamSettings | undefined
      }) {
        const state = yield* Ref.get(index)
        const { id: askedId, version: asked } = parseLibraryId(options.libraryId)
        // an id in another case finds the library too; an exact match wins (as in layer: among those the caller may see)
        const library = [askedId, askedId.toLowerCase()]
          .map((candidate) => state.libraries.get(candidate))
          .find((candidate) => candidate !== undefined && allows(options.access, candidate))
        if (library === undefined) {
          return yield* new LibraryNotFound({ libraryId: options.libraryId })
        }
        const id = library.id
        const versions = state.versions.filter((v) => v.libraryId === id)
        const found = versions.find((v) => v.version === (asked ?? library.defaultVersion))
        if (found === undefined) {
          return yield* new LibraryNotFound({
            libraryId: options.libraryId,
            message: `Library ${id} has no version ${asked ?? library.defaultVersion}; indexed versions: ${versions.map((v) => v.version).join(", ") || "none"}`
          })
        }
        if (found.live === null) {
          return { _tag: "Indexing", libraryId: `${id}/${found.version}`, version: found.version, state: listedVersionState(found) } as const
        }
        const withoutName = questionWords(options.query, nameWords(id))
        const words = withoutName.length > 0 ? withoutName : questionWords(options.query)
        const ranked = found.live
          .map((snippet, ordinal) => ({ ...snippet, ordinal }))
          .map((snippet) => {
            const text = `${snippet.title} ${snippet.headingPath.join(" ")} ${snippet.description} ${snippet.body}`.toLowerCase()
            const matches = words.filter((word) => text.includes(word)).length
            return { snippet, ordinal: snippet.ordinal, score: matches * (snippet.kind === "code" ? 2 : 1) }
          })
          .filter((entry) => entry.score > 0)
          .sort((a, b) => b.score - a.score || a.ordinal - b.ordinal)
          .map((entry) => entry.snippet)
        const page = options.page ?? 1
        const candidates = (ranked.length > 0 ? ranked : found.live.map((snippet, ordinal) => ({ ...snippet, ordinal })))
          .slice(0, CANDIDATES * page)
        const budget = options.tokens ?? DEFAULT_CONTEXT_TOKENS
        const rules = answerRules(`${id}/${found.version}`, library.rules ?? [], budget)
        const { picked, used } = answerPage(candidates, budget, page, rules.tokens, options.query)
        return {
          _tag: "Found",
          libraryId: `${id}/${found.version}`,
          version: found.version,
          totalTokens: used + (page === 1 ? rules.tokens : 0),
          rules: page === 1 ? rules.rules : [],
          snippets: picked.map(toContextSnippet)
        } as const
      })

      return Search.of({ libraries, context })
    })
  ).pipe(Layer.provide(MemoryIndex.layer))
}
