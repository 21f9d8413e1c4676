/**
 * The indexer: reads a library's documentation from a source, splits it into snippets
 * (Splitter.ts) and makes them live in the `docs` schema.
 *
 * Sources:
 * - a local folder (a git working tree is just a folder: `.git` is skipped);
 * - `npm:<package>`: the package installed in the nearest `node_modules` (from the working
 *   directory up), library id from its package.json `repository` (`/owner/repo`), else `/npm/<name>`;
 * - git URLs are refused for now with `unsupported_source` (clone, then add the folder).
 *
 * Atomic re-index: the snippets are written as a new *generation*; one transaction then points the
 * version at it and deletes the previous one. Readers (Search.ts) read pointer and snippets in one
 * statement, so an answer is entirely from one generation. A failed run leaves the live generation
 * (if any) in place; its version says `failed` with an error category.
 */
import { NodeServices } from "@effect/platform-node"
import { LibraryIdPattern } from "@svc/schema"
import { Context, Effect, FileSystem, Layer, Option, Path, Schema } from "effect"
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
  "read_failed"
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
  readonly kind: "folder" | "npm"
  /** What `refresh` reads again: the folder path, or `npm:<name>`. */
  readonly location: string
  /** The folder to read. */
  readonly root: string
  readonly libraryId: string
  readonly title: string
  readonly description: string
  readonly version: string
}

/** Progress of one run, for the CLI's lines. */
export type IndexProgress =
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
  /** Instead of package.json's version (or `latest`). */
  readonly version?: string | undefined
  readonly onProgress?: ((progress: IndexProgress) => Effect.Effect<void>) | undefined
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

/** Files bigger than this are generated or vendored, not documentation. */
export const MAX_FILE_BYTES = 1_000_000
/** Folders never read. */
const SKIPPED_DIRECTORIES = new Set(["node_modules", ".git", "dist", "build", "coverage"])
/** Legal text and release notes match every question and answer none. */
const SKIPPED_FILES = /^(licen[cs]e|copying|changelog|history|notice|code_of_conduct)([.-]|$)/i
const GIT_URL = /^(git@|git:|git\+|ssh:|https?:\/\/.*\.git$|https?:\/\/(github|gitlab|bitbucket)\.)/i
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

const PackageJson = Schema.Struct({
  name: Schema.optional(Schema.String),
  version: Schema.optional(Schema.String),
  description: Schema.optional(Schema.String),
  repository: Schema.optional(Schema.Unknown)
})
type PackageJson = typeof PackageJson.Type

export class Indexer extends Context.Service<Indexer, {
  /** Resolves a source (`npm:<pkg>`, a folder path) without reading its docs. */
  readonly resolve: (source: string, options?: IndexOptions) => Effect.Effect<ResolvedSource, IndexFailed>
  /** Indexes a source as a library version (created or re-indexed) and makes it the library's default. */
  readonly add: (source: string, options?: IndexOptions) => Effect.Effect<IndexOutcome, IndexFailed>
  /** Reads a library's source again into `/owner/repo` (its default version) or `/owner/repo/version`. */
  readonly refresh: (libraryId: string, options?: IndexOptions) => Effect.Effect<IndexOutcome, IndexFailed | UnknownLibrary>
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

      const resolve = Effect.fn("Indexer.resolve")(function*(source: string, options: IndexOptions = {}) {
        const trimmed = source.trim()
        if (GIT_URL.test(trimmed)) {
          return yield* new IndexFailed({
            category: "unsupported_source",
            message: `Git URLs are not supported yet: clone ${trimmed} and add the folder`
          })
        }
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

      const run = Effect.fn("Indexer.run")(function*(source: ResolvedSource, options: IndexOptions, makeDefault: boolean) {
        const [version] = yield* sql<{ readonly id: string }>`
          WITH library AS (
            INSERT INTO docs.libraries (id, title, description, source_kind, source_location, default_version)
            VALUES (${source.libraryId}, ${source.title}, ${source.description}, ${source.kind}, ${source.location}, ${source.version})
            ON CONFLICT (id) DO UPDATE SET
              title = excluded.title, description = excluded.description, source_kind = excluded.source_kind,
              source_location = excluded.source_location, updated_at = now()
              ${makeDefault ? sql`, default_version = excluded.default_version` : sql``}
            RETURNING id
          )
          INSERT INTO docs.versions (library_id, version, state)
          SELECT id, ${source.version}, 'indexing' FROM library
          ON CONFLICT (library_id, version) DO UPDATE SET state = 'indexing', error_category = NULL, updated_at = now()
          RETURNING id`
        const versionId = version!.id
        // Generations of earlier runs that never went live (a crash between write and switch).
        yield* sql`
          DELETE FROM docs.generations g USING docs.versions v
          WHERE g.version_id = ${versionId} AND v.id = g.version_id AND g.id IS DISTINCT FROM v.generation_id
            AND g.created_at < now() - interval '1 hour'`
        if (options.onProgress) {
          yield* options.onProgress({ _tag: "Started", libraryId: source.libraryId, version: source.version, root: source.root })
        }
        const markFailed = (error: IndexFailed) =>
          sql`UPDATE docs.versions SET state = 'failed', error_category = ${error.category}, updated_at = now() WHERE id = ${versionId}`
            .pipe(Effect.orDie)
        const { files, snippets } = yield* collect(source, options).pipe(Effect.tapError(markFailed))
        const tokens = yield* store(versionId, snippets).pipe(
          Effect.onError(() => markFailed(new IndexFailed({ category: "read_failed", message: "" })).pipe(Effect.ignore)),
          Effect.orDie
        )
        if (options.onProgress) yield* options.onProgress({ _tag: "Stored", snippets: snippets.length, tokens })
        return { libraryId: source.libraryId, version: source.version, files, snippets: snippets.length, tokens }
      }, (effect) => Effect.catchTag(effect, "SqlError", Effect.die))

      const add = Effect.fn("Indexer.add")(function*(source: string, options: IndexOptions = {}) {
        return yield* run(yield* resolve(source, options), options, true)
      })

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
        const source = yield* resolve(library.source_location, { ...options, id, version: version ?? library.default_version })
        return yield* run(source, options, false)
      })

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

      return Indexer.of({ resolve, add, refresh, remove, list })
    })
  )

  /** With the Node file system; needs the database (`SqlClient`). */
  static readonly layer = Indexer.layerNoDeps.pipe(Layer.provide(NodeServices.layer))
}
