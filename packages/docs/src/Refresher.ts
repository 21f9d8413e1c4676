/**
 * Scheduled refresh of git and npm sources (`DOCS_REFRESH_INTERVAL`, a duration of at least a minute
 * such as `6 hours`; unset: no scheduled refresh, the default).
 *
 * Every `DOCS_REFRESH_INTERVAL`, one pass over the libraries whose source is a git repository or an
 * npm package, run by **one process per database** however many docs-api processes share it (the
 * claim in RefreshStore.ts: a conditional update of one row, with a lease renewed while the pass
 * works and taken over once it expires if the process died). Each library is re-indexed **only when
 * its source changed**:
 *
 * - **git**: `git ls-remote` of its stored URL (and `#ref`, else HEAD) gives the commit, compared
 *   with the commit it was last read at; a library whose default version label is that commit's short
 *   hash counts as unchanged (never checked before, or a killed pass's add finished by a resume);
 * - **npm**: the version installed in node_modules now, compared with the one it was last read at and
 *   with its default version.
 *
 * A changed source is indexed like `svc docs add <source> --id <id>`: under its new version (the
 * new tag or short hash, the new package version), which becomes the default once it is ready (the
 * previous one keeps answering meanwhile, and stays the default if the run fails); the older
 * versions stay. The refresh states show it as any run (`indexing`, then `ready` or `failed`, in
 * `svc docs list` and the API's `state`). A source that cannot be checked (unreachable, uninstalled)
 * is logged and left as it is until the next pass.
 */
import { Settings } from "@svc/platform"
import { Config, Duration, Effect, Layer, Option, Schedule, Stream } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import * as os from "node:os"
import { Indexer } from "./Indexer.ts"
import { RefreshStore, type RefreshableLibrary } from "./RefreshStore.ts"
import { GIT_ENV, GitSettings, networkOptions } from "./sources/Git.ts"

/** `DOCS_REFRESH_INTERVAL`: none when unset. */
export const RefreshInterval = Config.option(Settings.durationSetting("DOCS_REFRESH_INTERVAL", undefined))

/** The shortest interval accepted: a pass checks every git remote. */
export const MIN_INTERVAL = Duration.minutes(1)

/** How long a claim holds without renewal; renewed every third of it while a pass works. */
export const LEASE = Duration.minutes(5)

/** What a pass did with one library. */
export interface LibraryCheck {
  readonly libraryId: string
  readonly outcome: "unchanged" | "reindexed" | "failed"
  readonly revision?: string | undefined
  readonly message?: string | undefined
}

/** The commit `git ls-remote` reports for a stored git location (`url#ref`, else HEAD). */
const remoteCommit = Effect.fnUntraced(function*(location: string) {
  const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
  const settings = yield* GitSettings
  const hash = location.lastIndexOf("#")
  const url = hash === -1 ? location : location.slice(0, hash)
  const ref = hash === -1 ? "HEAD" : location.slice(hash + 1)
  // the same outbound guard as the clone's (sources/Git.ts)
  const network = yield* networkOptions(url, url, settings)
  const output = yield* Effect.scoped(Effect.gen(function*() {
    const handle = yield* spawner.spawn(ChildProcess.make(settings.binary, [...network.args, "ls-remote", "--", url, ref], {
      env: { ...GIT_ENV, ...network.env },
      extendEnv: true,
      stdin: "ignore",
      forceKillAfter: "2 seconds"
    }))
    const [stdout, exitCode] = yield* Effect.all(
      [handle.stdout.pipe(Stream.decodeText(), Stream.mkString), handle.exitCode, handle.stderr.pipe(Stream.runDrain)],
      { concurrency: "unbounded" }
    )
    return { stdout, exitCode: Number(exitCode) }
  })).pipe(Effect.timeout(settings.cloneTimeout))
  const lines = output.stdout.split("\n").map((line) => line.trim().split(/\s+/)).filter((parts) => parts.length === 2)
  // a tag's peeled line (`refs/tags/v1^{}`) names the commit; else the first line
  const line = lines.find((parts) => parts[1]!.endsWith("^{}")) ?? lines[0]
  if (output.exitCode !== 0 || line === undefined) return yield* Effect.fail(new Error(`git ls-remote found no ${ref} at ${url}`))
  return line[0]!
})

/**
 * One pass if this process can claim it (see the module comment); the checks made, or none when
 * another process holds the pass or it is not due.
 */
export const refreshOnce = Effect.fn("Refresher.refreshOnce")(function*(holder: string, interval: Duration.Duration) {
  const store = yield* RefreshStore
  if (!(yield* store.claim(holder, { interval, lease: LEASE }))) {
    yield* Effect.logDebug("Scheduled refresh: not due, or another process has the pass")
    return Option.none<ReadonlyArray<LibraryCheck>>()
  }
  const indexer = yield* Indexer
  return yield* Effect.gen(function*() {
    yield* Effect.forkScoped(
      store.renew(holder, LEASE).pipe(Effect.repeat(Schedule.spaced(Duration.divideUnsafe(LEASE, 3))), Effect.ignore),
      { startImmediately: true }
    )
    const checks: Array<LibraryCheck> = []
    const libraries: ReadonlyArray<RefreshableLibrary> = yield* store.libraries
    for (const library of libraries) {
      checks.push(yield* checkLibrary(library).pipe(
        Effect.catchCause((cause) =>
          Effect.succeed<LibraryCheck>({ libraryId: library.id, outcome: "failed", message: String(cause) })
        )
      ))
    }
    return Option.some(checks as ReadonlyArray<LibraryCheck>)
  }).pipe(Effect.scoped, Effect.ensuring(store.release(holder)))

  function checkLibrary(library: RefreshableLibrary) {
    return Effect.gen(function*() {
      const stored = yield* store.revision(library.id)
      let current: string
      let unchanged: boolean
      if (library.kind === "git") {
        current = yield* remoteCommit(library.location)
        // the default already that commit: a pass killed mid-add whose version a resume finished (and
        // made the default) left its check unrecorded; reading it again would change nothing
        const isDefault = library.defaultVersion.length >= 7 && current.startsWith(library.defaultVersion)
        unchanged = isDefault || (Option.isSome(stored) && stored.value === current)
      } else {
        current = (yield* Effect.scoped(indexer.resolve(library.location, { id: library.id }))).version
        unchanged = current === library.defaultVersion || (Option.isSome(stored) && stored.value === current)
      }
      if (unchanged) {
        yield* store.setRevision(library.id, current)
        return { libraryId: library.id, outcome: "unchanged", revision: current } satisfies LibraryCheck
      }
      const outcome = yield* indexer.add(library.location, { id: library.id })
      yield* store.setRevision(library.id, current)
      yield* Effect.logInfo(`Refreshed ${library.id}: ${outcome.version} (${current.slice(0, 12)}), ${outcome.snippets} snippets`)
      return { libraryId: library.id, outcome: "reindexed", revision: current } satisfies LibraryCheck
    }).pipe(
      Effect.catch((error) => {
        const message = error instanceof Error ? error.message : (error as { message?: string }).message ?? String(error)
        return Effect.logWarning(`Could not refresh ${library.id}: ${message}`).pipe(
          Effect.as<LibraryCheck>({ libraryId: library.id, outcome: "failed", message })
        )
      })
    )
  }
})

/**
 * The refresher of a docs-api: with `DOCS_REFRESH_INTERVAL` set, a background fiber that tries to
 * claim a pass every minute (or every interval, if shorter) for the service's life.
 */
export const layer = Layer.effectDiscard(Effect.gen(function*() {
  const interval = yield* RefreshInterval
  if (Option.isNone(interval)) return
  if (Duration.isLessThan(interval.value, MIN_INTERVAL)) {
    return yield* Effect.fail(new Error(`DOCS_REFRESH_INTERVAL is ${Duration.format(interval.value)}: it must be at least 1 minute (or unset: no scheduled refresh)`))
  }
  const holder = `${os.hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 10)}`
  const poll = Duration.min(interval.value, Duration.minutes(1))
  yield* Effect.logInfo(`Scheduled refresh of git and npm sources every ${Duration.format(interval.value)}`)
  yield* Effect.forkScoped(
    refreshOnce(holder, interval.value).pipe(
      Effect.catchCause((cause) => Effect.logWarning("A scheduled refresh pass failed", cause)),
      Effect.repeat(Schedule.spaced(poll))
    )
  )
}))
