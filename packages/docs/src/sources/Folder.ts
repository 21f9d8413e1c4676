/**
 * A local folder (a git working tree is just a folder: `.git` is skipped when reading). Library id from
 * `--id`, else the `repository` field of its `package.json`, else `/local/<folder name>`; version from
 * `--version`, else package.json's `version`, else `latest`.
 *
 * {@link describePackageFolder} is shared with the npm source: an installed package is a folder too.
 */
import { Effect, FileSystem, Option, Path } from "effect"
import {
  checkLibraryId,
  checkVersion,
  IndexFailed,
  packageLibraryId,
  readPackageJson,
  resolvedSource,
  type Source,
  type SourceOptions
} from "./Source.ts"

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
  if (Option.isNone(info) || info.value.type !== "Directory") {
    return yield* new IndexFailed({ category: "source_not_found", message: `${root} is not a folder` })
  }
  const pkg = yield* readPackageJson(root)
  const libraryId = yield* checkLibraryId((options.id ?? packageLibraryId(pkg) ?? source.fallbackId).replace(/\/+$/, ""))
  const version = yield* checkVersion(options.version ?? pkg.version ?? "latest")
  return resolvedSource(pkg, { kind: source.kind, location: source.location, root, libraryId, version })
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
