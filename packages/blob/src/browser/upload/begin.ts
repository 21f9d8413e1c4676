/**
 * The begin phase: the route decides how the file is sent (one PUT, or parts of its size) and signs the
 * URLs for it. Its answer is turned into a plan here, the one shape the parts phase takes, so the parts
 * phase does not care whether a multipart plan came from begin or from resuming a remembered upload.
 *
 * @module
 */
import { Effect } from "effect"
import type { BlobError } from "../../shared/BlobError.ts"
import type { CompletedPart, PresignedPart } from "../../shared/protocol.ts"
import { type BeginAnswer, beginAnswer } from "./answers.ts"
import { callRoute } from "./route.ts"
import type { UploadSession } from "./session.ts"

/** One PUT of the whole file. */
export interface SinglePlan {
  readonly kind: "single"
  readonly url: string
  /** signed: sent exactly as given */
  readonly headers: Readonly<Record<string, string>>
  readonly token: string
  readonly expiresAt: number
}

/** The parts still to send, and those storage holds already (a resumed upload). */
export interface MultipartPlan {
  readonly kind: "multipart"
  readonly token: string
  readonly partSize: number
  readonly parts: ReadonlyArray<PresignedPart>
  readonly landed: ReadonlyArray<CompletedPart & { readonly size: number }>
  readonly expiresAt: number
}

export type UploadPlan = SinglePlan | MultipartPlan

/** Asks the route to begin the upload (its `onBeforeUpload` runs there) and returns what to send. */
export const beginUpload = (session: UploadSession): Effect.Effect<UploadPlan, BlobError> =>
  callRoute(session, {
    type: "begin",
    pathname: session.pathname,
    contentType: session.contentType,
    size: session.total,
    ...(session.options.clientPayload === undefined ? {} : { clientPayload: session.options.clientPayload })
  }, "starting the upload", beginAnswer).pipe(Effect.map(planOf))

const planOf = (started: BeginAnswer): UploadPlan =>
  started.multipart === undefined
    ? { kind: "single", url: started.url, headers: started.headers, token: started.completionToken, expiresAt: started.expiresAt }
    : {
      kind: "multipart",
      token: started.completionToken,
      partSize: started.multipart.partSize,
      parts: started.multipart.parts,
      landed: [],
      expiresAt: started.expiresAt
    }
