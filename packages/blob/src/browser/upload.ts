/**
 * The browser upload client: `upload(file, { route })` asks the application's upload route for presigned
 * URLs (`begin`), PUTs the bytes straight to storage with `XMLHttpRequest` (the only browser API that
 * reports upload progress), one PUT or a bounded pool of part PUTs, and completes through the route.
 *
 * Failures follow the spec's browser rules:
 *
 * 1. a PUT that fails with no status and no bytes sent was blocked before sending (a CORS preflight
 *    refusal in practice): `request_failed` saying the bucket must allow PUT and the signed headers from
 *    this origin; not retried (it would fail the same way) — unless a PUT of the same upload reached
 *    storage already, or the browser is offline: then it is no answer (rule 3);
 * 2. a 403 on a freshly issued URL is `signature_mismatch`; a 401/403 on an older URL is taken for an
 *    expired signature: the route re-signs (`resume` message) and the PUT is sent again;
 * 3. transient failures (no answer after bytes went out, 408, 429, 5xx) are retried with a jittered,
 *    capped exponential backoff (an effect `Schedule`); when the retries are used up: `request_failed`
 *    with the attempt count and the last status, and, once parts of a multipart upload landed, a hint
 *    that they are kept;
 * 4. canceling (the `signal`) rejects with a `DOMException` named `AbortError`, never a BlobError.
 *
 * Refusals of the route are its BlobError JSON, rebuilt with `BlobError.fromJSON`; a 413 that is not the
 * route's own JSON came from a platform body cap in front of it: `too_large` with a hint naming the caps.
 *
 * Resume: a multipart upload is remembered under a fingerprint of the file (name, size, last modified,
 * type, route, path) in a `ResumeStore` (localStorage by default). Picking the same file again asks the
 * route which parts storage already holds (its ListParts) and sends only the others.
 *
 * The phases live in `./upload/`: `begin.ts` (the route's plan), `parts.ts` (the PUTs), `complete.ts`,
 * `resume.ts` (a remembered upload, renewed URLs); this module composes them. Underneath: `session.ts`
 * (the options resolved, progress), `route.ts` (one route call), `answers.ts` (the
 * shape of each route answer), `put.ts` (one PUT and its verdict),
 * `failures.ts` (retries), `types.ts` (the public types).
 *
 * Imports nothing but `effect` and `../shared`: this is what a page bundles.
 *
 * @module
 */
import { Cause, Effect, Exit } from "effect"
import { BlobError } from "../shared/BlobError.ts"
import { beginUpload, type UploadPlan } from "./upload/begin.ts"
import { completeUpload } from "./upload/complete.ts"
import { abortError } from "./upload/failures.ts"
import { putParts, putWholeFile } from "./upload/parts.ts"
import { type ResumeRecord, resumeRecordOf, resumeRemembered } from "./upload/resume.ts"
import { openSession, signalProblem, type UploadSession } from "./upload/session.ts"
import type { UploadFile, UploadOptions, UploadResult } from "./upload/types.ts"

export { abortError, PLATFORM_CAP_HINT, RETRY_HINT } from "./upload/failures.ts"
export { fingerprint } from "./upload/resume.ts"
export type { ResumeStore, UploadFile, UploadOptions, UploadProgress, UploadResult, XhrLike } from "./upload/types.ts"

/**
 * The upload as an Effect: fails with BlobError; interrupting it aborts every request in flight.
 *
 * A remembered multipart upload of the same file is resumed, else the route is asked to begin; the
 * bytes are sent by the plan; the route completes. The record is forgotten once complete, or on any
 * refusal but a transient one (request_failed: retries used up), which is exactly when resuming helps.
 */
export const uploadEffect = (file: UploadFile, options: UploadOptions): Effect.Effect<UploadResult, BlobError> =>
  Effect.suspend(() => {
    const session = openSession(file, options)
    const record = resumeRecordOf(session)
    const remembered = record.recall()
    const run = Effect.gen(function*() {
      const resumed = remembered === undefined ? undefined : yield* resumeRemembered(session, record, remembered)
      const plan = resumed ?? (yield* beginUpload(session))
      const result = yield* sendAndComplete(session, plan, record)
      record.forget()
      return result
    })
    // a refusal other than a transient one means the remembered upload cannot go on: forget it
    return run.pipe(
      Effect.tapError((error) => BlobError.is(error, "request_failed") ? Effect.void : Effect.sync(record.forget))
    )
  })

/** The parts phase by the plan's kind, then complete with what it returns. */
const sendAndComplete = (session: UploadSession, plan: UploadPlan, record: ResumeRecord): Effect.Effect<UploadResult, BlobError> =>
  plan.kind === "single"
    ? Effect.flatMap(putWholeFile(session, plan), (token) => completeUpload(session, token, undefined))
    : Effect.flatMap(putParts(session, plan, record), ({ parts, token }) => completeUpload(session, token, parts))

/**
 * Uploads `file` through the upload route at `options.route`; resolves with the stored object's info.
 * Rejects with a BlobError, or with an AbortError (`DOMException`) when `options.signal` aborts it.
 */
export const upload = (file: UploadFile, options: UploadOptions): Promise<UploadResult> => {
  const signal = options?.signal
  const problem = signalProblem(signal)
  if (problem !== undefined) return Promise.reject(new TypeError(`upload: ${problem}`))
  if (signal?.aborted === true) return Promise.reject(abortError())
  return Effect.runPromiseExit(uploadEffect(file, options), signal === undefined ? undefined : { signal }).then((exit) => {
    if (Exit.isSuccess(exit)) return exit.value
    if (signal?.aborted === true || Cause.hasInterruptsOnly(exit.cause)) throw abortError()
    throw Cause.squash(exit.cause)
  })
}
