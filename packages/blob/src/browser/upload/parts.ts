/**
 * The parts phase: the bytes go straight to storage, as one PUT or as a bounded pool of part PUTs, with
 * progress, retries of transient failures, and re-signing of URLs that expired on the way. It ends with
 * what `complete` needs (the latest token, and the parts' ETags) and never calls complete itself: the
 * caller composes the phases.
 *
 * @module
 */
import { Effect, Semaphore } from "effect"
import { BlobError } from "../../shared/BlobError.ts"
import type { CompletedPart, PresignedPart } from "../../shared/protocol.ts"
import type { MultipartPlan, SinglePlan } from "./begin.ts"
import { Expired, type Failure, isTransient, Renewed, sendAgainIfRenewed } from "./failures.ts"
import { classifyPut, reachedStorage, xhrPut } from "./put.ts"
import { renewPartUrls, renewUploadUrl, type ResumeRecord } from "./resume.ts"
import type { UploadSession } from "./session.ts"

/**
 * Sends the whole file in one PUT; returns the completion token to complete with (a renewal replaces
 * it). The retry after an attempt of unknown outcome (the connection dropped after bytes went out) may
 * meet its own object (`If-None-Match: *` answers 412): that is taken as maybe stored and left to
 * `complete`, which checks the stored object, rather than reported as already_exists.
 */
export const putWholeFile = (session: UploadSession, plan: SinglePlan): Effect.Effect<string, BlobError> =>
  Effect.gen(function*() {
    const { progress } = session
    let url = plan.url
    let headers = plan.headers
    let token = plan.token
    let issuedAt = Date.now()
    let expiresAt = plan.expiresAt
    let unknownOutcome = false
    const what = "the upload"
    const attempt: Effect.Effect<"stored" | "maybe-stored", Failure> = Effect.gen(function*() {
      progress.inFlight.set(0, 0)
      const outcome = yield* xhrPut(session.Xhr, url, headers, session.file, (loaded) => {
        progress.inFlight.set(0, loaded)
        progress.report()
      }, session.stallTimeout)
      progress.inFlight.set(0, 0)
      const fresh = Date.now() - issuedAt < session.freshFor && Date.now() < expiresAt
      const failure = classifyPut(outcome, { fresh, headers, what, storageReached: session.storage.reached })
      if (reachedStorage(outcome)) session.storage.reached = true
      if (failure === undefined) return "stored" as const
      // a retry after an unseen success meets its own object: let complete check it
      if (BlobError.is(failure, "already_exists") && unknownOutcome) return "maybe-stored" as const
      if (isTransient(failure) && failure.status === 0) unknownOutcome = true
      if (failure instanceof Expired) {
        const renewed = yield* renewUploadUrl(session, token)
        url = renewed.url
        headers = renewed.headers
        token = renewed.completionToken
        expiresAt = renewed.expiresAt
        issuedAt = Date.now()
        return yield* Effect.fail(new Renewed())
      }
      return yield* Effect.fail(failure)
    })
    yield* session.withRetries(what, sendAgainIfRenewed(attempt, what))
    progress.landed = session.total
    progress.inFlight.clear()
    progress.report()
    return token
  })

/** What a multipart upload completes with. */
export interface SentParts {
  readonly token: string
  /** every part's ETag, in part order */
  readonly parts: ReadonlyArray<CompletedPart>
}

interface Signed {
  readonly url: string
  readonly issuedAt: number
  readonly expiresAt: number
}

/**
 * Sends the plan's parts, `concurrency` at once, each retried on its own; the parts storage holds already
 * (a resumed upload) count as landed from the start. The latest token is remembered in `record` at once
 * and after every renewal, so a failure at any point leaves something to resume.
 *
 * A part that fails for good stops new parts from starting, but the parts in flight finish: they land and
 * a later resume skips them (interrupting them would throw their bytes away). Cancel still aborts
 * everything.
 */
export const putParts = (session: UploadSession, plan: MultipartPlan, record: ResumeRecord): Effect.Effect<SentParts, BlobError> =>
  Effect.gen(function*() {
    const { progress } = session
    let token = plan.token
    record.remember(token)
    const etags = new Map<number, string>(plan.landed.map((p) => [p.partNumber, p.etag]))
    progress.landed = plan.landed.reduce((sum, p) => sum + p.size, 0)
    progress.partsLanded = plan.landed.length
    progress.report()
    const urls = new Map<number, Signed>()
    const keep = (parts: ReadonlyArray<PresignedPart>, expiresAt: number) => {
      const now = Date.now()
      for (const p of parts) urls.set(p.partNumber, { url: p.url, issuedAt: now, expiresAt })
    }
    keep(plan.parts, plan.expiresAt)
    // parts whose URLs expired together ask the route once: the others wait for the permit, then find
    // their URL renewed already
    const renewLock = yield* Semaphore.make(1)
    const renew = (partNumber: number, stale: Signed) =>
      renewLock.withPermit(Effect.gen(function*() {
        if (urls.get(partNumber) !== stale) return
        const pending = [...urls.keys()].filter((n) => !etags.has(n))
        const renewed = yield* renewPartUrls(session, token, pending)
        token = renewed.completionToken
        record.remember(token)
        keep(renewed.multipart.parts, renewed.expiresAt)
      }))

    const sendPart = (part: PresignedPart) => {
      const what = `the upload of part ${part.partNumber}`
      const from = (part.partNumber - 1) * plan.partSize
      const bytes = session.file.slice(from, from + part.size)
      const attempt: Effect.Effect<void, Failure> = Effect.gen(function*() {
        const signed = urls.get(part.partNumber)!
        progress.inFlight.set(part.partNumber, 0)
        const outcome = yield* xhrPut(session.Xhr, signed.url, {}, bytes, (loaded) => {
          progress.inFlight.set(part.partNumber, loaded)
          progress.report()
        }, session.stallTimeout)
        progress.inFlight.delete(part.partNumber)
        const fresh = Date.now() - signed.issuedAt < session.freshFor && Date.now() < signed.expiresAt
        const failure = classifyPut(outcome, { fresh, headers: {}, what, storageReached: session.storage.reached })
        if (reachedStorage(outcome)) session.storage.reached = true
        if (failure === undefined) {
          if (outcome.etag === null || outcome.etag === "") {
            return yield* new BlobError("request_failed", {
              status: 502,
              message: "Storage did not expose the ETag of an uploaded part",
              hint: "The bucket's CORS rules must expose the ETag header (Bucket.configureCors does)"
            })
          }
          etags.set(part.partNumber, outcome.etag)
          progress.landed += part.size
          progress.partsLanded++
          progress.report()
          return
        }
        progress.report()
        if (failure instanceof Expired) {
          yield* renew(part.partNumber, signed)
          return yield* Effect.fail(new Renewed())
        }
        return yield* Effect.fail(failure)
      }).pipe(Effect.onInterrupt(() => Effect.sync(() => progress.inFlight.delete(part.partNumber))))
      return session.withRetries(what, sendAgainIfRenewed(attempt, what))
    }

    let failure: BlobError | undefined
    yield* Effect.forEach(
      plan.parts,
      (part) =>
        Effect.suspend(() =>
          failure !== undefined ? Effect.void : sendPart(part).pipe(
            Effect.catch((error: BlobError) => Effect.sync(() => void (failure ??= error)))
          )
        ),
      { concurrency: session.concurrency, discard: true }
    )
    if (failure !== undefined) return yield* Effect.fail(failure)
    const parts = [...etags].map(([partNumber, etag]) => ({ partNumber, etag })).sort((a, b) => a.partNumber - b.partNumber)
    return { token, parts }
  })
