/**
 * `Sources`: where a library's documentation comes from. `resolve` tells what a source is and where
 * its folder is (OpenApi.ts reads an API description into snippets, Website.ts fetches a site or its llms.txt, Git.ts clones, Npm.ts finds the installed package, Folder.ts takes any path; tried in
 * that order, after the roots of a remote caller confined it: Roots.ts); `read` reads that folder's
 * documents into snippets (Documents.ts). Nothing here touches the index.
 */
import { NodeServices } from "@effect/platform-node"
import { MAX_NAME_LENGTH } from "@svc/schema"
import { Context, Effect, FileSystem, Layer, Option, Path, type Scope } from "effect"
import type { Snippet } from "../Splitter.ts"
import * as Documents from "./Documents.ts"
import * as Folder from "./Folder.ts"
import * as Git from "./Git.ts"
import * as Npm from "./Npm.ts"
import * as OpenApi from "./OpenApi.ts"
import * as Roots from "./Roots.ts"
import { readRepoConfig } from "./RepoConfig.ts"
import { type IndexFailed, invalidSource, type ResolvedSource, type Source, type SourceOptions } from "./Source.ts"
import * as Website from "./Website.ts"

/**
 * Text as the index can store it: a NUL (meaningless in documentation; Postgres text refuses it) is
 * dropped and an unpaired surrogate (not text; UTF-8 cannot carry it) becomes U+FFFD. What a source
 * read is third-party text the operator cannot fix, so it is made storable rather than refused; a
 * `svc.json`, the owners' own file, is refused instead (RepoConfig.ts).
 */
const storable = (text: string): string => text.replaceAll("\u0000", "").toWellFormed()

/**
 * The longest title and description a source gives its library (package.json, llms.txt, a page's
 * `<title>` and meta description, an OpenAPI `info`): an operator's `--title` may be as long as the
 * title (MAX_NAME_LENGTH), an `svc.json` description as long as the description. Longer text is cut
 * at a word with "…": a 550 kB package.json description was stored whole and sent with every search
 * result listing the library.
 */
export const MAX_SOURCE_TITLE = MAX_NAME_LENGTH
export const MAX_SOURCE_DESCRIPTION = 1000

/** The URL schemes some source reads (Website, OpenApi, Git). */
const URL_SCHEMES: ReadonlySet<string> = new Set(["http", "https", "git", "ssh", "file", "git+http", "git+https", "git+ssh", "git+file"])

/**
 * Why `source` (as given, trimmed) can never be a source, from its text alone, or none: empty, git's
 * remote-helper syntax (`ext::sh -c …` runs a command), or a URL of a scheme no source reads (said so,
 * not taken for a folder of that name). The local `svc docs add` asks it before it opens a database.
 */
export const sourceProblem = (source: string): string | undefined => {
  const given = source.trim()
  if (given === "") return "the source is empty: give a folder, a git URL, a website or OpenAPI document, or npm:<package>"
  if (/^[a-z][a-z0-9+.-]*::/i.test(given)) {
    return `${given.split("::")[0]}:: (git's remote-helper syntax) is not a source: give a git URL (https, ssh, git, file) instead`
  }
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(given)?.[1]?.toLowerCase()
  if (scheme !== undefined && !URL_SCHEMES.has(scheme)) {
    return `${scheme}:// is not a source: give a folder, a git URL (https, ssh, git, file), a website or OpenAPI document (http, https) or npm:<package>`
  }
  return undefined
}

/** A snippet's text fields {@link storable}. */
const storableSnippet = (snippet: Snippet): Snippet => ({
  ...snippet,
  title: storable(snippet.title),
  headingPath: snippet.headingPath.map(storable),
  description: storable(snippet.description),
  body: storable(snippet.body)
})

export interface ResolveOptions extends SourceOptions {
  /**
   * Set when the source comes from a remote caller (the docs RPC): a folder, a local git repository
   * (path or `file://` URL) must lie under one of these folders, real paths compared (symlinks
   * resolved), and is read through its real path. Empty: no local source at all. Unset (the local
   * `svc docs add`): anything the process can read. npm packages and remote git URLs are not affected.
   */
  readonly roots?: ReadonlyArray<string> | undefined
}

export class Sources extends Context.Service<Sources, {
  /** Resolves a source (`npm:<pkg>`, a folder path, a git URL); a git clone is removed when the scope closes. */
  readonly resolve: (source: string, options?: ResolveOptions) => Effect.Effect<ResolvedSource, IndexFailed, Scope.Scope>
  /** The documents of a resolved source as snippets, each file reported to `onFile`; `no_documents` when there are none. */
  readonly read: (
    source: ResolvedSource,
    onFile?: ((file: Documents.FileRead) => Effect.Effect<void>) | undefined
  ) => Effect.Effect<{ readonly files: number; readonly snippets: ReadonlyArray<Snippet> }, IndexFailed>
}>()("@svc/docs/Sources") {
  /** Needs the file system, paths and a process spawner (for git). */
  static readonly layerNoDeps = Layer.effect(
    Sources,
    Effect.gen(function*() {
      const files = yield* Effect.context<FileSystem.FileSystem | Path.Path>()
      const confine = yield* Roots.make
      // An OpenAPI document (a .json/.yaml URL or file) first; a website before git: an http(s) URL
      // is a git source only when it names a repository (Website.ts).
      const recognised: ReadonlyArray<Source> = [yield* OpenApi.make, yield* Website.make, yield* Git.make, yield* Npm.make]
      const folder = yield* Folder.make
      const read = yield* Documents.make

      /**
       * A folder, package or repository as its `svc.json` describes it (RepoConfig.ts): its title and
       * description unless the operator gave them, the folders read and excluded, the rules.
       */
      const configured = Effect.fnUntraced(function*(resolved: ResolvedSource, options: ResolveOptions) {
        if (resolved.kind !== "folder" && resolved.kind !== "npm" && resolved.kind !== "git") return resolved
        const config = yield* readRepoConfig(resolved.root, resolved.location)
        if (Option.isNone(config)) return resolved
        // `--title` / `--description`, where the operator's options have them, win over the file
        const chosen = options as ResolveOptions & { readonly title?: string | undefined; readonly description?: string | undefined }
        const { description, exclude, folders, rules, title } = config.value
        return {
          ...resolved,
          ...(title === undefined || chosen.title !== undefined ? {} : { title }),
          ...(description === undefined || chosen.description !== undefined ? {} : { description }),
          // an empty list reads every folder, as Context7 reads context7.json's (it is its default)
          ...(folders === undefined || folders.length === 0 ? {} : { include: folders }),
          ...(exclude === undefined ? {} : { exclude }),
          ...(rules === undefined ? {} : { rules })
        }
      }, Effect.provide(files))

      const resolve = Effect.fnUntraced(function*(source: string, options: ResolveOptions = {}) {
        const given = source.trim()
        const problem = sourceProblem(given)
        if (problem !== undefined) return yield* invalidSource(problem)
        const trimmed = options.roots === undefined ? given : yield* confine(given, options.roots)
        const found = yield* Effect.gen(function*() {
          for (const kind of recognised) {
            const resolved = yield* kind.resolve(trimmed, options)
            if (resolved !== undefined) return resolved
          }
          return yield* folder.resolve(trimmed, options)
        })
        const resolved = yield* configured(found, options)
        return {
          ...resolved,
          title: Folder.clip(storable(resolved.title), MAX_SOURCE_TITLE),
          description: Folder.clip(storable(resolved.description), MAX_SOURCE_DESCRIPTION)
        }
      })

      /** The documents of a resolved source; a source that carries its snippets (a website, an OpenAPI document) gives them. */
      const documents = (
        source: ResolvedSource,
        onFile?: ((file: Documents.FileRead) => Effect.Effect<void>) | undefined
      ): Effect.Effect<{ readonly files: number; readonly snippets: ReadonlyArray<Snippet> }, IndexFailed> =>
        source.snippets === undefined
          ? read(source, onFile)
          : Effect.as(
            onFile === undefined
              ? Effect.void
              : onFile({ path: source.location, snippets: source.snippets.length, filesRead: 1, totalFiles: 1 }),
            { files: 1, snippets: source.snippets }
          )

      return Sources.of({
        resolve,
        read: (source, onFile) =>
          Effect.map(documents(source, onFile), ({ files, snippets }) => ({ files, snippets: snippets.map(storableSnippet) }))
      })
    })
  )

  /** With the Node file system and processes. */
  static readonly layer = Sources.layerNoDeps.pipe(Layer.provide(NodeServices.layer))
}
