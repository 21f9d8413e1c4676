/**
 * The route's `resume` message, for its two uses: picking up a multipart upload remembered in the page's
 * storage (the same file picked again after a reload or a failure), and renewing URLs that expired
 * mid-upload. Both send the latest completion token and take the new one the answer carries; keeping them
 * together keeps that rule in one place.
 *
 * @module
 */
import { Effect } from "effect"
import { BlobError } from "../../shared/BlobError.ts"
import type { MultipartPlan } from "./begin.ts"
import { type RenewedParts, renewedPartsAnswer, type RenewedUrl, renewedUrlAnswer, resumeAnswer } from "./answers.ts"
import { callRoute } from "./route.ts"
import type { UploadSession } from "./session.ts"
import type { ResumeStore, UploadFile, UploadOptions } from "./types.ts"

export interface Remembered {
  readonly completionToken: string
  readonly savedAt: number
}

/** The resume store's key for a file: what identifies "the same file picked again". */
export const fingerprint = (file: UploadFile, options: UploadOptions, pathname: string, contentType: string): string =>
  `svc-blob-upload:${JSON.stringify([options.route, options.routeName ?? "", pathname, contentType, file.name ?? "", file.size, file.lastModified ?? 0])}`

const defaultStore = (): ResumeStore | undefined => {
  try {
    const storage = (globalThis as { localStorage?: ResumeStore }).localStorage
    return storage ?? undefined
  } catch {
    // a sandboxed frame throws on the very access
    return undefined
  }
}

/** This file's entry in the resume store. */
export interface ResumeRecord {
  readonly recall: () => Remembered | undefined
  /** stores the latest token (best effort: a full or blocked storage only loses the resume) */
  readonly remember: (completionToken: string) => void
  readonly forget: () => void
}

/**
 * The resume store entry of the session's file (`options.resume`, default localStorage, `false`: none).
 * Every access is guarded: resuming is a convenience, and a page's storage may be full, blocked or
 * hold garbage; none of that may fail an upload.
 */
export const resumeRecordOf = (session: UploadSession): ResumeRecord => {
  const { options } = session
  const store = options.resume === false ? undefined : options.resume ?? defaultStore()
  const key = fingerprint(session.file, options, session.pathname, session.contentType)
  return {
    remember: (completionToken) => {
      try {
        store?.setItem(key, JSON.stringify({ completionToken, savedAt: Date.now() } satisfies Remembered))
      } catch { /* resuming is a convenience */ }
    },
    forget: () => {
      try {
        store?.removeItem(key)
      } catch { /* idem */ }
    },
    recall: () => {
      try {
        const raw = store?.getItem(key)
        const value = raw == null ? undefined : JSON.parse(raw) as Partial<Remembered>
        return typeof value?.completionToken === "string" ? value as Remembered : undefined
      } catch {
        return undefined
      }
    }
  }
}

/**
 * Asks the route what storage holds of a remembered upload (`resume` without parts: its ListParts) and
 * returns the plan for the rest. An upload the route no longer accepts (completed, aborted, expired, not
 * multipart) is forgotten and `undefined` comes back: the caller starts over with begin, since the user
 * asked for the file to be uploaded, not for that upload to be resumed.
 */
export const resumeRemembered = (
  session: UploadSession,
  record: ResumeRecord,
  remembered: Remembered
): Effect.Effect<MultipartPlan | undefined, BlobError> =>
  callRoute(session, { type: "resume", completionToken: remembered.completionToken }, "resuming the upload", resumeAnswer).pipe(
    Effect.flatMap((answer) =>
      answer.multipart === undefined
        ? Effect.fail(new BlobError("invalid_input", { message: "The remembered upload is not a multipart upload" }))
        : Effect.succeed({
          kind: "multipart",
          token: answer.completionToken,
          partSize: answer.multipart.partSize,
          parts: answer.multipart.parts,
          landed: answer.multipart.landed ?? [],
          expiresAt: answer.expiresAt
        } satisfies MultipartPlan)
    ),
    // the upload is gone (completed, aborted, expired): start over
    Effect.catchIf(BlobError.hasCode("not_found", "forbidden", "invalid_input"), () => {
      record.forget()
      return Effect.succeed(undefined)
    })
  )

/** A new URL for the single PUT, whose URL expired (and a new token). */
export const renewUploadUrl = (session: UploadSession, token: string): Effect.Effect<RenewedUrl, BlobError> =>
  callRoute(session, { type: "resume", completionToken: token }, "renewing the upload URL", renewedUrlAnswer)

/** New URLs for the parts not landed yet (and a new token), asked once for every part that expired together. */
export const renewPartUrls = (
  session: UploadSession,
  token: string,
  pending: ReadonlyArray<number>
): Effect.Effect<RenewedParts, BlobError> =>
  callRoute(session, { type: "resume", completionToken: token, parts: pending }, "renewing the part URLs", renewedPartsAnswer)
