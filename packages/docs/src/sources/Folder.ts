/**
 * A local folder (a git working tree is just a folder: `.git` is skipped when reading). Library id from
 * `--id`, else the `repository` field of its `package.json`, else `/local/<folder name>`; version from
 * `--version`, else package.json's `version`, else `latest`. Title from `--title`, else package.json's
 * `name`, else the docs' own: the README's first heading (else the first heading of a Markdown file at
 * the top, else one folder down); description from `--description`, else package.json's, else the
 * README's first paragraph of prose (badges and HTML left out). Never the folder's name when the docs
 * name themselves.
 *
 * {@link describePackageFolder} is shared with the npm source: an installed package is a folder too.
 */
import { Effect, FileSystem, Option, Path } from "effect"
import { readMarkdown } from "../Splitter.ts"
import { repositoryBase, repositoryDirectory, repositoryUrl } from "./SourceLinks.ts"
import {
  checkLibraryId,
  checkVersion,
  IndexFailed,
  packageLibraryId,
  type PackageJson,
  readPackageJson,
  type ResolvedSource,
  resolvedSource,
  type Source,
  type SourceOptions
} from "./Source.ts"

/** Longest title and description taken from the docs (a library listing shows them on one line). */
export const MAX_TITLE_CHARS = 100
export const MAX_DESCRIPTION_CHARS = 300

/** Markdown inline text as plain text: images (badges) and HTML go, links keep their text. */
const plainText = (text: string): string =>
  text.replace(/!\[[^\]]*\]\([^)]*\)/g, "").replace(/\[([^\]]*)\]\([^)]*\)/g, "$1").replace(/<[^>]*>/g, "")
    .replace(/[`*_]/g, "").replace(/\s+/g, " ").trim()

/** At most `max` characters, cut at a word with "…". */
export const clip = (text: string, max: number): string =>
  text.length <= max ? text : `${text.slice(0, max - 1).replace(/\s+\S*$/, "")}…`

const MARKDOWN = /\.(md|mdx|markdown)$/i
const README = /^readme\.(md|mdx|markdown)$/i

/**
 * What a folder's docs say they are: the first heading and the first prose paragraph after it of its
 * README (a Markdown one), else of the first Markdown file at the top, else one folder down (sorted,
 * hidden folders and node_modules skipped). Either may be missing.
 */
export const describeDocs = Effect.fnUntraced(function*(root: string) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const entries = (dir: string) =>
    fs.readDirectoryEntries(dir).pipe(
      Effect.map((list) => [...list].sort((a, b) => a.name.localeCompare(b.name))),
      Effect.orElseSucceed(() => [])
    )
  const top = yield* entries(root)
  const topFiles = top.filter((entry) => entry.type === "File" && MARKDOWN.test(entry.name)).map((entry) => entry.name)
  const candidates = [...topFiles.filter((name) => README.test(name)), ...topFiles.filter((name) => !README.test(name))]
  for (const dir of top.filter((entry) => entry.type === "Directory" && !entry.name.startsWith(".") && entry.name !== "node_modules")) {
    const inner = yield* entries(path.join(root, dir.name))
    const files = inner.filter((entry) => entry.type === "File" && MARKDOWN.test(entry.name)).map((entry) => `${dir.name}/${entry.name}`)
    candidates.push(...files.filter((name) => README.test(path.basename(name))), ...files.filter((name) => !README.test(path.basename(name))))
  }
  for (const file of candidates) {
    const content = yield* fs.readFileString(path.join(root, file)).pipe(Effect.orElseSucceed(() => ""))
    const blocks = readMarkdown(content.slice(0, 200_000))
    const index = blocks.findIndex((block) => block._tag === "Heading" && plainText(block.text) !== "")
    if (index === -1) continue
    const title = plainText((blocks[index] as { readonly text: string }).text)
    let description: string | undefined
    for (const block of blocks.slice(index + 1)) {
      if (block._tag !== "Paragraph") continue
      const text = plainText(block.text)
      // a paragraph of badges or of HTML alone says nothing
      if (text.length >= 20) {
        description = clip(text, MAX_DESCRIPTION_CHARS)
        break
      }
    }
    return { title: clip(title, MAX_TITLE_CHARS), description }
  }
  return { title: undefined, description: undefined }
})

/**
 * A resolved source of a folder: `--title`/`--description` when given, else package.json's name and
 * description, else the docs' own (see {@link describeDocs}), else the repository part of the id.
 */
export const describedSource = Effect.fnUntraced(function*(
  pkg: PackageJson,
  source: Omit<ResolvedSource, "title" | "description">,
  options: SourceOptions
) {
  const fromPackage = resolvedSource(pkg, source)
  const needsDocs = (options.title === undefined && pkg.name === undefined) ||
    (options.description === undefined && (pkg.description ?? "") === "")
  const docs = needsDocs ? yield* describeDocs(source.root) : { title: undefined, description: undefined }
  return {
    ...fromPackage,
    title: options.title ?? pkg.name ?? docs.title ?? fromPackage.title,
    description: options.description ?? (pkg.description || docs.description || "")
  } satisfies ResolvedSource
})

/**
 * A folder and what its `package.json` says, as a resolved source of `kind`; `fallbackId` when
 * neither `--id` nor the package names a repository.
 */
export const describePackageFolder = Effect.fnUntraced(function*(
  root: string,
  source: { readonly kind: "folder" | "npm"; readonly location: string; readonly fallbackId: string },
  options: SourceOptions
) {
  const fs = yield* FileSystem.FileSystem
  const info = yield* fs.stat(root).pipe(Effect.option)
  if (Option.isNone(info)) {
    return yield* new IndexFailed({ category: "source_not_found", message: `${root} does not exist` })
  }
  if (info.value.type !== "Directory") {
    return yield* new IndexFailed({ category: "source_not_found", message: `${root} is not a folder` })
  }
  const pkg = yield* readPackageJson(root)
  const libraryId = yield* checkLibraryId((options.id ?? packageLibraryId(pkg) ?? source.fallbackId).replace(/\/+$/, ""))
  const version = yield* checkVersion(options.version ?? pkg.version ?? "latest")
  // npm: the repository at the commit the package was published from (else its version's tag); a folder: its path
  const repository = repositoryUrl(pkg.repository)
  const ref = pkg.gitHead ?? (pkg.version === undefined ? undefined : `v${pkg.version}`)
  const linkBase = source.kind === "folder"
    ? `${root.replace(/[\\/]+$/, "")}/`
    : repository === undefined || ref === undefined
    ? undefined
    : repositoryBase(repository, ref, repositoryDirectory(pkg.repository))
  const described = yield* describedSource(pkg, { kind: source.kind, location: source.location, root, libraryId, version }, options)
  return { ...described, linkBase } satisfies ResolvedSource
})

/** Any path: the source of last resort (npm and git sources are recognised first). */
export const make = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const resolve = (source: string, options: SourceOptions) => {
    const root = path.resolve(source)
    return describePackageFolder(root, { kind: "folder", location: root, fallbackId: `/local/${path.basename(root).toLowerCase()}` }, options)
      .pipe(Effect.provideService(FileSystem.FileSystem, fs), Effect.provideService(Path.Path, path))
  }
  return { kind: "folder", resolve } satisfies Source
})
