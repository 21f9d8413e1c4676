/**
 * The shape every source of documentation has (folder, npm package, git repository): it recognises the
 * sources it handles and resolves one into a folder to read plus the library's metadata (id, title,
 * description, version). Reading the folder's documents is the same for all of them (Documents.ts).
 *
 * Also here: the failure every source and the reading share (`IndexFailed` and its categories), and
 * what a `package.json` tells about a library (folder and npm sources read it; git for the title).
 */
import { Settings } from "@svc/platform"
import { LibraryIdPattern, MAX_ID_LENGTH, type SourceKind } from "@svc/schema"
import { Effect, FileSystem, Option, Path, Schema, type Scope } from "effect"
import type { Snippet } from "../Splitter.ts"

export const ErrorCategory = Schema.Literals([
  "invalid_source",
  "unsupported_source",
  "source_not_found",
  "no_documents",
  "read_failed",
  "clone_failed",
  "source_not_allowed"
])
export type ErrorCategory = typeof ErrorCategory.Type

/** Indexing could not run or produced nothing; the message is meant for the operator. */
export class IndexFailed extends Schema.TaggedError<IndexFailed>()("IndexFailed", {
  category: ErrorCategory,
  message: Schema.String
}) {}

/**
 * The most snippets one version may hold (`DOCS_MAX_SNIPPETS`, 100,000; the largest default library has
 * ~2,000, a big documentation repository tens of thousands). Reading stops past it, so a mistaken source
 * (a repository of generated files) fails with what to do instead of filling the process's memory.
 */
export const maxSnippets: Effect.Effect<number, IndexFailed> = Settings.intSetting("DOCS_MAX_SNIPPETS", 100_000).pipe(
  Effect.mapError((error) => invalidSource(`invalid configuration: ${error.cause.message.replace(/\s+/g, " ")}`))
)

/** The failure of a source holding more than {@link maxSnippets}. */
export const tooManySnippets = (location: string, max: number) =>
  new IndexFailed({
    category: "read_failed",
    message: `${location} holds more than ${max} snippets (DOCS_MAX_SNIPPETS): leave folders out with a svc.json ` +
      `(folders, exclude) or raise the setting`
  })

/** Where a library's docs come from, resolved. */
export interface ResolvedSource {
  readonly kind: SourceKind
  /** What `refresh` reads again: the folder path, `npm:<name>`, or the git URL (without credentials). */
  readonly location: string
  /** The folder to read (for git, the temporary clone: it lives as long as `resolve`'s scope). */
  readonly root: string
  readonly libraryId: string
  readonly title: string
  readonly description: string
  readonly version: string
  /**
   * Where its files can be opened, ending in `/` (sources/SourceLinks.ts): the repository's web page
   * of the indexed commit (git, npm with a repository), a folder's absolute path; none: relative paths.
   */
  readonly linkBase?: string | undefined
  /**
   * A web source's files (relative paths in `root`) by the URL each was read from: their snippets'
   * `Source:` line, which `linkBase` cannot give (a page's file name is not its URL).
   */
  readonly pageUrls?: ReadonlyMap<string, string> | undefined
  /**
   * Snippets the source made itself (an OpenAPI document: one per operation), read instead of the
   * folder's documents; `root` is then only where they came from.
   */
  readonly snippets?: ReadonlyArray<Snippet> | undefined
  /** From the root's `svc.json` (RepoConfig.ts): only these folders or files are read. */
  readonly include?: ReadonlyArray<string> | undefined
  /** From `svc.json`: folders or files never read. */
  readonly exclude?: ReadonlyArray<string> | undefined
  /** From `svc.json`: rules for agents using the library, stored with it. */
  readonly rules?: ReadonlyArray<string> | undefined
}

/**
 * What a source reports while it resolves, before its files are read: a clone or a crawl may take
 * minutes (`Cloning`: the URL without credentials; `Fetched`: each web page, counted, with the cap;
 * `Crawled`: the end of a website's crawl or llms.txt pages, see {@link CrawlSummary}).
 */
export type FetchProgress =
  | { readonly _tag: "Cloning"; readonly url: string }
  | { readonly _tag: "Fetched"; readonly url: string; readonly pages: number; readonly maxPages: number }
  | CrawlSummary

/**
 * The end of a website's crawl (or of an llms.txt's pages): the pages read and the most there could
 * be, the pages skipped by reason ({@link SKIP_REASONS}' keys, in that order, only those that
 * occurred), and, when `DOCS_CRAWL_DEADLINE` stopped it, the deadline as written (`10m`).
 */
export interface CrawlSummary {
  readonly _tag: "Crawled"
  readonly pages: number
  readonly maxPages: number
  readonly skipped: ReadonlyArray<{ readonly reason: string; readonly pages: number }>
  readonly stoppedAfter: string | null
}

/** Why a page of a website was skipped, and how a summary names it (one, several). */
export const SKIP_REASONS = {
  /** 404 or 410 */
  not_found: ["not found", "not found"],
  /** any other status but 200 */
  http_error: ["HTTP error", "HTTP errors"],
  /** no answer within DOCS_CRAWL_TIMEOUT */
  timed_out: ["timed out", "timed out"],
  /** the outbound guard refused its address */
  refused: ["refused by the outbound guard", "refused by the outbound guard"],
  /** a redirect to another origin, or out of the crawl's folder */
  redirected_away: ["redirected away", "redirected away"],
  /** a redirect to a URL robots.txt disallows */
  disallowed: ["disallowed by robots.txt", "disallowed by robots.txt"],
  /** over 1 MB */
  too_big: ["too big", "too big"],
  /** no connection, a reset, too many redirects */
  failed: ["failed", "failed"],
  /** an answer that is not HTML, Markdown or text */
  not_a_page: ["not HTML or Markdown", "not HTML or Markdown"],
  /** HTML that could not be converted (PageConverter.ts, Html.ts) */
  not_converted: ["not converted", "not converted"]
} as const satisfies Record<string, readonly [string, string]>
export type SkipReason = keyof typeof SKIP_REASONS

const pagesWord = (count: number) => `${count} page${count === 1 ? "" : "s"}`

/**
 * A crawl's summary as a line (the log's and `svc docs add`'s):
 * `Read 57 pages; skipped 5 (3 not found, 1 timed out, 1 not HTML or Markdown)`, and when the deadline
 * stopped it `Stopped after 10m (DOCS_CRAWL_DEADLINE): 57 of at most 200 pages read; …; raise
 * DOCS_CRAWL_DEADLINE to read more`.
 */
export const describeCrawl = (summary: CrawlSummary): string => {
  const total = summary.skipped.reduce((sum, skip) => sum + skip.pages, 0)
  const reasons = summary.skipped.map((skip) => {
    const label = (SKIP_REASONS as Record<string, readonly [string, string] | undefined>)[skip.reason]
    return `${skip.pages} ${label === undefined ? skip.reason.replaceAll("_", " ") : label[skip.pages === 1 ? 0 : 1]}`
  })
  const skipped = total === 0 ? "" : `; skipped ${total} (${reasons.join(", ")})`
  return summary.stoppedAfter === null
    ? `Read ${pagesWord(summary.pages)}${skipped}`
    : `Stopped after ${summary.stoppedAfter} (DOCS_CRAWL_DEADLINE): ${summary.pages} of at most ${pagesWord(summary.maxPages)} read` +
      `${skipped}; raise DOCS_CRAWL_DEADLINE to read more`
}

/** What the operator chose instead of what the source says. */
export interface SourceOptions {
  /** Told of a clone or each page fetched while the source resolves (Indexer.ts passes its progress). */
  readonly onFetch?: ((progress: FetchProgress) => Effect.Effect<void>) | undefined
  /** `/owner/repo`, instead of the one derived from the source. */
  readonly id?: string | undefined
  /** Instead of package.json's version (or `latest`); for git, instead of the tag at HEAD or the commit. */
  readonly version?: string | undefined
  /** The library's title, instead of the one its package.json or docs give (Folder.ts `describedSource`). */
  readonly title?: string | undefined
  /** The library's description, likewise. */
  readonly description?: string | undefined
}

/**
 * One kind of source. `resolve` answers `undefined` for a source of another kind; a git source's
 * clone lives as long as the scope.
 */
export interface Source {
  readonly kind: SourceKind
  readonly resolve: (source: string, options: SourceOptions) => Effect.Effect<ResolvedSource | undefined, IndexFailed, Scope.Scope>
}

/** A version label: no spaces, no slashes. */
export const VERSION = /^[^/\s]+$/

export const invalidSource = (message: string) => new IndexFailed({ category: "invalid_source", message })

/** The most characters of one part of a library id, and of a version label. */
export const MAX_ID_PART = 100

/**
 * Whether a part of an id or a version label is one a user can read and type back: no control
 * characters (one recoloured the terminal of whoever listed it), not `.` or `..` (clients normalise a
 * path's dots away), at most {@link MAX_ID_PART} characters.
 */
const readablePart = (part: string) =>
  part.length <= MAX_ID_PART && part !== "." && part !== ".." && !/\p{Cc}/u.test(part)

/**
 * Why an id of the id's shape (`/owner/repo`, or `/owner/repo/version` as the API and MCP are asked
 * for one version) could never have been made by the indexer, if it could not: one of its parts is not
 * a {@link readablePart}. The REST API (400) and the MCP tools refuse such an id with this, as the
 * indexer does: `/effect-ts/effect/..` was looked up, and answered 404 "has no version ..".
 */
export const idPartsProblem = (libraryId: string): string | undefined => {
  const parts = libraryId.split("/").slice(1)
  const at = parts.findIndex((part) => !readablePart(part))
  if (at === -1) return undefined
  const part = parts[at]!
  const shown = part.length > 40 ? `a ${part.length}-character one` : JSON.stringify(part)
  return `its ${["owner", "repo", "version"][at] ?? "part"} is ${shown}: each part of a library id (owner, repo, version) ` +
    `holds at most ${MAX_ID_PART} characters, no control characters, and is never . or .., so no library has this id`
}

/** Refuses anything but `/owner/repo` with {@link readablePart}s. */
export const checkLibraryId = (libraryId: string): Effect.Effect<string, IndexFailed> =>
  LibraryIdPattern.test(libraryId) && libraryId.split("/").length === 3 && idPartsProblem(libraryId) === undefined
    ? Effect.succeed(libraryId)
    : Effect.fail(invalidSource(
      `${JSON.stringify(libraryId.slice(0, 200))} is not a library id like /owner/repo (two parts of at most ${MAX_ID_PART} characters, no control characters, not . or ..)`
    ))

/**
 * Refuses a library version whose id with its version, `/owner/repo/version` (how the API, MCP and the
 * RPC ask for one version), is over {@link MAX_ID_LENGTH} characters: each part may have
 * {@link MAX_ID_PART}, and three at their longest (303) were stored, then answered 400 "must be at most
 * 300 characters long" whenever that version was asked for.
 */
export const checkVersionedId = <S extends { readonly libraryId: string; readonly version: string }>(
  source: S
): Effect.Effect<S, IndexFailed> => {
  const id = `${source.libraryId}/${source.version}`
  return id.length <= MAX_ID_LENGTH
    ? Effect.succeed(source)
    : Effect.fail(invalidSource(
      `${id} is ${id.length} characters long, more than a library id may be (${MAX_ID_LENGTH}): give a shorter id or version`
    ))
}

/** Refuses a version label with spaces, slashes or control characters, `.`/`..`, or over {@link MAX_ID_PART} characters. */
export const checkVersion = (version: string): Effect.Effect<string, IndexFailed> =>
  VERSION.test(version) && readablePart(version)
    ? Effect.succeed(version)
    : Effect.fail(invalidSource(`${JSON.stringify(version.slice(0, 200))} is not a version (no spaces, slashes or control characters; at most ${MAX_ID_PART} characters)`))

// -----------------------------------------------------------------------------
// package.json
// -----------------------------------------------------------------------------

export const PackageJson = Schema.Struct({
  name: Schema.optional(Schema.String),
  version: Schema.optional(Schema.String),
  description: Schema.optional(Schema.String),
  repository: Schema.optional(Schema.Unknown),
  /** The commit a package was published from (npm writes it). */
  gitHead: Schema.optional(Schema.String)
})
export type PackageJson = typeof PackageJson.Type

/**
 * What `name` at the top of the source folder `root` is: `absent`; the source's `own` file (a file, or a
 * link whose target lies inside the source, real paths compared); or `foreign`, a link leading out of the
 * source or to nothing. The documents are read without following links (Documents.ts); a `svc.json` or
 * `package.json` read through a link let a source (a git repository's committed link, a folder under
 * `DOCS_SOURCE_ROOTS`) show any JSON file of the server as its title, version or rules, and tell which
 * files exist (an outside audit). Both cases of a link out are `foreign`, so no answer says which.
 */
export const topFile = Effect.fnUntraced(function*(root: string, name: string) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const file = path.join(root, name)
  const info = yield* fs.lstat(file).pipe(Effect.option)
  if (Option.isNone(info)) return { _tag: "absent", file } as const
  if (info.value.type !== "SymbolicLink") return { _tag: "own", file } as const
  const real = yield* Effect.all([fs.realPath(root), fs.realPath(file)]).pipe(Effect.option)
  if (Option.isNone(real)) return { _tag: "foreign", file } as const
  const relative = path.relative(real.value[0], real.value[1])
  const inside = relative !== "" && !relative.startsWith("..") && !path.isAbsolute(relative)
  return { _tag: inside ? "own" : "foreign", file } as const
})

/** The folder's `package.json`, or an empty one when it has none (or an unreadable one, or a link out of the folder: {@link topFile}). */
export const readPackageJson = Effect.fnUntraced(function*(dir: string) {
  const fs = yield* FileSystem.FileSystem
  const found = yield* topFile(dir, "package.json")
  if (found._tag !== "own") return {} as PackageJson
  const pkg = yield* fs.readFileString(found.file).pipe(
    Effect.flatMap(Schema.decodeUnknownEffect(Schema.fromJsonString(PackageJson))),
    Effect.option
  )
  return Option.getOrElse(pkg, (): PackageJson => ({}))
})

/** A resolved source, titled and described by its package.json, else by the repository part of its id. */
export const resolvedSource = (pkg: PackageJson, source: Omit<ResolvedSource, "title" | "description">): ResolvedSource => ({
  ...source,
  title: pkg.name ?? source.libraryId.split("/")[2]!,
  description: pkg.description ?? ""
})

/** `/owner/repo` from a package.json `repository` field, if it names a hosted repository. */
export const repositoryId = (repository: unknown): string | undefined => {
  const raw = typeof repository === "string"
    ? repository
    : typeof repository === "object" && repository !== null && typeof (repository as { url?: unknown }).url === "string"
    ? (repository as { url: string }).url
    : undefined
  if (raw === undefined) return undefined
  // "owner/repo", "github:owner/repo", then URLs: "git+https://github.com/owner/repo.git",
  // "git@github.com:owner/repo.git", "https://github.com/owner/repo/tree/main" (owner and repo follow the host).
  const match = /^(?:(?:github|gitlab|bitbucket):)?([\w.-]+)\/([\w.-]+?)(?:\.git)?$/i.exec(raw) ??
    /[/:@][^/:@]+\.[a-z]+[/:]([\w.-]+)\/([\w.-]+?)(?:\.git)?(?:[/#].*)?$/i.exec(raw)
  return match ? `/${match[1]}/${match[2]}`.toLowerCase() : undefined
}

/**
 * The library id of an installed package: its repository's `/owner/repo`, except for a package of a
 * monorepo (its `repository.directory` is set), which is `/owner/<package name without scope>`:
 * `effect`, `@effect/vitest` and `@effect/sql-pg` share one repository but are three libraries.
 */
export const packageLibraryId = (pkg: { readonly name?: string | undefined; readonly repository?: unknown }): string | undefined => {
  const repoId = repositoryId(pkg.repository)
  const directory = typeof pkg.repository === "object" && pkg.repository !== null
    ? (pkg.repository as { directory?: unknown }).directory
    : undefined
  if (repoId === undefined || typeof directory !== "string" || directory === "" || pkg.name === undefined) return repoId
  const owner = repoId.split("/")[1]!
  return `/${owner}/${pkg.name.replace(/^@[^/]+\//, "")}`.toLowerCase()
}
