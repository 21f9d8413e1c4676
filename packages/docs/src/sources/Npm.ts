/**
 * `npm:<package>`: the package installed in the nearest `node_modules` (from the working directory
 * up; nothing is downloaded), read like a folder. Library id from its package.json `repository`
 * (`/owner/repo`; a monorepo's package gets `/owner/<name>`), else `/npm/<name>` (`@scope/name` →
 * `/scope/name`).
 */
import { Effect, FileSystem, Path } from "effect"
import { describePackageFolder } from "./Folder.ts"
import { IndexFailed, invalidSource, type Source, type SourceOptions } from "./Source.ts"

/** `/npm/<name>`; a scoped `@scope/name` becomes `/scope/name`. */
export const npmFallbackId = (name: string): string =>
  name.startsWith("@") ? `/${name.slice(1)}`.toLowerCase() : `/npm/${name}`.toLowerCase()

export const make = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path

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

  const resolve = Effect.fnUntraced(function*(source: string, options: SourceOptions) {
    if (!source.startsWith("npm:")) return undefined
    const name = source.slice(4)
    if (!/^(@[\w.-]+\/)?[\w.-]+$/.test(name)) return yield* invalidSource(`"${name}" is not an npm package name`)
    const root = yield* findInstalled(name)
    return yield* describePackageFolder(root, { kind: "npm", location: `npm:${name}`, fallbackId: npmFallbackId(name) }, options)
  }, Effect.provideService(FileSystem.FileSystem, fs), Effect.provideService(Path.Path, path))

  return { kind: "npm", resolve } satisfies Source
})
