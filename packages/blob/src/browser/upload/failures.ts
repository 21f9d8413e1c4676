/**
 * What can go wrong with one request of an upload (a route call or a PUT to storage) and what the client
 * does about it: retry a transient failure with backoff, send again once after an expired URL was
 * re-signed, and say so in a BlobError when that is used up. The failure kinds other than BlobError are
 * internal: they never leave the client.
 *
 * @module
 */
import { Effect, Schedule } from "effect"
import { BlobError } from "../../shared/BlobError.ts"
import type { UploadOptions } from "./types.ts"

export const RETRY_HINT = "Landed parts are kept: retry the upload, or pick the same file again to resume it"

export const PLATFORM_CAP_HINT =
  "A platform in front of the route refused the body: serverless functions take at most 4.5 MB on one platform and 6 MB on another, and an edge platform's free plan 100 MB; upload straight to storage instead"

/** An AbortError, as fetch rejects with it. */
export const abortError = (): DOMException => new DOMException("The upload was canceled", "AbortError")

/** A failure worth another attempt; `status` 0 = no answer. Internal: never leaves the client. */
export class Transient {
  readonly _tag = "Transient"
  readonly status: number
  constructor(status: number) {
    this.status = status
  }
}

/** A 401/403 on a URL that is not fresh: re-sign and send again. */
export class Expired {
  readonly _tag = "Expired"
}

/** The URL was re-signed after an expiry: send again at once (not a failed attempt). */
export class Renewed {
  readonly _tag = "Renewed"
}

export type Failure = BlobError | Transient | Expired | Renewed

export const isTransient = (f: Failure): f is Transient => f instanceof Transient

/**
 * Sends again once with the renewed URL. A renewed URL is fresh, so a second refusal is a mismatch, not
 * expiry; only a client clock far off could see expiry twice: that is reported, not looped on.
 */
export const sendAgainIfRenewed = <A>(attempt: Effect.Effect<A, Failure>, what: string): Effect.Effect<A, BlobError | Transient> =>
  attempt.pipe(
    Effect.retry({ times: 1, while: (f) => f instanceof Renewed }),
    Effect.mapError((f) =>
      f instanceof Renewed || f instanceof Expired
        ? new BlobError("signature_mismatch", { message: `Storage refused ${what} with freshly renewed URLs` })
        : f
    )
  )

/** Runs `attempt` with retries on Transient; exhaustion is request_failed with count and last status. */
export type WithRetries = <A, E extends Failure>(
  what: string,
  attempt: Effect.Effect<A, E>
) => Effect.Effect<A, Exclude<E, Transient> | BlobError>

/**
 * The retry policy of one upload: `retries` more attempts of a transient failure, apart by an exponential
 * backoff from `retryDelay.base`, capped at `retryDelay.cap`, jittered. Built once per upload (every
 * request shares the schedule's settings); each request counts its own attempts, for the message. The
 * hint that landed parts are kept is given only when `partsLanded()` says some are: after a failed begin,
 * or a single PUT, nothing is kept and the hint would promise a resume that cannot happen.
 */
export const retryTransient = (retries: number, retryDelay: UploadOptions["retryDelay"], partsLanded: () => boolean): WithRetries => {
  const backoff = Schedule.min([
    Schedule.exponential(`${retryDelay?.base ?? 250} millis`),
    Schedule.spaced(`${retryDelay?.cap ?? 4000} millis`)
  ]).pipe(Schedule.jittered)
  return <A, E extends Failure>(what: string, attempt: Effect.Effect<A, E>) => {
    let attempts = 0
    return Effect.suspend(() => {
      attempts++
      return attempt
    }).pipe(
      Effect.retry({ schedule: backoff, times: retries, while: (f: E) => isTransient(f) }),
      Effect.mapError((f): Exclude<E, Transient> | BlobError =>
        isTransient(f)
          ? new BlobError("request_failed", {
            status: f.status >= 400 && f.status <= 599 ? f.status : 502,
            message: `${capitalize(what)} failed after ${attempts} ${attempts === 1 ? "attempt" : "attempts"} (last status ${
              f.status === 0 ? "none: no answer" : f.status
            })`,
            ...(partsLanded() ? { hint: RETRY_HINT } : {})
          })
          : f as Exclude<E, Transient>
      )
    )
  }
}

const capitalize = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)
