/**
 * Ingestion: one run per source at a time, across every instance on the database.
 *
 * Exclusion is two-layered (DESIGN.md §5): an in-process per-source mutex (an `RcMap` of
 * `Semaphore.make(1)`, taken only if free) decides between the scheduler and manual triggers of this
 * process at once, without a round trip; then the lease row in `listings.ingest_leases` decides
 * between processes. A run that gets either refuses is `skipped` (`already_running`), never queued.
 * The lease is renewed every TTL/3 while the run goes on; a run that loses it stops. A holder that
 * dies stops renewing and its lease expires after the TTL (default 30 s).
 *
 * A run: read the adapter's stream in batches (`INGEST_BATCH_SIZE`, default 2,000), validate every
 * record (rejects are counted and skipped), upsert each batch in its own transaction; after a run
 * that read the whole feed, expire the source's offers that were not in it. Every run is a row in
 * `listings.ingest_runs`; failures are logged with their cause and stored as a category only.
 */
import { type IngestOutcome, type IngestRun, UnknownSources } from "@svc/schema"
import { isDatabaseUnavailable, postgresReason } from "@svc/platform"
import {
  Cause,
  Config,
  Context,
  Deferred,
  Duration,
  Effect,
  Exit,
  FiberSet,
  Layer,
  Option,
  RcMap,
  Result,
  Schedule,
  Scope,
  Semaphore,
  Stream
} from "effect"
import { HttpClient } from "effect/http"
import { adapterFor, FeedError } from "./adapters/index.ts"
import { ImageCacher } from "./Images.ts"
import { IngestRuns, type RunCounts, type Trigger } from "./IngestRuns.ts"
import { Leases } from "./Leases.ts"
import { GuardedHttpClient, ListingsConfig } from "./ListingsConfig.ts"
import { type FeedImage, normalize, type OfferRow } from "./Normalize.ts"
import { OfferStore } from "./OfferStore.ts"
import { type Source, Sources } from "./Sources.ts"

export type { Trigger }

/** A run's counts so far. */
export type Progress = RunCounts

/** A started or skipped run. */
export interface RunHandle {
  readonly run: IngestRun
  /** Started runs: waits for the outcome. */
  readonly outcome: Option.Option<Effect.Effect<IngestOutcome>>
  /**
   * Waits for the run's end and tells whether it was written: false when the database went away
   * during the run (its row stays unfinished until the next run marks it abandoned). True for a
   * skipped run, which has nothing to write, and for an interrupted one (it is written as such).
   */
  readonly recorded: Effect.Effect<boolean>
  /** Started runs: the counts so far. */
  readonly progress: Effect.Effect<Progress>
}

class LeaseLost extends Error {}

/** A run that wrote or expired at least this many offers refreshes the table's statistics. */
const ANALYZE_AFTER_CHANGES = 1_000

export class Ingest extends Context.Service<Ingest, {
  /**
   * Starts a run of each given source (default: every enabled one) that is not running already.
   * Unknown ids fail with `UnknownSources`; disabled ones are skipped.
   */
  readonly trigger: (options: {
    readonly sources?: ReadonlyArray<string> | undefined
    readonly trigger: Trigger
  }) => Effect.Effect<ReadonlyArray<RunHandle>, UnknownSources>
  /** Waits until no run of this process is in progress. */
  readonly awaitIdle: Effect.Effect<void>
  /**
   * Removes the offers of retired demo sources (`Sources.retiredDemoSources`): a start with
   * `ENABLE_MOCK_SOURCE=true` must not leave demo offers served as real listings, in lists or by id,
   * once it is off (the spec's "removes mock rows" at deployment, for every start).
   */
  readonly retireDemoOffers: Effect.Effect<void>
}>()("@svc/listings/Ingest") {
  /** Needs Sources, OfferStore, Leases, IngestRuns, ImageCacher, ListingsConfig, HttpClient. */
  static readonly layerNoDeps = Layer.effect(
    Ingest,
    Effect.gen(function*() {
      const sources = yield* Sources
      const runs = yield* IngestRuns
      const store = yield* OfferStore
      const leases = yield* Leases
      const images = yield* ImageCacher
      const config = yield* ListingsConfig
      const httpClient = yield* HttpClient.HttpClient
      const locks = yield* RcMap.make({ lookup: (_sourceId: string) => Semaphore.make(1) })
      const running = yield* FiberSet.make<void>()
      const renewEvery = Duration.millis(Math.max(50, Duration.toMillis(config.leaseTtl) / 3))

      // Uninterruptible except for the run's body: a run interrupted at shutdown is still recorded
      // (`interrupted`) before its fiber ends and its lease is released.
      const runSource = (source: Source, trigger: Trigger, progress: { -readonly [K in keyof Progress]: Progress[K] }) =>
        Effect.uninterruptibleMask((restore) => Effect.gen(function*() {
          const startedAt = Date.now()
          const runId = yield* runs.start(source.id, trigger, leases.holder)
          // ids of this run's valid records, as validated: no offer twice in one run, and after a
          // run that read the whole feed, the source's other offers are expired
          const seen = new Set<string>()
          const adapter = yield* adapterFor(source).pipe(Effect.provideService(HttpClient.HttpClient, httpClient))
          const batchSize = Math.max(1, config.batchSize)

          /** Counts a skipped record; the first five reasons of a run are logged. */
          const reject = (reason: string) => {
            progress.recordsRejected++
            return progress.recordsRejected <= 5
              ? Effect.logWarning(`Source ${source.id}: skipped a record: ${reason}`)
              : Effect.void
          }

          // Validating the next batch overlaps with writing this one (the buffer holds one prepared
          // batch): the CPU work in this process and the database's work proceed side by side. The
          // yield lets the writer send its statement first; without it the synchronous validation
          // ran before the write, and the two took turns (measured: no overlap at all).
          const body = adapter.read.pipe(
            Stream.grouped(batchSize),
            // per batch, not per record: interruptWhen races every pull it sees (a second of 3.4 per 100,000 offers)
            Stream.interruptWhen(Effect.andThen(
              Effect.sleep(config.feedMaxDuration),
              Effect.fail(
                new FeedError({
                  kind: "timeout",
                  message: `the feed was not read within FEED_MAX_DURATION (${Duration.format(config.feedMaxDuration)})`
                })
              )
            )),
            Stream.mapEffect((records) =>
              Effect.gen(function*() {
                yield* Effect.yieldNow
                const rows: Array<OfferRow> = []
                const batchImages: Array<FeedImage> = []
                for (const record of records) {
                  const result = normalize(source.id, record)
                  if (Result.isFailure(result)) {
                    yield* reject(result.failure)
                    continue
                  }
                  const { images, row } = result.success
                  // An offer listed twice in one feed keeps its first record: two batches are in flight
                  // at once (below), so which record would stay depended on which committed last.
                  if (seen.has(row.id)) {
                    yield* reject("nativeId appears more than once in the feed (the first record is kept)")
                    continue
                  }
                  seen.add(row.id)
                  rows.push(row)
                  for (const image of images) batchImages.push(image)
                }
                return { fetched: records.length, rows, images: batchImages }
              })
            ),
            Stream.buffer({ capacity: 1 }),
            // Two writes in flight: the next batch's statement is already at the database, waiting on
            // the writers' lock, when the current one commits (batches are independent; any order).
            Stream.mapEffect((batch) =>
              Effect.gen(function*() {
                // read the count first: `x += yield* ...` would read x before the other write's update
                const upserted = yield* store.upsertBatch(source.id, batch.rows, batch.images)
                progress.offersUpserted += upserted
                progress.offersFetched += batch.fetched
                // A run killed later keeps these counts (Leases closes it `abandoned`), not zeros.
                yield* runs.recordProgress(runId, { ...progress })
              }), { concurrency: 2 }),
            Stream.runDrain
          )

          // The lease keeps being renewed while the body runs; losing it stops the run.
          const keepLease = leases.renew(source.id, config.leaseTtl).pipe(
            Effect.flatMap((held) => held ? Effect.void : Effect.die(new LeaseLost("lease lost"))),
            Effect.repeat(Schedule.spaced(renewEvery)),
            Effect.delay(renewEvery)
          )
          const exit = yield* restore(
            Effect.raceFirst(body, Effect.andThen(keepLease, Effect.never)).pipe(
              Effect.andThen(Effect.suspend(() => store.expireVanished(source.id, [...seen])))
            )
          ).pipe(Effect.exit)
          const ok = Exit.isSuccess(exit)
          const offersExpired = ok ? exit.value : 0
          let failure: string | null = null
          if (Exit.isFailure(exit)) {
            const error = Cause.squash(exit.cause)
            if (error instanceof FeedError) {
              failure = error.kind
              yield* Effect.logWarning(`Ingest of ${source.id} failed: ${error.message}`)
            } else if (error instanceof LeaseLost) {
              failure = "lease_lost"
              yield* Effect.logError(`Ingest of ${source.id} stopped: its lease was lost`)
            } else if (Cause.hasInterruptsOnly(exit.cause)) {
              failure = "interrupted"
            } else {
              failure = "database"
              yield* Effect.logError(`Ingest of ${source.id} failed: ${postgresReason(error)}`)
            }
          }
          const outcome: IngestOutcome = {
            ok,
            offersFetched: progress.offersFetched,
            offersUpserted: progress.offersUpserted,
            recordsRejected: progress.recordsRejected,
            offersExpired,
            durationMs: Date.now() - startedAt
          }
          yield* runs.finish(runId, { ...outcome, failure })
          yield* Effect.logInfo(
            `Ingest of ${source.id} ${ok ? "done" : "failed"}: ${outcome.offersFetched} read, ` +
              `${outcome.offersUpserted} upserted, ${outcome.recordsRejected} rejected, ${offersExpired} expired, ` +
              `${outcome.durationMs} ms`
          )
          if (source.config.adapter !== "mock") yield* images.kick
          return outcome
        })).pipe(Effect.annotateLogs({ sourceId: source.id, trigger }))

      // Fresh planner statistics after a large change (a first load above all): until autovacuum
      // analyzes the table, a minute or more later, the planner knows nothing of the new rows and pages
      // were measured 25x slower (100,000 new offers: 27 instead of 700 pages/s). After the run is
      // recorded and its outcome told (analyzing 100,000 offers takes 0.8 s; the data is in already),
      // still in `running`, so awaitIdle and shutdown wait for it.
      const refreshStatistics = (outcome: IngestOutcome) =>
        outcome.offersUpserted + outcome.offersExpired < ANALYZE_AFTER_CHANGES ? Effect.void : store.refreshStatistics

      const failedOutcome = (progress: Progress): IngestOutcome => ({
        ok: false,
        ...progress,
        offersExpired: 0,
        durationMs: 0
      })

      /** Takes the mutex and the lease, or answers skipped; a started run goes on in `running`. */
      const start = (source: Source, trigger: Trigger): Effect.Effect<RunHandle> =>
        Effect.uninterruptibleMask((restore) =>
          Effect.gen(function*() {
            const skipped: RunHandle = {
              run: { sourceId: source.id, status: "skipped", reason: "already_running" },
              outcome: Option.none(),
              recorded: Effect.succeed(true),
              progress: Effect.succeed({ offersFetched: 0, offersUpserted: 0, recordsRejected: 0 })
            }
            const scope = yield* Scope.make()
            const lock = yield* RcMap.get(locks, source.id).pipe(Scope.provide(scope))
            if (!(yield* lock.takeIfAvailable(1))) {
              yield* Scope.close(scope, Exit.void)
              return skipped
            }
            const releaseLock = Effect.andThen(lock.release(1), Scope.close(scope, Exit.void))
            // A database failure is a defect of Leases. A manual trigger answers it as such (503, the
            // database is unavailable: it was "skipped, already_running", which sent the operator looking
            // for another run); a scheduled one logs it and tries again at its next turn.
            const leased = yield* restore(leases.acquire(source.id, config.leaseTtl)).pipe(
              Effect.catchDefect((defect) =>
                trigger === "manual" && isDatabaseUnavailable(defect)
                  ? Effect.andThen(releaseLock, Effect.die(defect))
                  : Effect.as(Effect.logError(`Could not take the ingest lease of ${source.id}: ${postgresReason(defect)}`), false)
              ),
              Effect.onInterrupt(() => releaseLock)
            )
            if (!leased) {
              yield* releaseLock
              return skipped
            }
            const progress = { offersFetched: 0, offersUpserted: 0, recordsRejected: 0 }
            const done = yield* Deferred.make<IngestOutcome>()
            const recorded = yield* Deferred.make<boolean>()
            yield* FiberSet.run(
              running,
              runSource(source, trigger, progress).pipe(
                Effect.tapCause((cause) =>
                  Cause.hasInterruptsOnly(cause)
                    ? Effect.void
                    : Effect.logError(`Ingest of ${source.id} could not be recorded`, cause)
                ),
                Effect.ensuring(leases.release(source.id).pipe(Effect.ignoreCause)),
                Effect.ensuring(releaseLock),
                // last: whoever waits for the outcome may start the next run at once
                Effect.onExit((exit) =>
                  Effect.andThen(
                    Deferred.succeed(recorded, Exit.isSuccess(exit) || Cause.hasInterruptsOnly(exit.cause)),
                    Deferred.succeed(done, Exit.isSuccess(exit) ? exit.value : failedOutcome(progress))
                  )
                ),
                Effect.tap(refreshStatistics),
                Effect.ignore,
                Effect.asVoid
              )
            )
            return {
              run: { sourceId: source.id, status: "started" },
              outcome: Option.some(Deferred.await(done)),
              recorded: Deferred.await(recorded),
              progress: Effect.sync(() => ({ ...progress }))
            } satisfies RunHandle
          })
        )

      const trigger = Effect.fn("Ingest.trigger")(function*(options: {
        readonly sources?: ReadonlyArray<string> | undefined
        readonly trigger: Trigger
      }) {
        let selected: ReadonlyArray<Source>
        if (options.sources === undefined || options.sources.length === 0) {
          selected = sources.all.filter((source) => source.enabled)
        } else {
          const ids = [...new Set(options.sources.map((id) => id.trim().toLowerCase()).filter((id) => id !== ""))]
          const unknown = ids.filter((id) => Option.isNone(sources.get(id)))
          if (unknown.length > 0) return yield* new UnknownSources({ sourceIds: unknown })
          selected = ids.map((id) => Option.getOrThrow(sources.get(id)))
        }
        return yield* Effect.forEach(selected, (source) =>
          source.enabled
            ? start(source, options.trigger)
            : Effect.succeed<RunHandle>({
              run: { sourceId: source.id, status: "skipped", reason: "disabled" },
              outcome: Option.none(),
              recorded: Effect.succeed(true),
              progress: Effect.succeed({ offersFetched: 0, offersUpserted: 0, recordsRejected: 0 })
            }), { concurrency: "unbounded" })
      })

      const awaitIdle = FiberSet.awaitEmpty(running)

      const retireDemoOffers = Effect.forEach(sources.retiredDemoSources, (sourceId) =>
        store.removeSource(sourceId).pipe(
          Effect.tap((removed) =>
            removed === 0
              ? Effect.void
              : Effect.logInfo(`Removed ${removed} demo offers of source ${sourceId}: ENABLE_MOCK_SOURCE is not true`)
          )
        ), { discard: true })

      return Ingest.of({ trigger, awaitIdle, retireDemoOffers })
    })
  )

  static readonly layer = Ingest.layerNoDeps.pipe(
    Layer.provide([OfferStore.layer, Leases.layer, IngestRuns.layer, GuardedHttpClient])
  )
}

/** `INGEST_ON_START` (true): every enabled source is read once when the service starts. */
export const IngestOnStart = Config.Boolean("INGEST_ON_START").pipe(Config.withDefault(true))

/**
 * Scheduled ingestion: every enabled source at start (unless `INGEST_ON_START=false`), then every
 * `INGEST_INTERVAL` (default 15 minutes). A source still running when its turn comes is skipped that
 * time. Two cases are tried again every `INGEST_LEASE_TTL`, within one interval, until a run of the
 * source ends written:
 * - at start, a source skipped as running: a process killed during a run and started again at once
 *   found the dead run's lease still valid, skipped the source, and left it half-updated until the
 *   next turn (an outside kill sweep). A lease a live process holds is renewed, so that source runs
 *   once that run is over;
 * - any scheduled run cut short by the database (its end could not be written: the database went away
 *   during it). The source was left half-updated, its status still that of the run before, for a whole
 *   interval (an outside kill of the process that owns the embedded database). By the time the lease
 *   TTL has passed, the cut-short run's lease (no longer renewed) has expired.
 */
export const IngestScheduler = Layer.effectDiscard(Effect.gen(function*() {
  const ingest = yield* Ingest
  const { ingestInterval, leaseTtl } = yield* ListingsConfig
  const onStart = yield* IngestOnStart
  yield* ingest.retireDemoOffers.pipe(
    Effect.catchCause((cause) => Effect.logWarning("Could not remove the demo offers of a retired mock source", cause)),
    Effect.forkScoped
  )
  const triesWithinInterval = Math.max(0, Math.floor(Duration.toMillis(ingestInterval) / Duration.toMillis(leaseTtl)) - 1)
  const watchers = yield* FiberSet.make()
  /** A scheduled trigger that could not start (an unknown source): logged, nothing started. */
  const notStarted = (error: { readonly message: string }) =>
    Effect.as(Effect.logError(`Scheduled ingest could not start: ${error.message}`), [])

  /** The source tried every lease TTL, at most {@link triesWithinInterval} times, until a run of it ends written. */
  const untilRecorded = (sourceId: string): Effect.Effect<void> =>
    Effect.gen(function*() {
      for (let tries = 0; tries < triesWithinInterval; tries++) {
        yield* Effect.sleep(leaseTtl)
        const [handle] = yield* ingest.trigger({ sources: [sourceId], trigger: "scheduled" }).pipe(Effect.catch(notStarted))
        if (handle?.run.status === "started" && (yield* handle.recorded)) return
      }
      if (triesWithinInterval > 0) yield* Effect.logWarning(`Ingest of ${sourceId} did not run to a written end; next try at the next turn`)
    })

  /** One turn over `sources` (every enabled one when undefined); the ids skipped as already running. */
  const turn = (sources: ReadonlyArray<string> | undefined) =>
    ingest.trigger({ sources, trigger: "scheduled" }).pipe(
      Effect.tap((handles) =>
        Effect.forEach(handles, (handle) =>
          FiberSet.run(
            watchers,
            Effect.flatMap(handle.recorded, (recorded) =>
              recorded ? Effect.void : Effect.andThen(
                Effect.logWarning(
                  `Ingest of ${handle.run.sourceId} was cut short by the database: trying again every ${Duration.format(leaseTtl)}`
                ),
                untilRecorded(handle.run.sourceId)
              ))
          ), { discard: true })
      ),
      Effect.map((handles) =>
        handles.filter((handle) => handle.run.status === "skipped" && handle.run.reason === "already_running")
          .map((handle) => handle.run.sourceId)
      ),
      Effect.tap((skipped) => skipped.length === 0 ? Effect.void : Effect.logInfo(`Scheduled ingest skipped (already running): ${skipped.join(", ")}`)),
      Effect.catch(notStarted)
    )
  if (onStart) {
    yield* turn(undefined).pipe(
      Effect.flatMap((skipped) => Effect.forEach(skipped, (sourceId) => FiberSet.run(watchers, untilRecorded(sourceId)), { discard: true })),
      Effect.forkScoped
    )
  }
  yield* turn(undefined).pipe(
    Effect.delay(ingestInterval),
    Effect.forever,
    Effect.forkScoped
  )
}))
