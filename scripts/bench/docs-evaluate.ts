/**
 * The held-out evaluation of `npm run bench:docs` (issue 19): indexes every corpus of docs-eval.ts that is
 * on this machine, asks each labelled question through `GET /api/v2/context` at the default budget, and
 * reports per corpus and per half (dev / test):
 *
 * - Hit@1, Hit@5, MRR: the rank of the answer's first entry (one per file: ranking/Answer.ts) holding a
 *   section of a labelled file (under the labelled heading, when the question names one); a question whose
 *   answer holds none counts 0 (MRR) and a miss;
 * - contains: the answer holds such a section anywhere;
 * - file: the answer holds any snippet of a labelled file (heading not checked; the outside measurement's
 *   "expected file anywhere in the answer");
 * - and all of them by labelled file alone (the heading not checked), the unit of the issue's outside
 *   measurement, whose labels are files: the rank of the first entry holding any snippet of a labelled file.
 *
 * Beside it, when the bench gives the indexed snippets: the same questions ranked by docs-mcp-server's
 * full-text formula, emulated over the same snippets (docs-baseline.ts): as many sections as svc's answer
 * holds, grouped by file the same way;
 * - and both by section, in the order they are read (a file's sections one after the other): the rank of
 *   the first labelled section among all sections read before it.
 *
 * `--misses=dev` prints the dev half's questions not answered first (tuning reads only those: the test
 * half's misses are never printed question by question).
 */
import { Effect, Option } from "effect"
import * as fs from "node:fs"
import type { Indexer } from "@svc/docs"
import { fuseWithView } from "../../packages/docs/src/ranking/PlainView.ts"
import { type BaselineSnippet, makeBaseline } from "./docs-baseline.ts"
import { corpora, type EvalCorpus, type EvalQuestion, questions } from "./docs-eval.ts"
import { fmt } from "./support.ts"

type GetJson = (url: string) => Promise<{ status: number; body: any }>

interface Asked {
  readonly question: EvalQuestion
  /** The context request that answered it (`bench:docs` replays them under load). */
  readonly url?: string
  /** 1-based rank of the first entry holding a matching section; undefined: none in the answer. */
  readonly rank: number | undefined
  /** The same over the answer's sections in reading order. */
  readonly sectionRank: number | undefined
  /** 1-based rank of the first entry holding any snippet of a labelled file, heading not checked (the issue's unit). */
  readonly fileRank: number | undefined
  readonly file: boolean
  readonly first: string
  /** The sections the answer holds and the files they come from (its entries). */
  readonly sections: number
  readonly files: number
  /** The same question ranked by the plain full-text baseline (docs-baseline.ts), as many sections as the answer. */
  readonly baseline?: { readonly rank: number | undefined; readonly sectionRank: number | undefined; readonly fileRank: number | undefined; readonly file: boolean }
}

/** The library ids of a corpus's libraries (npm name or corpus name → id), indexing them. */
const indexCorpus = (indexer: Indexer["Service"], corpus: EvalCorpus, known: ReadonlyMap<string, string>) =>
  Effect.gen(function*() {
    const ids = new Map<string, string>()
    for (const library of corpus.libraries) {
      const already = known.get(library)
      if (already !== undefined) {
        ids.set(library, already)
        continue
      }
      const outcome = yield* (corpus.kind === "npm"
        ? indexer.add(`npm:${library}`)
        : indexer.add(corpus.folder, { id: `/bench/${corpus.name}`, version: "eval" })).pipe(Effect.option)
      if (Option.isSome(outcome)) ids.set(library, outcome.value.libraryId)
    }
    return ids
  })

/** A section (or snippet) of `paths`, under `heading` when one is named. */
const isSection = (paths: ReadonlyArray<string>, heading: string | undefined, section: any) =>
  paths.includes(section.sourcePath) &&
  (heading === undefined ||
    [...section.headingPath, section.title].some((h: string) => h.toLowerCase().includes(heading.toLowerCase())))

const matches = (q: EvalQuestion, snippet: any, heading: boolean) => isSection(q.paths, heading ? q.heading : undefined, snippet)

/** Whether an answer's entry holds a section of `paths` (under `heading`, when one is named). */
export const entryHolds = (entry: any, paths: ReadonlyArray<string>, heading: string | undefined) =>
  sectionsOf(entry).some((section) => isSection(paths, heading, section))

/** An answer's entry as the sections it holds (`sections` when it holds more than one). */
const sectionsOf = (entry: any): ReadonlyArray<any> =>
  (entry.sections ?? [entry]).map((section: any) => ({ ...section, sourcePath: entry.sourcePath }))

/** 1-based rank of the first entry (a list of sections) holding a match; undefined: none. */
const rankOf = (q: EvalQuestion, entries: ReadonlyArray<ReadonlyArray<any>>, heading: boolean) => {
  const index = entries.findIndex((sections) => sections.some((s) => matches(q, s, heading)))
  return index < 0 ? undefined : index + 1
}

/** Sections grouped by file, files in the order of their first section (ranking/Answer.ts also weighs a file's other sections). */
const groupByFile = <A extends { readonly sourcePath: string }>(sections: ReadonlyArray<A>): ReadonlyArray<ReadonlyArray<A>> => {
  const files = new Map<string, Array<A>>()
  for (const section of sections) {
    const file = files.get(section.sourcePath)
    if (file === undefined) files.set(section.sourcePath, [section])
    else file.push(section)
  }
  return [...files.values()]
}

interface Figures {
  readonly n: number
  readonly hit1: number
  readonly hit5: number
  readonly mrr: number
  readonly contains: number
  readonly file: number
}

type Scored = Pick<Asked, "question" | "rank" | "sectionRank" | "fileRank" | "file">
type RankBy = "rank" | "sectionRank" | "fileRank"

/** The figures of `asked` by entry (`rank`), by section in reading order (`sectionRank`) or by labelled file alone (`fileRank`). */
const figures = (asked: ReadonlyArray<Scored>, by: RankBy = "rank"): Figures => {
  const n = asked.length
  const share = (f: (a: Scored) => boolean) => n === 0 ? 0 : asked.filter(f).length / n
  return {
    n,
    hit1: share((a) => a[by] === 1),
    hit5: share((a) => a[by] !== undefined && a[by] <= 5),
    mrr: n === 0 ? 0 : asked.reduce((sum, a) => sum + (a[by] === undefined ? 0 : 1 / a[by]), 0) / n,
    contains: share((a) => a[by] !== undefined),
    file: share((a) => a.file)
  }
}

const row = (label: string, f: Figures) =>
  `  ${label.padEnd(18)} ${String(f.n).padStart(4)}  ${fmt(f.hit1, 3)}  ${fmt(f.hit5, 3)}  ${fmt(f.mrr, 3)}   ${fmt(f.contains, 3)}   ${fmt(f.file, 3)}`

/** Per half (test first), all corpora and then each. */
const printHalves = (asked: ReadonlyArray<Scored>, by: RankBy = "rank") => {
  for (const half of ["test", "dev"] as const) {
    const inHalf = asked.filter((a) => a.question.half === half)
    console.log(row(`${half} (all)`, figures(inHalf, by)))
    for (const corpus of corpora()) {
      const some = inHalf.filter((a) => a.question.corpus === corpus.name)
      if (some.length > 0) console.log(row(`${half} ${corpus.name}`, figures(some, by)))
    }
  }
}

/** The peer's answers (docs-peer.ts) when `BENCH_DOCS_PEER_RESULTS` names its output: question id → files in order, at limits 5 and 10. */
const peerAnswers = () => {
  const file = process.env.BENCH_DOCS_PEER_RESULTS
  if (file === undefined || file === "") return undefined
  const read = JSON.parse(fs.readFileSync(file, "utf8")) as {
    readonly peer: string
    readonly answers: ReadonlyArray<{ readonly id: string; readonly files_limit5: ReadonlyArray<string>; readonly files_limit10: ReadonlyArray<string> }>
  }
  return { peer: read.peer, byId: new Map(read.answers.map((answer) => [answer.id, answer])) }
}

/** The peer's answers scored by labelled file, as svc's `fileRank` is. */
const printPeer = (asked: ReadonlyArray<Asked>) => {
  const peer = peerAnswers()
  if (peer === undefined) return
  const same = asked.filter((a) => peer.byId.has(a.question.id))
  const scored = (limit: "files_limit5" | "files_limit10"): ReadonlyArray<Scored> =>
    same.map((a) => {
      const index = peer.byId.get(a.question.id)![limit].findIndex((file) => a.question.paths.includes(file))
      const rank = index < 0 ? undefined : index + 1
      return { question: a.question, rank, sectionRank: rank, fileRank: rank, file: rank !== undefined }
    })
  const files = (limit: "files_limit5" | "files_limit10") =>
    fmt(same.reduce((sum, a) => sum + peer.byId.get(a.question.id)![limit].length, 0) / Math.max(same.length, 1), 1)
  console.log(`  ${peer.peer} itself (BENCH_DOCS_PEER_RESULTS, docs-peer.ts), the ${same.length} questions it was asked, by labelled file:`)
  console.log(`  svc on the same questions:`)
  printHalves(same, "fileRank")
  console.log(`  the peer at limit 10 (${files("files_limit10")} files an answer; svc's hold 7):`)
  printHalves(scored("files_limit10"))
  console.log(`  the peer at its default limit 5 (${files("files_limit5")} files an answer):`)
  printHalves(scored("files_limit5"))
}

/** Runs the evaluation; `known`: ids of libraries the bench indexed already (npm name → id). */
export const evaluate = (options: {
  readonly indexer: Indexer["Service"]
  readonly base: string
  readonly getJson: GetJson
  readonly known: ReadonlyMap<string, string>
  readonly printMisses: boolean
  /** A library's snippets as indexed, for the baseline beside the ranking (docs-baseline.ts); none: no baseline. */
  readonly snippetsOf?: (libraryId: string) => Effect.Effect<ReadonlyArray<BaselineSnippet>>
}) =>
  Effect.gen(function*() {
    const all = questions()
    const baselines = new Map<string, ReturnType<typeof makeBaseline>>()
    const baselineOf = (libraryId: string) =>
      options.snippetsOf === undefined ? Effect.succeed(undefined) : Effect.suspend(() => {
        const built = baselines.get(libraryId)
        return built !== undefined ? Effect.succeed(built) : Effect.map(options.snippetsOf!(libraryId), (snippets) => {
          const baseline = makeBaseline(snippets)
          baselines.set(libraryId, baseline)
          return baseline
        })
      })
    const asked: Array<Asked> = []
    /** What the plain view (ranking/PlainView.ts) costs an answer, in ms: it runs in the request, after the ranking. */
    const viewMs: Array<number> = []
    const skipped: Array<string> = []
    for (const corpus of corpora()) {
      if (!corpus.present) {
        skipped.push(corpus.name)
        continue
      }
      const ids = yield* indexCorpus(options.indexer, corpus, options.known)
      for (const q of all.filter((q) => q.corpus === corpus.name)) {
        const libraryId = ids.get(q.library)
        if (libraryId === undefined) {
          asked.push({ question: q, rank: undefined, sectionRank: undefined, fileRank: undefined, file: false, first: "(not indexed)", sections: 0, files: 0 })
          continue
        }
        const url = `${options.base}/api/v2/context?type=json&libraryId=${encodeURIComponent(libraryId)}&query=${encodeURIComponent(q.question)}`
        const { body } = yield* Effect.promise(() => options.getJson(url))
        const snippets: ReadonlyArray<any> = body.snippets ?? []
        const entries = snippets.map(sectionsOf)
        const read = entries.flat()
        const started = performance.now()
        fuseWithView(q.question, snippets.map((entry) => ({ ...entry, body: entry.content })), snippets)
        viewMs.push(performance.now() - started)
        const baseline = (yield* baselineOf(libraryId))?.rank(q.question, read.length)
        asked.push({
          ...(baseline === undefined ? {} : {
            baseline: {
              rank: rankOf(q, groupByFile(baseline), true),
              sectionRank: rankOf(q, groupByFile(baseline).flat().map((s) => [s]), true),
              fileRank: rankOf(q, groupByFile(baseline), false),
              file: baseline.some((s) => matches(q, s, false))
            }
          }),
          question: q,
          url,
          rank: rankOf(q, entries, true),
          sectionRank: rankOf(q, read.map((s) => [s]), true),
          fileRank: rankOf(q, entries, false),
          file: read.some((s) => matches(q, s, false)),
          first: snippets[0] === undefined ? "-" : `${snippets[0].sourcePath} # ${snippets[0].title}`,
          sections: read.length,
          files: snippets.length
        })
      }
    }
    console.log(`\nevaluation set (docs-eval.ts, ${asked.length} questions, GET /api/v2/context at the default budget):`)
    if (skipped.length > 0) console.log(`  not on this machine (see corpora/README.md): ${skipped.join(", ")}`)
    console.log(`  ${"".padEnd(18)} ${"n".padStart(4)}  Hit@1  Hit@5  MRR     contains file`)
    printHalves(asked)
    console.log(row("both halves", figures(asked)))
    const mean = (f: (a: Asked) => number) => fmt(asked.reduce((sum, a) => sum + f(a), 0) / Math.max(asked.length, 1), 1)
    console.log(`  an answer holds ${mean((a) => a.sections)} sections from ${mean((a) => a.files)} files on average (both halves)`)
    const sorted = [...viewMs].sort((a, b) => a - b)
    console.log(`  the plain view over an answer's text (ranking/PlainView.ts, in the request): ${fmt(sorted.reduce((sum, ms) => sum + ms, 0) / Math.max(sorted.length, 1), 2)} ms ` +
      `on average, p99 ${fmt(sorted[Math.floor(sorted.length * 0.99)] ?? 0, 2)} ms (the whole request: "context, real corpora" below)`)
    console.log(`  by section, in the order an agent reads them (the rank of the labelled section among all sections):`)
    printHalves(asked, "sectionRank")
    console.log(`  by labelled file alone, heading not checked (the unit of the issue's outside measurement):`)
    printHalves(asked, "fileRank")
    const withBaseline = asked.flatMap((a) => a.baseline === undefined ? [] : [{ ...a, ...a.baseline }])
    if (withBaseline.length > 0) {
      console.log(`  the same questions ranked by docs-mcp-server's full-text formula, emulated over the same snippets ` +
        `(docs-baseline.ts: FTS5 bm25 10/1/5/1, the phrase OR each word), as many sections as svc's answer, by file:`)
      printHalves(withBaseline)
      console.log(`  the same, by section in reading order:`)
      printHalves(withBaseline, "sectionRank")
      console.log(`  the same, by labelled file alone:`)
      printHalves(withBaseline, "fileRank")
    }
    for (const baseline of baselines.values()) baseline.close()
    printPeer(asked)
    const testHalf = asked.filter((a) => a.question.half === "test")
    const verdict = (label: string, test: Figures) =>
      console.log(`  targets on the test half, ${label}: Hit@5 >= 0.92 ${test.hit5 >= 0.92 ? "ok" : "MISSED"}, ` +
        `MRR >= 0.80 ${test.mrr >= 0.8 ? "ok" : "MISSED"}, contains >= 0.97 ${test.contains >= 0.97 ? "ok" : "MISSED"}`)
    verdict("by labelled file (the issue's unit)", figures(testHalf, "fileRank"))
    verdict("by labelled file and heading (stricter)", figures(testHalf))
    if (options.printMisses) {
      console.log(`  dev half, not first:`)
      for (const a of asked.filter((a) => a.question.half === "dev" && a.rank !== 1)) {
        console.log(`    ${a.rank === undefined ? "miss" : `rank ${a.rank}`} (file ${a.fileRank ?? "miss"}) ${a.question.id} "${a.question.question}" -> ` +
          `${a.question.paths[0]}${a.question.heading ? ` # ${a.question.heading}` : ""} (first: ${a.first})`)
      }
    }
    return asked
  })
