/**
 * The complete phase: the route completes a multipart upload from the parts' ETags (a single PUT has
 * none), checks the stored object against the token's claims and runs its `onUploadComplete`. Its answer
 * is the only word on what was stored: the client reports it as the result, not what it sent.
 *
 * @module
 */
import { Effect } from "effect"
import type { BlobError } from "../../shared/BlobError.ts"
import type { CompletedPart } from "../../shared/protocol.ts"
import { completeAnswer } from "./answers.ts"
import { callRoute } from "./route.ts"
import type { UploadSession } from "./session.ts"
import type { UploadResult } from "./types.ts"

/** Completes the upload the token names; `parts` only for a multipart upload. */
export const completeUpload = (
  session: UploadSession,
  completionToken: string,
  parts: ReadonlyArray<CompletedPart> | undefined
): Effect.Effect<UploadResult, BlobError> =>
  callRoute(
    session,
    { type: "complete", completionToken, ...(parts === undefined ? {} : { parts }) },
    "completing the upload",
    completeAnswer
  ).pipe(Effect.map(({ path, size, contentType, etag }): UploadResult => ({ path, size, contentType, etag })))
