/**
 * `npm:<package>`: the package installed in the nearest `node_modules` (from the working directory
 * up; nothing is downloaded), read like a folder. Library id from its package.json `repository`
 * (`/owner/repo`; a monorepo's package gets `/owner/<name>`), else `/npm/<name>` (`@scope/name` →
 * `/scope/name`).
 *
 * A library's content is its own: a package of a monorepo (its `repository.directory` is set) whose
 * main package (the one named after the repository, from the same repository) is installed leaves out
 * the files that main package ships at the same paths. `@effect/vitest`, `@effect/sql-pg` and
 * `@effect/platform-node` each ship a copy of effect's `ai-docs/`, `AGENTS.md` and `CLAUDE.md`: they are
 * indexed once, under effect. A package's root README is always its own.
 */
import { Effect, FileSystem, Path } from "effect"
import { describePackageFolder } from "./Folder.ts"
import { formatOf } from "../Splitter.ts"
import { IndexFailed, invalidSource, readPackageJson, repositoryId, type Source, type SourceOptions } from "./Source.ts"

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
          // the server's folders are not named: over the RPC this message goes to the caller
          message: `npm package ${name} is not installed (no node_modules/${name} in the working directory or a folder above it)`
        })
      }
      dir = parent
    }
  })

  /**
   * The documentation files of the package at `root` that the main package of its monorepo ships at the
   * same paths (relative paths; none when it is not a monorepo's package or the main one is absent).
   */
  const sharedWithMainPackage = Effect.fnUntraced(function*(name: string, root: string) {
    const pkg = yield* readPackageJson(root)
    const repository = repositoryId(pkg.repository)
    const directory = typeof pkg.repository === "object" && pkg.repository !== null
      ? (pkg.repository as { directory?: unknown }).directory
      : undefined
    if (repository === undefined || typeof directory !== "string" || directory === "") return []
    const mainName = repository.split("/")[2]!
    if (mainName === name) return []
    const main = yield* findInstalled(mainName).pipe(Effect.option)
    if (main._tag === "None" || repositoryId((yield* readPackageJson(main.value)).repository) !== repository) return []
    const files = yield* fs.readDirectory(root, { recursive: true }).pipe(Effect.orElseSucceed(() => []))
    const shared: Array<string> = []
    for (const file of files.map((file) => file.split(path.sep).join("/"))) {
      if (/^readme\./i.test(file) || file.split("/").includes("node_modules") || formatOf(file) === undefined) continue
      if (yield* fs.exists(path.join(main.value, file)).pipe(Effect.orElseSucceed(() => false))) shared.push(file)
    }
    return shared
  })

  const resolve = Effect.fnUntraced(function*(source: string, options: SourceOptions) {
    if (!source.startsWith("npm:")) return undefined
    const name = source.slice(4)
    if (!/^(@[\w.-]+\/)?[\w.-]+$/.test(name)) return yield* invalidSource(`"${name}" is not an npm package name`)
    const root = yield* findInstalled(name)
    const resolved = yield* describePackageFolder(root, { kind: "npm", location: `npm:${name}`, fallbackId: npmFallbackId(name) }, options)
    const shared = yield* sharedWithMainPackage(name, root)
    return shared.length === 0 ? resolved : { ...resolved, exclude: [...(resolved.exclude ?? []), ...shared] }
  }, Effect.provideService(FileSystem.FileSystem, fs), Effect.provideService(Path.Path, path))

  return { kind: "npm", resolve } satisfies Source
})
