/**
 * What the queue keeps only for a while, removed in the background in every queue process, once a
 * minute, in batches of {@link PRUNE_BATCH} (each one short statement, its own transaction, so no lock
 * is held for long) until a batch comes back short. Several processes pruning at once take different
 * rows (`SKIP LOCKED`).
 *
 * - Events older than `QUEUE_EVENTS_RETENTION` (default 7 days).
 * - Flow-control keys nobody has used for {@link FLOW_CONTROL_IDLE} (`FlowControls.pruneIdle`): a key
 *   is a row per distinct `Svc-Flow-Control-Key` ever published, and keys per tenant or per user would
 *   otherwise pile up for ever, in `GET /v2/flow-control` and in every claim (which serves keys by
 *   turns). A paused key stays.
 */
import { postgresReason } from "@svc/platform"
import { Duration, Effect, Layer } from "effect"
import { QueueConfig } from "./QueueConfig.ts"
import { Events } from "./store/Events.ts"
import { FlowControls } from "./store/FlowControl.ts"

/** Rows deleted per statement. */
export const PRUNE_BATCH = 5000
/** How often a process looks for rows to prune. */
export const PRUNE_INTERVAL = Duration.minutes(1)
/** How long a flow-control key with nothing queued, unpaused, is kept after its last publish. */
export const FLOW_CONTROL_IDLE = Duration.days(1)

/** Runs `prune` batch by batch until one deletes fewer than a batch; the number deleted. */
const inBatches = <R>(prune: (limit: number) => Effect.Effect<number, never, R>) =>
  Effect.gen(function*() {
    let total = 0
    while (true) {
      const deleted = yield* prune(PRUNE_BATCH)
      total += deleted
      if (deleted < PRUNE_BATCH) return total
      // Leave the database to other work between batches.
      yield* Effect.sleep("50 millis")
    }
  })

/** Deletes every expired event; the number deleted. */
export const pruneExpired = Effect.gen(function*() {
  const events = yield* Events
  const retentionMs = Duration.toMillis((yield* QueueConfig).eventsRetention)
  return yield* inBatches((limit) => events.prune(retentionMs, limit))
})

/** Deletes every flow-control key idle for {@link FLOW_CONTROL_IDLE}; the number deleted. */
export const pruneIdleKeys = FlowControls.use((flows) =>
  inBatches((limit) => flows.pruneIdle(Duration.toMillis(FLOW_CONTROL_IDLE), limit))
)

/** One pruning task, its count logged at debug and a failure as a warning (the next minute tries again). */
const logged = <R>(what: string, prune: Effect.Effect<number, never, R>) =>
  prune.pipe(
    Effect.tap((deleted) => deleted > 0 ? Effect.logDebug(`Queue: pruned ${deleted} ${what}`) : Effect.void),
    Effect.catchDefect((defect) => Effect.logWarning(`Queue: pruning ${what} failed: ${postgresReason(defect)}`))
  )

export const layer = Layer.effectDiscard(
  Effect.all([logged("expired events", pruneExpired), logged("idle flow-control keys", pruneIdleKeys)]).pipe(
    Effect.andThen(Effect.sleep(PRUNE_INTERVAL)),
    Effect.forever,
    Effect.forkScoped
  )
)
