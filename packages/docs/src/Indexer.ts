/**
 * The indexer: reads a library's documentation from a source (sources/: folder, npm, git), splits it
 * into snippets (Splitter.ts) and makes them live through the index writer (IndexStore.ts). This file
 * is the orchestration: add, enqueue, refresh, remove, list, and the progress of a run.
 *
 * Refresh states of a version: `queued` (registered by `enqueue`, nothing read yet) → `indexing` (a run
 * has started: `add`, `refresh`) → `ready` | `failed`. A run that is interrupted puts its version back
 * to `queued`; one whose process dies leaves it `indexing` with its run lock free (RunLocks.ts), which
 * lists it `queued`. `unfinished` lists them, and a docs-api takes them up (`resume`, DefaultLibraries.ts).
 *
 * Every run holds its version's run lock while it runs. A second run of a version (an `add` or
 * `refresh`, in this process or another) waits for the first to end, changing nothing meanwhile, and
 * logs once whose run it waits for; `resume` leaves such a version to its run.
 */
import { LibraryIdPattern } from "@svc/schema"
import { Cause, Context, Deferred, Duration, Effect, Layer, Option, Schema, type Scope } from "effect"
import * as path from "node:path"
import { IndexStore, type LibraryListing, type StartedVersion, type UnfinishedVersion, type VersionBusy } from "./IndexStore.ts"
import { SourceRoots } from "./sources/Roots.ts"
import { type ResolveOptions, Sources } from "./sources/Sources.ts"
import { checkVersionedId, type FetchProgress, type IndexFailed, type ResolvedSource } from "./sources/Source.ts"

/** How long a run that waits for another run of its version waits before it tries again. */
export const BUSY_RETRY = Duration.seconds(1)

export class UnknownLibrary extends Schema.TaggedError<UnknownLibrary>()("UnknownLibrary", {
  libraryId: Schema.String,
  message: Schema.String
}) {}

/** Progress of one run, for the CLI's lines. */
export type IndexProgress =
  /** While the source resolves: a clone begins, a web page is fetched (sources/Source.ts). */
  | FetchProgress
  /** `root`: the folder read; for a git or web source its URL (without credentials), the copy being temporary. */
  /**
   * Another run of the version (`holder`: its process, in words) holds its run lock: this one starts
   * when that one ends. Told once per holder, so a caller over the RPC sees why nothing moves.
   */
  | { readonly _tag: "Waiting"; readonly libraryId: string; readonly holder: string }
  | { readonly _tag: "Started"; readonly libraryId: string; readonly version: string; readonly root: string }
  | { readonly _tag: "FileRead"; readonly path: string; readonly snippets: number; readonly filesRead: number; readonly totalFiles: number }
  | { readonly _tag: "Stored"; readonly snippets: number; readonly tokens: number }

export interface IndexOutcome {
  readonly libraryId: string
  readonly version: string
  readonly files: number
  readonly snippets: number
  readonly tokens: number
}

export interface IndexOptions extends ResolveOptions {
  /**
   * The operator's trust in this library's docs, 0 to 10 (`TrustScore`): ranks libraries whose names
   * match equally well. A new library without it gets 5; a re-index without it keeps the library's.
   */
  readonly trust?: number | undefined
  readonly onProgress?: ((progress: IndexProgress) => Effect.Effect<void>) | undefined
}

export class Indexer extends Context.Service<Indexer, {
  /**
   * Resolves a source (`npm:<pkg>`, a folder path, a git URL) without reading its docs. A git source is
   * cloned: the clone is removed when the scope closes.
   */
  readonly resolve: (source: string, options?: IndexOptions) => Effect.Effect<ResolvedSource, IndexFailed, Scope.Scope>
  /**
   * Indexes a source as a library version (created or re-indexed) and makes it the library's default.
   * While another run of that version goes on (in any process), it waits for that run's end.
   */
  readonly add: (source: string, options?: IndexOptions) => Effect.Effect<IndexOutcome, IndexFailed>
  /**
   * Registers resolved sources' libraries and versions in state `queued` (all or none), without reading
   * anything, each version its library's default (as `add` would make it). Indexing one later is a
   * `refresh` of `/owner/repo/version`; `unfinished` lists what waits. A version being indexed stays
   * `indexing`.
   */
  readonly enqueue: (sources: ReadonlyArray<ResolvedSource>) => Effect.Effect<void>
  /**
   * Reads a library's source again into `/owner/repo` (its default version) or `/owner/repo/version`.
   * While another run of that version goes on (in any process), it waits for that run's end.
   */
  readonly refresh: (libraryId: string, options?: IndexOptions) => Effect.Effect<IndexOutcome, IndexFailed | UnknownLibrary>
  /**
   * Takes up `/owner/repo/version` as `refresh` does if it is still unfinished and no run holds it (one
   * that was queued, interrupted, or whose process died); none when it finished meanwhile, was removed,
   * or a run (here or in another process) holds it. Two processes resuming one version at once: one
   * runs it, the other gets none.
   */
  readonly resume: (libraryId: string, options?: IndexOptions) => Effect.Effect<Option.Option<IndexOutcome>, IndexFailed | UnknownLibrary>
  /**
   * Versions whose refresh has not finished, oldest registration first: `indexing` while a run holds
   * them, `queued` while they wait for one (never read, interrupted, or their run's process died).
   */
  readonly unfinished: Effect.Effect<ReadonlyArray<UnfinishedVersion>>
  /** Removes a library (`/owner/repo`) or one version (`/owner/repo/version`); false if unknown. */
  readonly remove: (libraryId: string) => Effect.Effect<boolean>
  readonly list: Effect.Effect<ReadonlyArray<LibraryListing>>
}>()("@svc/docs/Indexer") {
  /** Needs the sources and the index writer. */
  static readonly layerNoDeps = Layer.effect(
    Indexer,
    Effect.gen(function*() {
      const sources = yield* Sources
      const store = yield* IndexStore

      /**
       * `start` (a claim of a version's run lock) tried again every {@link BUSY_RETRY} while another run
       * holds the lock; the wait is told once per holder (a `Waiting` progress event to a caller that
       * listens, else the log). A refused try changed nothing.
       */
      const whenFree = <A, R>(
        start: Effect.Effect<A, VersionBusy, R>,
        onProgress: IndexOptions["onProgress"]
      ): Effect.Effect<A, never, R> =>
        Effect.suspend(() => {
          let told: string | undefined
          // to the caller's progress when it listens (the CLI's lines, an RPC caller's stream), else the log
          const tell = (busy: VersionBusy) =>
            Effect.andThen(
              Effect.sync(() => (told = busy.holder)),
              onProgress === undefined
                ? Effect.logInfo(`${busy.message}: waiting for it to end`)
                : onProgress({ _tag: "Waiting", libraryId: busy.libraryId, holder: busy.holder })
            )
          const attempt: Effect.Effect<A, never, R> = start.pipe(
            Effect.catchTag("VersionBusy", (busy) =>
              Effect.andThen(
                told === busy.holder ? Effect.void : tell(busy),
                Effect.andThen(Effect.sleep(BUSY_RETRY), Effect.suspend(() => attempt))
              ))
          )
          return attempt
        })

      const resolve = Effect.fn("Indexer.resolve")(function*(source: string, options: IndexOptions = {}) {
        // a clone or a crawl may take minutes: its steps are reported as they happen
        return yield* checkVersionedId(yield* sources.resolve(source, { ...options, onFetch: options.onProgress }))
      })

      /**
       * Reads and stores the source's version. `held`: the caller holds the version's run lock already
       * (a refresh's `startIndexing`); otherwise the run claims it (waiting while another run has it),
       * until the caller's scope closes.
       */
      const run = Effect.fn("Indexer.run")(function*(source: ResolvedSource, options: IndexOptions, makeDefault: boolean, held: boolean) {
        // an add (not held) means its version to be the default once ready: recorded with the version,
        // so that the run finishing it, should this one be killed, promotes it too
        const registration = { makeDefault, defaultWhenReady: !held, trust: options.trust, confined: options.roots !== undefined }
        const versionId = held
          ? yield* store.register(source, "indexing", registration)
          : yield* whenFree(store.claim(source, registration), options.onProgress)
        return yield* Effect.gen(function*() {
          if (options.onProgress) {
            yield* options.onProgress({
              _tag: "Started",
              libraryId: source.libraryId,
              version: source.version,
              // an npm package's folder as found from the working directory (`node_modules/he`), not the
              // server's absolute path: over the RPC this event goes to the caller
              root: source.kind === "folder"
                ? source.root
                : source.kind === "npm"
                ? path.relative(process.cwd(), source.root)
                : source.location
            })
          }
          const onProgress = options.onProgress
          const { files, snippets } = yield* sources.read(
            source,
            onProgress === undefined ? undefined : (file) => onProgress({ _tag: "FileRead", ...file })
          ).pipe(Effect.tapError((error) => store.markFailed(versionId, error.category)))
          const tokens = yield* store.write(versionId, snippets).pipe(
            Effect.onError((cause) =>
              Cause.hasInterruptsOnly(cause) ? Effect.void : store.markFailed(versionId, "read_failed").pipe(Effect.ignore)
            )
          )
          if (options.onProgress) yield* options.onProgress({ _tag: "Stored", snippets: snippets.length, tokens })
          return { libraryId: source.libraryId, version: source.version, files, snippets: snippets.length, tokens }
        }).pipe(
          // an add whose caller went away (Ctrl-C, a cancelled RPC, a shutdown) withdraws its version's
          // claim to be the default: the resume finishes it without taking over (a killed one keeps it)
          Effect.onInterrupt(() => store.requeue(versionId, { withdrawDefault: !held }))
        )
      })

      // Scoped: a git clone is removed when the run ends, however it ends.
      // The added version becomes the default once it is ready, not when its run starts: a library
      // answered 202 "being indexed" for as long as a new version's run took, a killed run left it so
      // until the next start, and a failed one for good (an outside kill sweep). A new library is
      // created with it as its default, there being no other.
      const addOnce = Effect.fn("Indexer.add")(function*(source: string, options: IndexOptions) {
        const resolved = yield* resolve(source, options)
        const outcome = yield* run(resolved, options, false, false)
        yield* store.promote(resolved)
        return outcome
      }, Effect.scoped)

      /**
       * The adds running in this process, by what was asked (the source and every option but the
       * progress callback): an identical add joins the one running and answers its outcome, instead of
       * reading and writing the same library again (20 concurrent `AddLibrary npm:effect` ran 20 full
       * indexes). One whose run was interrupted (its caller went away) runs on its own.
       */
      const adding = new Map<string, Deferred.Deferred<IndexOutcome, IndexFailed>>()
      const add = (source: string, options: IndexOptions = {}): Effect.Effect<IndexOutcome, IndexFailed> =>
        Effect.suspend(() => {
          const { onProgress: _, ...asked } = options
          const key = JSON.stringify([source, asked])
          const running = adding.get(key)
          if (running !== undefined) {
            return Deferred.await(running).pipe(
              Effect.catchCause((cause) => Cause.hasInterruptsOnly(cause) ? add(source, options) : Effect.failCause(cause))
            )
          }
          const done = Deferred.makeUnsafe<IndexOutcome, IndexFailed>()
          adding.set(key, done)
          return addOnce(source, options).pipe(
            Effect.onExit((exit) => Effect.andThen(Effect.sync(() => adding.delete(key)), Deferred.done(done, exit)))
          )
        })

      const enqueue = Effect.fn("Indexer.enqueue")(function*(sources: ReadonlyArray<ResolvedSource>) {
        yield* store.enqueue(sources)
      })

      const parseId = (libraryId: string) => {
        const [, owner, repo, version] = libraryId.split("/")
        return { id: `/${owner}/${repo}`, version }
      }

      /**
       * A refresh (`unfinishedOnly`: a resume) of `/owner/repo[/version]`: the version's run lock and
       * state `indexing` taken at once, then its own source read again; none when `unfinishedOnly` and
       * the version is finished or gone.
       */
      const reread = Effect.fnUntraced(function*(libraryId: string, options: IndexOptions, unfinishedOnly: boolean) {
        if (!LibraryIdPattern.test(libraryId)) {
          return yield* new UnknownLibrary({
            libraryId,
            message: `${libraryId.slice(0, 200)} is not a library id: give /owner/repo or /owner/repo/version (svc docs list shows them)`
          })
        }
        const { id, version } = parseId(libraryId)
        const found = yield* store.library(id)
        if (found._tag === "None") {
          return yield* new UnknownLibrary({ libraryId, message: `No library ${libraryId} (svc docs list shows them)` })
        }
        const library = found.value
        const target = version ?? library.defaultVersion
        // Scoped: the run lock (and a git clone) until the run ends, however it ends.
        return yield* Effect.scoped(Effect.gen(function*() {
          // `indexing` from now on (a clone may take minutes); a source that cannot be resolved any more
          // (uninstalled, unreachable) makes the version `failed`, its live generation (if any) still
          // served. A resume leaves a version another run holds to that run; a refresh waits for its end.
          const start = store.startIndexing(id, target, { unfinishedOnly })
          const existing = unfinishedOnly
            ? yield* start.pipe(Effect.catchTag("VersionBusy", (busy) =>
              Effect.logDebug(`Left ${busy.libraryId} to the run that holds it (${busy.holder})`).pipe(
                Effect.as(Option.none<StartedVersion>())
              )))
            : yield* whenFree(start, options.onProgress)
          if (existing._tag === "None") {
            if (unfinishedOnly) return Option.none<IndexOutcome>()
            // a refresh re-reads a version the library has; a new one is added (svc docs add --version)
            return yield* new UnknownLibrary({
              libraryId,
              message: `${id} has no version ${target} to refresh (svc docs list shows its versions; svc docs add <source> --version ${target} adds one)`
            })
          }
          // the version's own source: one added but not ready yet is not the library's (that is the
          // previous default's until it takes over)
          const { versionId } = existing.value
          const location = existing.value.location ?? library.location
          // a run nobody asked for (a resume, a scheduled refresh) of a version a remote caller's run
          // last read: under the roots as they are now, as that caller's own refresh would be
          const runOptions = options.roots === undefined && existing.value.confined
            ? { ...options, roots: yield* Effect.orDie(SourceRoots) }
            : options
          return yield* Effect.gen(function*() {
            const source = yield* resolve(location, { ...runOptions, id, version: target }).pipe(
              Effect.tapError((error) => store.markFailed(versionId, error.category))
            )
            const outcome = yield* run(source, runOptions, false, true)
            // the default version read again: its title, description and rules as the source says now; or
            // an add's version whose own run was killed (a scheduled refresh's, a `svc docs add`'s): it
            // becomes the default now that it is ready, as that add would have made it
            if (target === library.defaultVersion || existing.value.defaultWhenReady) yield* store.promote(source)
            return Option.some(outcome)
          }).pipe(
            // back to `queued` before the run lock goes with the scope's end: no other process sees the
            // version `indexing` and free
            Effect.onInterrupt(() => store.requeue(versionId))
          )
        }))
      })

      const refresh = Effect.fn("Indexer.refresh")(function*(libraryId: string, options: IndexOptions = {}) {
        // a version that does not exist is UnknownLibrary above: a refresh always has an outcome
        return Option.getOrThrow(yield* reread(libraryId, options, false))
      })

      const resume = Effect.fn("Indexer.resume")(function*(libraryId: string, options: IndexOptions = {}) {
        return yield* reread(libraryId, options, true)
      })

      const remove = Effect.fn("Indexer.remove")(function*(libraryId: string) {
        const { id, version } = parseId(libraryId)
        return yield* store.remove(id, version)
      })

      return Indexer.of({ resolve, add, enqueue, refresh, resume, unfinished: store.unfinished, remove, list: store.list })
    })
  )

  /** On Postgres, with the Node file system; also provides the index writer (`IndexStore`). Needs `SqlClient`. */
  static readonly layer = Indexer.layerNoDeps.pipe(Layer.provide(Sources.layer), Layer.provideMerge(IndexStore.layer))
}
