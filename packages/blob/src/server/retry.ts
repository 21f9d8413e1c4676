/**
 * The retry policy of idempotent verbs: a capped, jittered exponential `Schedule` over transient storage
 * failures (5xx, 503 not_ready, rate limits, network errors). A `Retry-After` up to `maxWait` seconds is
 * honoured (the next delay is at least that long); a longer one is surfaced at once, with `retryAfter` set.
 * Non-idempotent verbs are never retried.
 *
 * @module
 */
import { Duration, Effect, Schedule } from "effect"
import type { BlobError } from "../shared/BlobError.ts"
import { isTransient, retryAfterOf } from "./normalize.ts"

export interface RetryOptions {
  /** retries after the first attempt (default 4) */
  readonly times?: number | undefined
  /** first backoff (default 100 ms); doubles each time */
  readonly base?: Duration.Input | undefined
  /** the largest backoff before jitter (default 2 s) */
  readonly cap?: Duration.Input | undefined
  /** the longest Retry-After waited out, in seconds (default 10); longer ones are surfaced */
  readonly maxWait?: number | undefined
}

export interface RetryPolicy {
  readonly times: number
  readonly base: Duration.Duration
  readonly cap: Duration.Duration
  readonly maxWait: number
}

export const retryPolicy = (options: RetryOptions | undefined): RetryPolicy => {
  const times = options?.times ?? 4
  if (!Number.isInteger(times) || times < 0) throw new TypeError("retry.times must be an integer >= 0")
  const maxWait = options?.maxWait ?? 10
  if (!Number.isFinite(maxWait) || maxWait < 0) throw new TypeError("retry.maxWait must be a number of seconds >= 0")
  return {
    times,
    base: Duration.fromInputUnsafe(options?.base ?? "100 millis"),
    cap: Duration.fromInputUnsafe(options?.cap ?? "2 seconds"),
    maxWait
  }
}

/** Whether an error is worth another attempt under `policy` (transient, and any Retry-After short enough). */
export const shouldRetry = (policy: RetryPolicy) => (error: BlobError): boolean => {
  if (!isTransient(error)) return false
  const wait = retryAfterOf(error)
  return wait === undefined || wait <= policy.maxWait
}

/** The schedule: exponential from `base`, capped at `cap`, jittered, at least Retry-After, `times` retries. */
export const retrySchedule = (policy: RetryPolicy) =>
  Schedule.min([Schedule.exponential(policy.base), Schedule.spaced(policy.cap)]).pipe(
    Schedule.jittered,
    Schedule.setInputType<BlobError>(),
    Schedule.while(({ input }) => shouldRetry(policy)(input)),
    Schedule.modifyDelay(({ input, duration }) => {
      const wait = retryAfterOf(input)
      return Effect.succeed(wait === undefined ? duration : Duration.max(duration, Duration.seconds(wait)))
    }),
    Schedule.upTo({ times: policy.times })
  )

/** Retries `effect` under `policy` (idempotent verbs only). */
export const withRetry = (policy: RetryPolicy) => {
  // built once per policy: a schedule is a description, reusable by every call
  const schedule = retrySchedule(policy)
  return <A, R>(effect: Effect.Effect<A, BlobError, R>) => policy.times === 0 ? effect : Effect.retry(effect, schedule)
}
