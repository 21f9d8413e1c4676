/**
 * The indexer: reads a library's documentation from a source, splits it into snippets
 * (Splitter.ts) and makes them live in the `docs` schema.
 *
 * Sources:
 * - a local folder (a git working tree is just a folder: `.git` is skipped);
 * - `npm:<package>`: the package installed in the nearest `node_modules` (from the working
 *   directory up), library id from its package.json `repository` (`/owner/repo`), else `/npm/<name>`;
 * - a git URL (`https://…`, `ssh://…`, `git@host:owner/repo.git`, `git://…`, `file://…`) or a path to a
 *   bare repository (or any path ending in `.git`), optionally with `#<branch or tag>`: cloned with the
 *   system `git` (`clone --depth 1`) into a temporary folder that is removed when the run ends, then read
 *   like a folder. Id from the URL's last two path segments, version from the tag at HEAD else the short
 *   commit hash. Credentials in the URL are used for that clone only: never stored, logged or shown.
 *
 * Atomic re-index: the snippets are written as a new *generation*; one transaction then points the
 * version at it and deletes the previous one. Readers (Search.ts) read pointer and snippets in one
 * statement, so an answer is entirely from one generation. A failed run leaves the live generation
 * (if any) in place; its version says `failed` with an error category.
 *
 * Refresh states of a version: `queued` (registered by `enqueue`, nothing read yet) → `indexing` (a run
 * has started: `add`, `refresh`) → `ready` | `failed`. A run that is interrupted puts its version back
 * to `queued`; one whose process dies leaves it `indexing`. `unfinished` lists both, and the service's
 * start indexes them again (DefaultLibraries.ts).
 */
import { NodeServices } from "@effect/platform-node"
import { DEFAULT_TRUST_SCORE, LibraryIdPattern } from "@svc/schema"
import { Cause, Config, Context, Duration, Effect, FileSystem, Layer, Option, Path, Schema, type Scope, Stream } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import { SqlClient } from "effect/sql"
import { formatOf, type Snippet, split } from "./Splitter.ts"

// -----------------------------------------------------------------------------
// Records
// -----------------------------------------------------------------------------

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

export class UnknownLibrary extends Schema.TaggedError<UnknownLibrary>()("UnknownLibrary", {
  libraryId: Schema.String,
  message: Schema.String
}) {}

/** Where a library's docs come from, resolved. */
export interface ResolvedSource {
  readonly kind: "folder" | "npm" | "git"
  /** What `refresh` reads again: the folder path, `npm:<name>`, or the git URL (without credentials). */
  readonly location: string
  /** The folder to read (for git, the temporary clone: it lives as long as `resolve`'s scope). */
  readonly root: string
  readonly libraryId: string
  readonly title: string
  readonly description: string
  readonly version: string
}

/** Progress of one run, for the CLI's lines. */
export type IndexProgress =
  /** `root`: the folder read; for a git source its URL (without credentials), the clone being temporary. */
  | { readonly _tag: "Started"; readonly libraryId: string; readonly version: string; readonly root: string }
  | { readonly _tag: "FileRead"; readonly path: string; readonly snippets: number; readonly filesRead: number; readonly totalFiles: number }
  | { readonly _tag: "Stored"; readonly snippets: number; readonly tokens: number }

export interface IndexOutcome {
  readonly libraryId: string
  readonly version: string
  readonly files: number
  readonly snippets: number
  readonly tokens: number
}

export interface IndexOptions {
  /** `/owner/repo`, instead of the one derived from the source. */
  readonly id?: string | undefined
  /** Instead of package.json's version (or `latest`); for git, instead of the tag at HEAD or the commit. */
  readonly version?: string | undefined
  /**
   * The operator's trust in this library's docs, 0 to 10 (`TrustScore`): ranks libraries whose names
   * match equally well. A new library without it gets 5; a re-index without it keeps the library's.
   */
  readonly trust?: number | undefined
  readonly onProgress?: ((progress: IndexProgress) => Effect.Effect<void>) | undefined
  /**
   * Set when the source comes from a remote caller (the docs RPC): a folder, a local git repository
   * (path or `file://` URL) must lie under one of these folders, real paths compared (symlinks
   * resolved), and is read through its real path. Empty: no local source at all. Unset (the local
   * `svc docs add`): anything the process can read. npm packages and remote git URLs are not affected.
   */
  readonly roots?: ReadonlyArray<string> | undefined
}

export interface LibraryListing {
  readonly id: string
  readonly title: string
  readonly source: string
  readonly defaultVersion: string
  readonly versions: ReadonlyArray<{
    readonly version: string
    readonly state: string
    readonly errorCategory: string | null
    readonly snippets: number
    readonly tokens: number
    readonly lastUpdate: Date | null
  }>
}

/** A version whose refresh has not finished (see `Indexer.unfinished`). */
export interface UnfinishedVersion {
  /** `/owner/repo/version`. */
  readonly libraryId: string
  readonly version: string
  readonly state: "queued" | "indexing"
}

/** Files bigger than this are generated or vendored, not documentation. */
export const MAX_FILE_BYTES = 1_000_000
/** Folders never read. */
const SKIPPED_DIRECTORIES = new Set(["node_modules", ".git", "dist", "build", "coverage"])
/** Legal text and release notes match every question and answer none. */
const SKIPPED_FILES = /^(licen[cs]e|copying|changelog|history|notice|code_of_conduct)([.-]|$)/i
/** A clone URL: a URL of a git transport, or scp-like `user@host:path`. */
const GIT_URL = /^((git|ssh|file|https?|git\+(ssh|https?|file)):\/\/|[\w.-]+@[\w.-]+:)/i
/** A branch or tag after `#`: no option look-alikes, no `..`. */
const GIT_REF = /^\w[\w.\/+-]*$/
const VERSION = /^[^/\s]+$/
const INSERT_BATCH = 500

// -----------------------------------------------------------------------------
// Sources
// -----------------------------------------------------------------------------

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

/** `/npm/<name>`; a scoped `@scope/name` becomes `/scope/name`. */
const npmFallbackId = (name: string): string =>
  name.startsWith("@") ? `/${name.slice(1)}`.toLowerCase() : `/npm/${name}`.toLowerCase()

/** Where the system `git` is, and how long a clone may take (`DOCS_GIT`, `DOCS_GIT_CLONE_TIMEOUT`). */
export const GitSettings = Config.all({
  binary: Config.String("DOCS_GIT").pipe(Config.withDefault("git")),
  cloneTimeout: Config.Duration("DOCS_GIT_CLONE_TIMEOUT").pipe(Config.withDefault(Duration.minutes(5)))
})

/**
 * Never waits for a person: no terminal prompt for a password (fails instead), no Git Credential
 * Manager dialog; LFS pointers stay pointers (docs are not in LFS, and it would download).
 */
const GIT_ENV = { GIT_TERMINAL_PROMPT: "0", GCM_INTERACTIVE: "never", GIT_LFS_SKIP_SMUDGE: "1" }

const URL_USERINFO = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)@/i
const isSsh = (scheme: string) => /ssh/i.test(scheme)

/**
 * The URL without its credentials: `https://user:token@host/x.git` → `https://host/x.git`. An ssh URL
 * keeps its user name (`ssh://git@host/x.git`: not a secret, and needed) and loses a password.
 */
export const withoutCredentials = (url: string): string =>
  url.replace(URL_USERINFO, (_all, scheme: string, userinfo: string) =>
    isSsh(scheme) ? `${scheme}${userinfo.split(":")[0]}@` : scheme)

/** The secrets of a URL (what {@link withoutCredentials} removes), raw and decoded. */
const credentialsOf = (url: string): ReadonlyArray<string> => {
  const match = URL_USERINFO.exec(url)
  if (match === null) return []
  const userinfo = match[2]!
  const secret = isSsh(match[1]!) ? userinfo.split(":").slice(1).join(":") : userinfo
  const parts = [secret, ...secret.split(":")].filter((part) => part.length > 0)
  const decoded = parts.map((part) => {
    try {
      return decodeURIComponent(part)
    } catch {
      return part
    }
  })
  return [...new Set([...parts, ...decoded])].sort((a, b) => b.length - a.length)
}

/** Text (git's error output) with the credentials of `url` and of any URL in it removed. */
const redact = (text: string, url: string): string =>
  credentialsOf(url).reduce(
    (out, secret) => out.split(secret).join("***"),
    text.replace(/([a-z][a-z0-9+.-]*:\/\/)([^\s/?#@'"]*)@/gi, (_all, scheme: string, userinfo: string) =>
      isSsh(scheme) ? `${scheme}${userinfo.split(":")[0]}@` : scheme)
  )

/** `/owner/repo` from the last two path segments of a clone URL or repository path, `.git` dropped. */
export const gitLibraryId = (url: string): string | undefined => {
  const clean = withoutCredentials(url).replace(/^git\+/i, "")
  const repositoryPath = /^[a-z][a-z0-9+.-]*:\/\//i.test(clean)
    ? clean.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, "").replace(/[?#].*$/, "")
    : /^[\w.-]+@[\w.-]+:/.test(clean)
    ? clean.slice(clean.indexOf(":") + 1)
    : clean
  const segments = repositoryPath.split(/[/\\]+/).filter((segment) => segment !== "")
  const repo = segments.at(-1)?.replace(/\.git$/i, "")
  const owner = segments.at(-2)
  return owner === undefined || repo === undefined || repo === "" ? undefined : repositoryId(`${owner}/${repo}`)
}

/** The first line of git's error output that says what went wrong, without git's `fatal: ` prefix. */
const gitReason = (stderr: string): string => {
  const lines = stderr.split("\n").map((line) => line.trim()).filter((line) => line !== "")
  const line = lines.find((l) => /^(fatal|error):/i.test(l)) ?? lines.find((l) => !/^(warning|hint|Cloning into)\b/i.test(l))
  return line === undefined ? "no error output" : line.replace(/^(fatal|error):\s*/i, "")
}

interface GitSource {
  /** What git clones: as given (credentials included), `git+` dropped; a local path made absolute. */
  readonly url: string
  /** `url` without credentials, plus `#ref`: the stored location and what messages show. */
  readonly location: string
  readonly shown: string
  readonly ref: string | undefined
}

const PackageJson = Schema.Struct({
  name: Schema.optional(Schema.String),
  version: Schema.optional(Schema.String),
  description: Schema.optional(Schema.String),
  repository: Schema.optional(Schema.Unknown)
})
type PackageJson = typeof PackageJson.Type

export class Indexer extends Context.Service<Indexer, {
  /**
   * Resolves a source (`npm:<pkg>`, a folder path, a git URL) without reading its docs. A git source is
   * cloned: the clone is removed when the scope closes.
   */
  readonly resolve: (source: string, options?: IndexOptions) => Effect.Effect<ResolvedSource, IndexFailed, Scope.Scope>
  /** Indexes a source as a library version (created or re-indexed) and makes it the library's default. */
  readonly add: (source: string, options?: IndexOptions) => Effect.Effect<IndexOutcome, IndexFailed>
  /**
   * Registers resolved sources' libraries and versions in state `queued` (all or none), without reading
   * anything, each version its library's default (as `add` would make it). Indexing one later is a
   * `refresh` of `/owner/repo/version`; `unfinished` lists what waits. A version being indexed stays
   * `indexing`.
   */
  readonly enqueue: (sources: ReadonlyArray<ResolvedSource>) => Effect.Effect<void>
  /** Reads a library's source again into `/owner/repo` (its default version) or `/owner/repo/version`. */
  readonly refresh: (libraryId: string, options?: IndexOptions) => Effect.Effect<IndexOutcome, IndexFailed | UnknownLibrary>
  /**
   * Versions whose refresh has not finished: `queued`, or `indexing` (a run in progress, or one that
   * died with its process), oldest registration first.
   */
  readonly unfinished: Effect.Effect<ReadonlyArray<UnfinishedVersion>>
  /** Removes a library (`/owner/repo`) or one version (`/owner/repo/version`); false if unknown. */
  readonly remove: (libraryId: string) => Effect.Effect<boolean>
  readonly list: Effect.Effect<ReadonlyArray<LibraryListing>>
}>()("@svc/docs/Indexer") {
  static readonly layerNoDeps = Layer.effect(
    Indexer,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const spawner = yield* ChildProcessSpawner.ChildProcessSpawner

      const readPackageJson = (dir: string) =>
        fs.readFileString(path.join(dir, "package.json")).pipe(
          Effect.flatMap(Schema.decodeUnknownEffect(Schema.fromJsonString(PackageJson))),
          Effect.option
        )

      /** `node_modules/<name>` in the working directory or any parent. */
      const findInstalled = Effect.fnUntraced(function*(name: string) {
        let dir = path.resolve(".")
        while (true) {
          const candidate = path.join(dir, "node_modules", name)
          if (yield* fs.exists(path.join(candidate, "package.json")).pipe(Effect.orElseSucceed(() => false))) {
            return candidate
          }
          const parent = path.dirname(dir)
          if (parent === dir) {
            return yield* new IndexFailed({
              category: "source_not_found",
              message: `npm package ${name} is not installed (no node_modules/${name} from ${path.resolve(".")} up)`
            })
          }
          dir = parent
        }
      })

      const isDirectory = (dir: string) =>
        fs.stat(dir).pipe(Effect.map((info) => info.type === "Directory"), Effect.orElseSucceed(() => false))

      /** A bare repository: `HEAD`, `objects/` and `refs/` at its top. */
      const isBareRepository = Effect.fnUntraced(function*(dir: string) {
        return (yield* fs.exists(path.join(dir, "HEAD")).pipe(Effect.orElseSucceed(() => false))) &&
          (yield* isDirectory(path.join(dir, "objects"))) && (yield* isDirectory(path.join(dir, "refs")))
      })

      /** The source as a git source, if it is one: a clone URL, or a path ending in `.git` or to a bare repository. */
      const gitSource = Effect.fnUntraced(function*(source: string) {
        const hash = source.lastIndexOf("#")
        const base = hash === -1 ? source : source.slice(0, hash)
        const ref = hash === -1 ? undefined : source.slice(hash + 1)
        const isUrl = GIT_URL.test(base)
        if (!isUrl && !/\.git\/?$/i.test(base) && !(yield* isBareRepository(path.resolve(base)))) {
          return undefined
        }
        const url = isUrl ? base.replace(/^git\+/i, "") : path.resolve(base)
        const shown = withoutCredentials(url)
        if (ref !== undefined && (!GIT_REF.test(ref) || ref.includes(".."))) {
          return yield* new IndexFailed({ category: "invalid_source", message: `"${ref}" after # in ${shown} is not a branch or tag name` })
        }
        return { url, shown, ref, location: ref === undefined ? shown : `${shown}#${ref}` } satisfies GitSource
      })

      /** Runs git and collects its output; `timeout` stops it (the process group is killed). */
      const runGit = (
        settings: { readonly binary: string; readonly cloneTimeout: Duration.Duration },
        args: ReadonlyArray<string>,
        onTimeout: () => IndexFailed,
        onSpawnFailure: (reason: string) => IndexFailed
      ) =>
        Effect.scoped(Effect.gen(function*() {
          const handle = yield* spawner.spawn(ChildProcess.make(settings.binary, args, {
            env: GIT_ENV,
            extendEnv: true,
            stdin: "ignore",
            forceKillAfter: "2 seconds"
          }))
          const [stdout, stderr, exitCode] = yield* Effect.all(
            [
              handle.stdout.pipe(Stream.decodeText(), Stream.mkString),
              handle.stderr.pipe(Stream.decodeText(), Stream.mkString),
              handle.exitCode
            ],
            { concurrency: "unbounded" }
          )
          return { exitCode: Number(exitCode), stdout, stderr }
        })).pipe(
          // The error's own message quotes the command line, URL and credentials included: never shown.
          Effect.mapError((error) =>
            onSpawnFailure(
              error.reason._tag === "NotFound" && error.reason.method === "spawn"
                ? `git is not installed (no "${settings.binary}" command found; install git, or set DOCS_GIT to its path)`
                : `could not run ${settings.binary} (${error.reason._tag}${"syscall" in error.reason && error.reason.syscall ? `, ${error.reason.syscall}` : ""})`
            )
          ),
          Effect.timeoutOrElse({ duration: settings.cloneTimeout, orElse: () => Effect.fail(onTimeout()) })
        )

      /** Clones into a temporary folder (removed when the scope closes); the checkout and its version. */
      const clone = Effect.fnUntraced(function*(git: GitSource, version: string | undefined) {
        const cloneFailed = (message: string) => new IndexFailed({ category: "clone_failed", message: redact(message, git.url) })
        const settings = yield* GitSettings.pipe(
          Effect.mapError((error) => cloneFailed(`git settings (DOCS_GIT, DOCS_GIT_CLONE_TIMEOUT): ${error.message}`))
        )
        const dir = yield* fs.makeTempDirectoryScoped({ prefix: "svc-docs-git-" }).pipe(
          Effect.mapError((error) => new IndexFailed({ category: "read_failed", message: `Cannot create a temporary folder for the clone: ${error.message}` }))
        )
        const checkout = path.join(dir, "checkout")
        const git_ = (args: ReadonlyArray<string>) =>
          runGit(
            settings,
            args,
            () => cloneFailed(`git could not clone ${git.location}: no result within ${Duration.format(settings.cloneTimeout)} (DOCS_GIT_CLONE_TIMEOUT)`),
            (reason) => cloneFailed(`${reason}: cannot clone ${git.location}`)
          )
        const cloned = yield* git_([
          "clone", "--quiet", "--depth", "1", ...(git.ref === undefined ? [] : ["--branch", git.ref]), "--", git.url, checkout
        ])
        if (cloned.exitCode !== 0) {
          return yield* cloneFailed(`git could not clone ${git.location}: ${gitReason(cloned.stderr)}`)
        }
        if (version !== undefined) return { root: checkout, version }
        // The tag at HEAD (the highest if several name a valid version), else the short commit hash.
        const tags = yield* git_(["-C", checkout, "tag", "--points-at", "HEAD", "--sort=-version:refname"])
        const tag = tags.stdout.split("\n").map((line) => line.trim()).find((line) => line !== "" && VERSION.test(line))
        if (tag !== undefined) return { root: checkout, version: tag }
        const head = yield* git_(["-C", checkout, "rev-parse", "--short", "HEAD"])
        if (head.exitCode !== 0 || head.stdout.trim() === "") {
          return yield* cloneFailed(`git cloned ${git.location} but cannot read its HEAD: ${gitReason(head.stderr)}`)
        }
        return { root: checkout, version: head.stdout.trim() }
      })

      const resolveGit = Effect.fnUntraced(function*(git: GitSource, options: IndexOptions) {
        const libraryId = (options.id ?? gitLibraryId(git.url) ?? "").replace(/\/+$/, "")
        if (libraryId === "") {
          return yield* new IndexFailed({
            category: "invalid_source",
            message: `Cannot tell a library id (/owner/repo) from ${git.location}: pass --id /owner/repo`
          })
        }
        if (!LibraryIdPattern.test(libraryId) || libraryId.split("/").length !== 3) {
          return yield* new IndexFailed({ category: "invalid_source", message: `"${libraryId}" is not a library id like /owner/repo` })
        }
        if (options.version !== undefined && !VERSION.test(options.version)) {
          return yield* new IndexFailed({ category: "invalid_source", message: `"${options.version}" is not a version (no spaces or slashes)` })
        }
        const { root, version } = yield* clone(git, options.version)
        const pkg: PackageJson = Option.getOrElse(yield* readPackageJson(root), () => ({}))
        return {
          kind: "git" as const,
          location: git.location,
          root,
          libraryId,
          title: pkg.name ?? libraryId.split("/")[2]!,
          description: pkg.description ?? "",
          version
        } satisfies ResolvedSource
      })

      /** Whether `child` is `parent` or inside it (both real, absolute paths). */
      const isWithin = (parent: string, child: string) => {
        const relative = path.relative(parent, child)
        return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative))
      }

      /**
       * A local source (folder, git path, `file://` URL) as its real path, if that lies under one of
       * `roots` (see `IndexOptions.roots`); anything else unchanged.
       */
      const confine = Effect.fnUntraced(function*(source: string, roots: ReadonlyArray<string>) {
        if (source.startsWith("npm:")) return source
        const isFileUrl = /^(git\+)?file:\/\//i.test(source)
        if (GIT_URL.test(source) && !isFileUrl) return source
        const refused = (message: string) => new IndexFailed({ category: "source_not_allowed", message })
        if (roots.length === 0) {
          return yield* refused(
            "Folder and local git sources are not accepted over the RPC: the server has no DOCS_SOURCE_ROOTS " +
              "(add them with svc docs add on the server, without DOCS_URL, or set DOCS_SOURCE_ROOTS there)"
          )
        }
        // `#<ref>` belongs to a git source; a folder's name may contain `#` too
        const hash = source.lastIndexOf("#")
        const candidates = hash === -1 ? [[source, ""]] : [[source, ""], [source.slice(0, hash), source.slice(hash)]]
        let lexical = path.resolve(source)
        for (const [base, suffix] of candidates as Array<[string, string]>) {
          let local = base
          if (isFileUrl) {
            const url = URL.parse(base.replace(/^git\+/i, ""))
            if (url === null || (url.host !== "" && url.host !== "localhost")) continue
            local = decodeURIComponent(url.pathname)
          }
          const real = yield* fs.realPath(path.resolve(local)).pipe(Effect.option)
          if (Option.isNone(real)) {
            lexical = path.resolve(local)
            continue
          }
          for (const root of roots) {
            const realRoot = yield* fs.realPath(path.resolve(root)).pipe(Effect.option)
            if (Option.isSome(realRoot) && isWithin(realRoot.value, real.value)) {
              return (isFileUrl ? `file://${real.value}` : real.value) + suffix
            }
          }
          return yield* refused(`${source} is outside the folders the server accepts sources from (DOCS_SOURCE_ROOTS)`)
        }
        // missing: said so only under a root (outside, it would tell a caller which paths exist there)
        const underARoot = roots.some((root) => isWithin(path.resolve(root), lexical))
        return yield* underARoot
          ? new IndexFailed({ category: "source_not_found", message: `${source} does not exist` })
          : refused(`${source} is outside the folders the server accepts sources from (DOCS_SOURCE_ROOTS)`)
      })

      const resolve = Effect.fn("Indexer.resolve")(function*(source: string, options: IndexOptions = {}) {
        const trimmed = options.roots === undefined ? source.trim() : yield* confine(source.trim(), options.roots)
        const git = yield* gitSource(trimmed)
        if (git !== undefined) return yield* resolveGit(git, options)
        const npmName = trimmed.startsWith("npm:") ? trimmed.slice(4) : undefined
        if (npmName !== undefined && !/^(@[\w.-]+\/)?[\w.-]+$/.test(npmName)) {
          return yield* new IndexFailed({ category: "invalid_source", message: `"${npmName}" is not an npm package name` })
        }
        const root = npmName !== undefined ? yield* findInstalled(npmName) : path.resolve(trimmed)
        const info = yield* fs.stat(root).pipe(Effect.option)
        if (Option.isNone(info) || info.value.type !== "Directory") {
          return yield* new IndexFailed({ category: "source_not_found", message: `${root} is not a folder` })
        }
        const pkg: PackageJson = Option.getOrElse(yield* readPackageJson(root), () => ({}))
        const libraryId = (options.id ?? packageLibraryId(pkg) ??
          (npmName !== undefined ? npmFallbackId(npmName) : `/local/${path.basename(root).toLowerCase()}`))
          .replace(/\/+$/, "")
        if (!LibraryIdPattern.test(libraryId) || libraryId.split("/").length !== 3) {
          return yield* new IndexFailed({ category: "invalid_source", message: `"${libraryId}" is not a library id like /owner/repo` })
        }
        const version = options.version ?? pkg.version ?? "latest"
        if (!VERSION.test(version)) {
          return yield* new IndexFailed({ category: "invalid_source", message: `"${version}" is not a version (no spaces or slashes)` })
        }
        return {
          kind: npmName !== undefined ? "npm" as const : "folder" as const,
          location: npmName !== undefined ? `npm:${npmName}` : root,
          root,
          libraryId,
          title: pkg.name ?? libraryId.split("/")[2]!,
          description: pkg.description ?? "",
          version
        } satisfies ResolvedSource
      })

      /** Documentation files under `root`, relative and sorted (deterministic snippet order). */
      const listFiles = (root: string) => {
        const walk = (relative: string): Effect.Effect<ReadonlyArray<string>, IndexFailed> =>
          fs.readDirectoryEntries(path.join(root, relative)).pipe(
            Effect.mapError((error) => new IndexFailed({ category: "read_failed", message: `Cannot list ${path.join(root, relative)}: ${error.message}` })),
            Effect.flatMap((entries) =>
              Effect.forEach(
                [...entries].sort((a, b) => a.name.localeCompare(b.name)),
                (entry) => {
                  const child = relative === "" ? entry.name : `${relative}/${entry.name}`
                  if (entry.type === "Directory") {
                    return SKIPPED_DIRECTORIES.has(entry.name) || entry.name.startsWith(".") ? Effect.succeed([]) : walk(child)
                  }
                  return Effect.succeed(
                    entry.type === "File" && formatOf(child) !== undefined && !SKIPPED_FILES.test(entry.name) ? [child] : []
                  )
                }
              )
            ),
            Effect.map((lists) => lists.flat())
          )
        // The root README first: it opens a version's snippets (the context answer without a question).
        return Effect.map(walk(""), (files) => [
          ...files.filter((file) => /^readme\./i.test(file)),
          ...files.filter((file) => !/^readme\./i.test(file))
        ])
      }

      /** Reads and splits every file, reporting each. */
      const collect = Effect.fnUntraced(function*(source: ResolvedSource, options: IndexOptions) {
        const files = yield* listFiles(source.root)
        const snippets: Array<Snippet> = []
        let filesRead = 0
        for (const file of files) {
          const full = path.join(source.root, file)
          const size = yield* fs.stat(full).pipe(Effect.map((info) => Number(info.size)), Effect.orElseSucceed(() => Infinity))
          if (size > MAX_FILE_BYTES) continue
          const content = yield* fs.readFileString(full).pipe(
            Effect.mapError((error) => new IndexFailed({ category: "read_failed", message: `Cannot read ${full}: ${error.message}` }))
          )
          const found = split(content, file)
          snippets.push(...found)
          filesRead++
          if (options.onProgress) {
            yield* options.onProgress({ _tag: "FileRead", path: file, snippets: found.length, filesRead, totalFiles: files.length })
          }
        }
        if (snippets.length === 0) {
          return yield* new IndexFailed({
            category: "no_documents",
            message: `No documentation found in ${source.root} (.md, .mdx, .rst, .txt outside node_modules and .git)`
          })
        }
        return { files: filesRead, snippets }
      })

      /** Writes a new generation and makes it live (see the module comment). */
      const store = Effect.fnUntraced(function*(versionId: string, snippets: ReadonlyArray<Snippet>) {
        const [generation] = yield* sql<{ readonly id: string }>`
          INSERT INTO docs.generations (version_id) VALUES (${versionId}) RETURNING id`
        const generationId = generation!.id
        const write = Effect.gen(function*() {
          for (let start = 0; start < snippets.length; start += INSERT_BATCH) {
            const rows = snippets.slice(start, start + INSERT_BATCH).map((snippet, index) => ({
              generation_id: generationId,
              ordinal: start + index,
              kind: snippet.kind,
              title: snippet.title,
              heading_path: snippet.headingPath,
              heading: snippet.headingPath.join(" > "),
              description: snippet.description,
              language: snippet.language,
              body: snippet.body,
              source_path: snippet.sourcePath,
              tokens: snippet.tokens
            }))
            yield* sql`INSERT INTO docs.snippets ${sql.insert(rows as any)}`
          }
          // what the docs are about, for library search (migration 0003)
          yield* sql`
            UPDATE docs.generations SET topics = (
              SELECT to_tsvector('english'::regconfig, left(string_agg(s.title || ' ' || s.heading || ' ' || s.description, ' '), 500000))
              FROM docs.snippets s WHERE s.generation_id = ${generationId}
            ) WHERE id = ${generationId}`
          const tokens = snippets.reduce((sum, snippet) => sum + snippet.tokens, 0)
          yield* sql.withTransaction(Effect.gen(function*() {
            const [current] = yield* sql<{ readonly generation_id: string | null }>`
              SELECT generation_id FROM docs.versions WHERE id = ${versionId} FOR UPDATE`
            yield* sql`
              UPDATE docs.versions
              SET generation_id = ${generationId}, state = 'ready', error_category = NULL,
                  snippet_count = ${snippets.length}, token_count = ${tokens}, last_update = now(), updated_at = now()
              WHERE id = ${versionId}`
            if (current?.generation_id != null) {
              yield* sql`DELETE FROM docs.generations WHERE id = ${current.generation_id}`
            }
          }))
          return tokens
        })
        // Never leave a half-written generation behind.
        return yield* write.pipe(
          Effect.onError(() => sql`DELETE FROM docs.generations WHERE id = ${generationId}`.pipe(Effect.ignore))
        )
      })

      /**
       * Creates or updates the library and its version, in `state`; the version's row id. `queued` does
       * not take back a version another run is indexing right now.
       */
      const register = Effect.fnUntraced(function*(
        source: ResolvedSource,
        state: "queued" | "indexing",
        makeDefault: boolean,
        trust?: number | undefined
      ) {
        const [version] = yield* sql<{ readonly id: string }>`
          WITH library AS (
            INSERT INTO docs.libraries (id, title, description, source_kind, source_location, default_version, trust_score)
            VALUES (${source.libraryId}, ${source.title}, ${source.description}, ${source.kind}, ${source.location}, ${source.version},
              ${trust ?? DEFAULT_TRUST_SCORE})
            ON CONFLICT (id) DO UPDATE SET
              title = excluded.title, description = excluded.description, source_kind = excluded.source_kind,
              source_location = excluded.source_location, updated_at = now()
              ${makeDefault ? sql`, default_version = excluded.default_version` : sql``}
              ${trust === undefined ? sql`` : sql`, trust_score = excluded.trust_score`}
            RETURNING id
          )
          INSERT INTO docs.versions AS v (library_id, version, state)
          SELECT id, ${source.version}, ${state} FROM library
          ON CONFLICT (library_id, version) DO UPDATE SET
            state = ${state === "queued" ? sql`CASE WHEN v.state = 'indexing' THEN 'indexing' ELSE 'queued' END` : sql`'indexing'`},
            error_category = NULL, updated_at = now()
          RETURNING id`
        return version!.id
      })

      /**
       * A run stopped by interruption (shutdown, a cancelled RPC, Ctrl-C) did not fail: its version goes
       * back to `queued`, and the next start picks it up (DefaultLibraries.ts). Best effort: a process
       * that dies leaves it `indexing`, which the next start picks up too.
       */
      const requeue = (versionId: string) =>
        sql`UPDATE docs.versions SET state = 'queued', updated_at = now() WHERE id = ${versionId} AND state = 'indexing'`
          .pipe(Effect.ignore)

      /**
       * Marks a version `failed`, unless another run finished it meanwhile (a start resuming a version
       * while a `svc docs add` of it still runs): then that run's state stands.
       */
      const markFailed = (versionId: string, error: IndexFailed) =>
        sql`UPDATE docs.versions SET state = 'failed', error_category = ${error.category}, updated_at = now()
            WHERE id = ${versionId} AND state = 'indexing'`.pipe(Effect.orDie)

      /**
       * Library search reads `docs.libraries` through its trigram index only while the planner knows
       * how many libraries there are: after a bulk add, until autovacuum analyzed the table (a minute
       * or more), it scanned all 10,000 (4 ms a search instead of 0.07 ms). So a run that leaves 10%
       * (and 20) more libraries than the statistics know analyzes that small table (10,000 rows: ~20 ms).
       */
      const refreshLibraryStatistics = Effect.gen(function*() {
        const [known] = yield* sql<{ readonly stale: boolean }>`
          SELECT (SELECT count(*) FROM docs.libraries) > 1.1 * greatest(c.reltuples, 0) + 20 AS stale
          FROM pg_class c WHERE c.oid = 'docs.libraries'::regclass`
        if (known?.stale === true) yield* sql`ANALYZE docs.libraries`
      }).pipe(
        // the run's version is live already: statistics are a speed matter, never the run's failure
        Effect.catch((error) => Effect.logWarning(`Could not analyze docs.libraries: ${error.message}`))
      )

      const run = Effect.fn("Indexer.run")(function*(source: ResolvedSource, options: IndexOptions, makeDefault: boolean) {
        const versionId = yield* register(source, "indexing", makeDefault, options.trust)
        return yield* Effect.gen(function*() {
          // Generations of earlier runs that never went live (a crash between write and switch).
          yield* sql`
            DELETE FROM docs.generations g USING docs.versions v
            WHERE g.version_id = ${versionId} AND v.id = g.version_id AND g.id IS DISTINCT FROM v.generation_id
              AND g.created_at < now() - interval '1 hour'`
          if (options.onProgress) {
            yield* options.onProgress({
              _tag: "Started",
              libraryId: source.libraryId,
              version: source.version,
              root: source.kind === "git" ? source.location : source.root
            })
          }
          const { files, snippets } = yield* collect(source, options).pipe(Effect.tapError((error) => markFailed(versionId, error)))
          const tokens = yield* store(versionId, snippets).pipe(
            Effect.onError((cause) =>
              Cause.hasInterruptsOnly(cause)
                ? Effect.void
                : markFailed(versionId, new IndexFailed({ category: "read_failed", message: "" })).pipe(Effect.ignore)
            ),
            Effect.orDie
          )
          if (options.onProgress) yield* options.onProgress({ _tag: "Stored", snippets: snippets.length, tokens })
          yield* refreshLibraryStatistics
          return { libraryId: source.libraryId, version: source.version, files, snippets: snippets.length, tokens }
        }).pipe(Effect.onInterrupt(() => requeue(versionId)))
      }, (effect) => Effect.catchTag(effect, "SqlError", Effect.die))

      // Scoped: a git clone is removed when the run ends, however it ends.
      const add = Effect.fn("Indexer.add")(function*(source: string, options: IndexOptions = {}) {
        return yield* run(yield* resolve(source, options), options, true)
      }, Effect.scoped)

      // All or none: a crash while registering leaves nothing half-queued.
      const enqueue = Effect.fn("Indexer.enqueue")(function*(sources: ReadonlyArray<ResolvedSource>) {
        yield* sql.withTransaction(Effect.forEach(sources, (source) => register(source, "queued", true), { discard: true }))
      }, Effect.orDie)

      const parseId = (libraryId: string) => {
        const [, owner, repo, version] = libraryId.split("/")
        return { id: `/${owner}/${repo}`, version }
      }

      const refresh = Effect.fn("Indexer.refresh")(function*(libraryId: string, options: IndexOptions = {}) {
        const { id, version } = parseId(libraryId)
        const rows = yield* sql<{ readonly source_location: string; readonly default_version: string }>`
          SELECT source_location, default_version FROM docs.libraries WHERE id = ${id}`.pipe(Effect.orDie)
        const library = rows[0]
        if (!LibraryIdPattern.test(libraryId) || library === undefined) {
          return yield* new UnknownLibrary({ libraryId, message: `No library ${libraryId} (svc docs list shows them)` })
        }
        const target = version ?? library.default_version
        // `indexing` from now on (a clone may take minutes); a source that cannot be resolved any more
        // (uninstalled, unreachable) makes the version `failed`, its live generation (if any) still served.
        const [existing] = yield* sql<{ readonly id: string }>`
          UPDATE docs.versions SET state = 'indexing', error_category = NULL, updated_at = now()
          WHERE library_id = ${id} AND version = ${target} RETURNING id`.pipe(Effect.orDie)
        return yield* Effect.scoped(Effect.gen(function*() {
          const source = yield* resolve(library.source_location, { ...options, id, version: target }).pipe(
            Effect.tapError((error) => existing === undefined ? Effect.void : markFailed(existing.id, error))
          )
          return yield* run(source, options, false)
        })).pipe(Effect.onInterrupt(() => existing === undefined ? Effect.void : requeue(existing.id)))
      })

      const unfinished = sql<{
        readonly library_id: string
        readonly version: string
        readonly state: "queued" | "indexing"
      }>`SELECT library_id, version, state
         FROM docs.versions WHERE state IN ('queued', 'indexing') ORDER BY id`.pipe(
        Effect.map((rows) =>
          rows.map((row): UnfinishedVersion => ({
            libraryId: `${row.library_id}/${row.version}`,
            version: row.version,
            state: row.state
          }))
        ),
        Effect.orDie
      )

      const remove = Effect.fn("Indexer.remove")(function*(libraryId: string) {
        const { id, version } = parseId(libraryId)
        const deleted = version === undefined
          ? yield* sql`DELETE FROM docs.libraries WHERE id = ${id} RETURNING id`
          : yield* sql`DELETE FROM docs.versions WHERE library_id = ${id} AND version = ${version} RETURNING id`
        return deleted.length > 0
      }, Effect.orDie)

      const list = Effect.gen(function*() {
        const libraries = yield* sql<{
          readonly id: string
          readonly title: string
          readonly source_location: string
          readonly default_version: string
        }>`SELECT id, title, source_location, default_version FROM docs.libraries ORDER BY id`
        const versions = yield* sql<{
          readonly library_id: string
          readonly version: string
          readonly state: string
          readonly error_category: string | null
          readonly snippet_count: number
          readonly token_count: number
          readonly last_update: Date | null
        }>`SELECT library_id, version, state, error_category, snippet_count, token_count, last_update
           FROM docs.versions ORDER BY library_id, created_at`
        return libraries.map((library): LibraryListing => ({
          id: library.id,
          title: library.title,
          source: library.source_location,
          defaultVersion: library.default_version,
          versions: versions.filter((version) => version.library_id === library.id).map((version) => ({
            version: version.version,
            state: version.state,
            errorCategory: version.error_category,
            snippets: version.snippet_count,
            tokens: version.token_count,
            lastUpdate: version.last_update
          }))
        }))
      }).pipe(Effect.orDie)

      return Indexer.of({ resolve, add, enqueue, refresh, unfinished, remove, list })
    })
  )

  /** With the Node file system; needs the database (`SqlClient`). */
  static readonly layer = Indexer.layerNoDeps.pipe(Layer.provide(NodeServices.layer))
}
