/**
 * The complete phase: the route completes a multipart upload from the parts' ETags (a single PUT has
 * none), checks the stored object against the token's claims and runs its `onUploadComplete`. Its answer
 * is the only word on what was stored: the client reports it as the result, not what it sent.
 *
 * An upload can outlast its completion token: the token lives the route's `expiresIn`, a PUT that started
 * in time may land after that, and `complete` never takes an expired token (`forbidden`). The route's
 * `resume` still renews such a token (for `resumeWindow` after its expiry), so a `forbidden` complete is
 * renewed once and sent again; a token resume refuses too (forged, another route's, too old) is the
 * complete's own refusal.
 *
 * @module
 */
import { Effect } from "effect"
import { BlobError } from "../../shared/BlobError.ts"
import type { CompletedPart } from "../../shared/protocol.ts"
import { completeAnswer } from "./answers.ts"
import { renewPartUrls, renewUploadUrl } from "./resume.ts"
import { callRoute } from "./route.ts"
import type { UploadSession } from "./session.ts"
import type { UploadResult } from "./types.ts"

/** Completes the upload the token names; `parts` only for a multipart upload. */
export const completeUpload = (
  session: UploadSession,
  completionToken: string,
  parts: ReadonlyArray<CompletedPart> | undefined
): Effect.Effect<UploadResult, BlobError> => {
  const complete = (token: string) =>
    callRoute(
      session,
      { type: "complete", completionToken: token, ...(parts === undefined ? {} : { parts }) },
      "completing the upload",
      completeAnswer
    )
  return complete(completionToken).pipe(
    Effect.catchIf(BlobError.hasCode("forbidden"), (refusal) =>
      renewToken(session, completionToken, parts !== undefined).pipe(
        // the renewal refused (not merely unanswered): the token was never going to complete
        Effect.catchIf((error) => !BlobError.is(error, "request_failed"), () => Effect.fail(refusal)),
        Effect.flatMap(complete)
      )),
    Effect.map(({ path, size, contentType, etag }): UploadResult => ({ path, size, contentType, etag }))
  )
}

/**
 * A new token for the same upload (same claims, new expiry) from the route's `resume`: for a multipart
 * upload with no parts to sign (every part landed), for a single PUT with a URL that goes unused.
 */
const renewToken = (session: UploadSession, token: string, multipart: boolean): Effect.Effect<string, BlobError> =>
  multipart
    ? Effect.map(renewPartUrls(session, token, []), (renewed) => renewed.completionToken)
    : Effect.map(renewUploadUrl(session, token), (renewed) => renewed.completionToken)
