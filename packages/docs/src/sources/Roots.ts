/**
 * Sources from a remote caller (the docs RPC): a folder, a local git repository (path or `file://`
 * URL) must lie under one of the operator's folders (`DOCS_SOURCE_ROOTS`), real paths compared
 * (symlinks resolved), and is read through its real path. No roots: no local source at all. npm
 * packages and remote git URLs are not affected. A missing path is `source_not_found` only under a
 * root: outside, the answer would tell a caller which paths exist on the server.
 */
import { Config, Effect, FileSystem, Option, Path } from "effect"
import * as NodePath from "node:path"
import { FILE_URL, isRemoteGitUrl } from "./Git.ts"
import { IndexFailed } from "./Source.ts"

/** `DOCS_SOURCE_ROOTS`: the folders under which a remote caller's local sources must lie (none by default). */
export const SourceRoots: Config.Config<ReadonlyArray<string>> = Config.String("DOCS_SOURCE_ROOTS").pipe(
  Config.withDefault(""),
  Config.map((value) => value.split(NodePath.delimiter).map((root) => root.trim()).filter((root) => root !== ""))
)

export const make = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path

  /** Whether `child` is `parent` or inside it (both real, absolute paths). */
  const isWithin = (parent: string, child: string) => {
    const relative = path.relative(parent, child)
    return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative))
  }

  /**
   * A local source (folder, git path, `file://` URL) as its real path, if that lies under one of
   * `roots` (see the module comment); anything else unchanged.
   */
  const confine = Effect.fnUntraced(function*(source: string, roots: ReadonlyArray<string>) {
    if (source.startsWith("npm:")) return source
    if (isRemoteGitUrl(source)) return source
    const isFileUrl = FILE_URL.test(source)
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

  return confine
})
