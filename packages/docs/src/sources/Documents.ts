/**
 * The documents of a resolved source: the documentation files under its folder, read and split into
 * snippets (Splitter.ts), the same for every kind of source.
 *
 * Read: `.md`, `.mdx`, `.markdown`, `.rst`, `.txt`, as UTF-8 (UTF-16 with a byte order mark as such).
 * Skipped: `node_modules`, `.git` and every hidden folder, `dist`, `build`, `coverage`; files over 1 MB;
 * binary files (see {@link decodeText}); licence, changelog, notice and code-of-conduct files; each file
 * skipped for its size or content is logged (`Skipped docs/logo.md: …`). The root README comes first (it opens a version's snippets). A `svc.json` at the root narrows
 * the files to its `folders` and leaves out its `exclude` (RepoConfig.ts). Reading stops with a failure
 * past `DOCS_MAX_SNIPPETS` snippets (Source.ts).
 */
import { Effect, FileSystem, Path, type PlatformError } from "effect"
import { formatOf, MIN_CODE_CHARS, MIN_PROSE_CHARS, type Snippet, split } from "../Splitter.ts"
import { isUnder } from "./RepoConfig.ts"
import { IndexFailed, maxSnippets, type ResolvedSource, tooManySnippets } from "./Source.ts"
import { withSourceLinks, withSourceUrl } from "./SourceLinks.ts"

/** Files bigger than this are generated or vendored, not documentation. */
export const MAX_FILE_BYTES = 1_000_000
/** Folders never read. */
const SKIPPED_DIRECTORIES = new Set(["node_modules", ".git", "dist", "build", "coverage"])
/** Legal text and release notes match every question and answer none. */
const SKIPPED_FILES = /^(licen[cs]e|copying|changelog|history|notice|code_of_conduct)([.-]|$)/i

/** How much of a file's start is looked at to tell text from binary content (git looks at 8,000 bytes). */
const SNIFF_CHARS = 8000
/** Characters that text does not hold: C0 controls but tab, line feed, vertical tab, form feed and carriage return; DEL; U+FFFD (a byte that is not UTF-8). */
const NOT_TEXT = /[\u0000-\u0008\u000e-\u001f\u007f\ufffd]/g

/**
 * A file's text: UTF-16 when it starts with that byte order mark (what Windows editors write), else
 * UTF-8 (its byte order mark dropped; a byte that is not UTF-8 becomes U+FFFD, so Latin-1 prose still
 * reads). Undefined for binary content: more than a tenth of its first {@link SNIFF_CHARS} characters
 * are control characters or bytes that are not UTF-8 — an image, archive or build artefact named `.md`
 * was read as tens of snippets of mojibake, while a document with a stray NUL (dropped later, Sources.ts)
 * is still text.
 */
export const decodeText = (bytes: Uint8Array): string | undefined => {
  const encoding = bytes[0] === 0xff && bytes[1] === 0xfe ? "utf-16le" : bytes[0] === 0xfe && bytes[1] === 0xff ? "utf-16be" : "utf-8"
  const text = new TextDecoder(encoding).decode(bytes)
  const start = text.slice(0, SNIFF_CHARS)
  return (start.match(NOT_TEXT)?.length ?? 0) > start.length / 10 ? undefined : text
}

/** One file read: its path relative to the root, its snippets, and how far the reading is. */
export interface FileRead {
  readonly path: string
  readonly snippets: number
  readonly filesRead: number
  readonly totalFiles: number
}

export const make = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path

  /**
   * Where a file or folder of a source is, as a message names it: a folder's own path; for any other
   * source its location (`npm:he`, the git or web URL) and the path inside it — the folder read is a
   * temporary clone or copy, or over the RPC the server's node_modules, which the caller is not told.
   */
  const shown = (source: ResolvedSource, relative: string) =>
    source.kind === "folder"
      ? path.join(source.root, relative)
      : relative === ""
      ? source.location
      : `${relative} of ${source.location}`

  /** A file system failure as a message: the path only where {@link shown} would show it. */
  const failure = (source: ResolvedSource, error: PlatformError.PlatformError) =>
    source.kind === "folder" ? error.message : error.reason._tag

  /** Documentation files under `root`, relative and sorted (deterministic snippet order). */
  const listFiles = (source: ResolvedSource) => {
    const root = source.root
    const walk = (relative: string): Effect.Effect<ReadonlyArray<string>, IndexFailed> =>
      fs.readDirectoryEntries(path.join(root, relative)).pipe(
        Effect.mapError((error) =>
          new IndexFailed({ category: "read_failed", message: `Cannot list ${shown(source, relative)}: ${failure(source, error)}` })
        ),
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

  /** Reads and splits every file, reporting each to `onFile`. */
  const collect = Effect.fnUntraced(function*(
    source: ResolvedSource,
    onFile?: ((file: FileRead) => Effect.Effect<void>) | undefined
  ) {
    // `svc.json`'s folders and exclusions (RepoConfig.ts)
    const files = (yield* listFiles(source)).filter((file) =>
      (source.include === undefined || source.include.some((entry) => isUnder(file, entry))) &&
      !(source.exclude ?? []).some((entry) => isUnder(file, entry))
    )
    const max = yield* maxSnippets
    const snippets: Array<Snippet> = []
    let filesRead = 0
    for (const file of files) {
      const full = path.join(source.root, file)
      const size = yield* fs.stat(full).pipe(Effect.map((info) => Number(info.size)), Effect.orElseSucceed(() => Infinity))
      if (size > MAX_FILE_BYTES) {
        yield* Effect.logWarning(`Skipped ${file}: ${Number.isFinite(size) ? "over 1 MB" : "cannot be read"}`)
        continue
      }
      const bytes = yield* fs.readFile(full).pipe(
        Effect.mapError((error) => new IndexFailed({ category: "read_failed", message: `Cannot read ${shown(source, file)}: ${failure(source, error)}` }))
      )
      const content = decodeText(bytes)
      if (content === undefined) {
        yield* Effect.logWarning(`Skipped ${file}: binary content, not text`)
        continue
      }
      const pageUrl = source.pageUrls?.get(file)
      const found = pageUrl === undefined
        ? withSourceLinks(split(content, file), content, source.linkBase)
        : withSourceUrl(split(content, file), pageUrl)
      snippets.push(...found)
      if (snippets.length > max) return yield* tooManySnippets(source.location, max)
      filesRead++
      if (onFile) yield* onFile({ path: file, snippets: found.length, filesRead, totalFiles: files.length })
    }
    if (snippets.length === 0) {
      return yield* new IndexFailed({
        category: "no_documents",
        message: filesRead === 0
          ? `No documentation found in ${shown(source, "")} (.md, .mdx, .rst, .txt outside node_modules and .git)`
          : `No documentation found in ${shown(source, "")}: ${filesRead} file${filesRead === 1 ? "" : "s"} read, every section too short ` +
            `to be a snippet (prose under ${MIN_PROSE_CHARS} characters and code under ${MIN_CODE_CHARS} are left out)`
      })
    }
    return { files: filesRead, snippets }
  })

  return collect
})
