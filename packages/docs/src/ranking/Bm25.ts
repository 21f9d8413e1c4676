/**
 * The lexical ranking of one version's snippets for a question (`Search.context`), in one statement:
 * BM25 with field weights, from the corpus's own statistics (issue 19, "Retrieval that generalises").
 *
 * - The question's terms are its words as the english configuration stems them (stop words gone), its
 *   library's own name left out (Search.ts).
 * - Only the version's snippets that hold one of the terms are scored (read through the generation
 *   index, then matched: see the fence in Search.ts); for each, its vector cut to the question's terms
 *   is unnested into every term's positions and their weights: A the title, B the heading path, C the
 *   description and body (migration 0001), D identifiers split at camelCase, snake_case and dots
 *   (migration 0004).
 * - The statement holds no join whose cost depends on an estimate: after five executions Postgres may
 *   run a prepared statement's generic plan, which estimated the matched snippets at two rows and
 *   joined them to their term hits by nested loop (85 ms instead of 11 for a common-word question over
 *   fastify's 1,091 snippets; docs README, "A plan that stays fast once Postgres caches it").
 * - Term frequency is field-weighted ({@link FIELD_WEIGHTS}); inverse document frequency counts the
 *   snippets of this version holding the term (`ln(1 + (N - df + 0.5) / (df + 0.5))`), so a word every
 *   snippet has ("run", "tests") weighs almost nothing and a rare one (`setTimeout`) decides; the
 *   snippet's length (its tokens) against the version's average normalises the frequency (k1, b).
 * - Then, per snippet: a code snippet ranks {@link CODE_BOOST} higher (how-to questions want an example);
 *   a continuation ("… (part n)") {@link PART_PENALTY} lower (its heading context is the first part's);
 *   and a share of the question's terms found (coverage) multiplies the sum, so one rare word alone
 *   does not beat a snippet that holds most of the question.
 * - A question term in a heading (title, heading path, their identifiers) adds {@link HEADING_BONUS} times
 *   its inverse document frequency besides its saturated frequency: the heading names what a section is about.
 */
import type { SqlClient, Statement } from "effect/sql"

/** BM25 saturation and length normalisation (the usual values). */
export const K1 = 1.2
export const B = 0.75
/** How much one occurrence of a term counts, by field. */
export const FIELD_WEIGHTS = { title: 4, heading: 2, body: 1, identifier: 2 } as const
export const CODE_BOOST = 1.3
export const PART_PENALTY = 0.85
/** The score is multiplied by `coverage ^ COVERAGE_POWER` (coverage: the question's terms found / all). */
export const COVERAGE_POWER = 1
/**
 * A question term in the title, the heading path or their identifiers adds this many times its inverse
 * document frequency, outside the saturation of term frequency: in reference documentation the heading
 * names what the section answers (`followRedirect`, `onResponse`), and a field weight alone counted a
 * heading word barely twice one body mention (eval dev Hit@1 / Hit@5 / MRR 0.643 / 0.853 / 0.727 -> 0.664 /
 * 0.860 / 0.747; bonus 2 or 4 within +-0.007, title words 2 or unbounded lower).
 * Scaled down for titles longer than {@link NAME_WORDS} words: a sentence as a heading (a migration
 * guide's "getResponseTime() has been removed, use elapsedTime instead") holds many words without naming one thing.
 */
export const HEADING_BONUS = 3
export const NAME_WORDS = 6

/**
 * The ids and scores of the best `limit` snippets of the version for `words` (the question's words,
 * joined by spaces) and `tsquery` (the same words OR-ed, for the match). The caller joins the rows.
 */
export const rankedIds = (
  sql: SqlClient.SqlClient,
  options: {
    /** The library's id, or a fragment that yields it (Search.ts: the library its own statement resolved). */
    readonly libraryId: string | Statement.Fragment
    /** The version's name, or a fragment that yields it (Search.ts: the version its own statement resolved). */
    readonly version: string | Statement.Fragment
    readonly words: string
    readonly tsquery: string
    readonly limit: number
  }
): Statement.Fragment => {
  /** A constant of the formula, inlined (a parameter would be typed by its first use). */
  const n = (value: number) => sql.literal(`${value}::float8`)
  return sql`
  WITH v AS (
    SELECT v.generation_id, greatest(v.snippet_count, 1)::float8 AS n,
      greatest(v.token_count::float8 / greatest(v.snippet_count, 1), 1) AS avgdl
    FROM docs.versions v WHERE v.library_id = ${options.libraryId} AND v.version = ${options.version}
  ),
  q AS (
    SELECT tsvector_to_array(to_tsvector('english', ${options.words})) AS terms,
      to_tsquery('english', ${options.tsquery}) AS match
  ),
  m AS MATERIALIZED (
    SELECT s.id, s.tokens, s.kind, s.title, s.search
    FROM (
      SELECT s.id, s.tokens, s.kind, s.title, s.search FROM v JOIN docs.snippets s ON s.generation_id = v.generation_id
      -- the version's snippets first, then the match (Search.ts)
      OFFSET 0
    ) s WHERE s.search @@ (SELECT match FROM q)
  ),
  hits AS (
    SELECT m.id, m.tokens, m.kind, m.title, u.lexeme,
      ${n(FIELD_WEIGHTS.title)} * cardinality(array_positions(u.weights, 'A'))
        + ${n(FIELD_WEIGHTS.heading)} * cardinality(array_positions(u.weights, 'B'))
        + ${n(FIELD_WEIGHTS.body)} * cardinality(array_positions(u.weights, 'C'))
        + ${n(FIELD_WEIGHTS.identifier)} * cardinality(array_positions(u.weights, 'D')) AS tf,
      (u.weights && ARRAY['A', 'B', 'D']) AS in_heading,
      -- the term's document frequency in the version: the matched snippets holding it
      count(*) OVER (PARTITION BY u.lexeme)::float8 AS df
    -- the vector cut to the question's terms (less every other lexeme: ts_delete twice) is unnested,
    -- not all of a snippet's ~40 lexemes, to keep its terms (17 -> 11 ms for 770 matched snippets)
    FROM m, q, unnest(ts_delete(m.search, tsvector_to_array(ts_delete(m.search, q.terms)))) u
  )
  SELECT h.id,
    sum(ln(1 + (v.n - h.df + 0.5) / (h.df + 0.5)) * ((h.tf * ${n(K1 + 1)}) / (h.tf + ${n(K1)} * (1 - ${n(B)} + ${n(B)} * h.tokens / v.avgdl))
      -- the heading bonus, less for a title that is a sentence; its words counted only for a term in a
      -- heading (a regular expression over every matched snippet's title cost 2 of fastify's 12 ms)
      + CASE WHEN h.in_heading
          THEN ${n(HEADING_BONUS)} * least(1, ${n(NAME_WORDS)} / cardinality(regexp_split_to_array(trim(h.title), '[[:space:]]+')))
          ELSE 0 END))
      * power(count(*)::float8 / greatest(cardinality((SELECT terms FROM q)), 1), ${n(COVERAGE_POWER)})
      * (CASE WHEN h.kind = 'code' THEN ${n(CODE_BOOST)} ELSE 1 END)
      * (CASE WHEN h.title LIKE '% (part %)' THEN ${n(PART_PENALTY)} ELSE 1 END) AS score
  FROM hits h CROSS JOIN v
  GROUP BY h.id, h.kind, h.title
  ORDER BY score DESC, h.id
  LIMIT ${options.limit}`
}
