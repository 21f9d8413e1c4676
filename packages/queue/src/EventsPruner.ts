/**
 * Removes events older than `QUEUE_EVENTS_RETENTION` (default 7 days) in the background, in every
 * queue process: once a minute, batches of {@link PRUNE_BATCH} (each one short statement, its own
 * transaction, so no lock is held for long) until a batch comes back short.
 * Several processes pruning at once take different rows (`SKIP LOCKED` in `Events.prune`).
 */
import { postgresReason } from "@svc/platform"
import { Duration, Effect, Layer } from "effect"
import { QueueConfig } from "./QueueConfig.ts"
import { Events } from "./store/Events.ts"

/** Events deleted per statement. */
export const PRUNE_BATCH = 5000
/** How often a process looks for expired events. */
export const PRUNE_INTERVAL = Duration.minutes(1)

/** Deletes every expired event, batch by batch; the number deleted. */
export const pruneExpired = Effect.gen(function*() {
  const events = yield* Events
  const retentionMs = Duration.toMillis((yield* QueueConfig).eventsRetention)
  let total = 0
  while (true) {
    const deleted = yield* events.prune(retentionMs, PRUNE_BATCH)
    total += deleted
    if (deleted < PRUNE_BATCH) return total
    // Leave the database to other work between batches.
    yield* Effect.sleep("50 millis")
  }
})

export const layer = Layer.effectDiscard(
  pruneExpired.pipe(
    Effect.tap((deleted) => deleted > 0 ? Effect.logDebug(`Queue events: pruned ${deleted} expired events`) : Effect.void),
    Effect.catchDefect((defect) => Effect.logWarning(`Queue events: pruning failed: ${postgresReason(defect)}`)),
    Effect.andThen(Effect.sleep(PRUNE_INTERVAL)),
    Effect.forever,
    Effect.forkScoped
  )
)
