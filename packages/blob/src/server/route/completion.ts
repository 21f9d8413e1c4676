/**
 * Completion is single-use: an upload's completion record, a small JSON object in the route's own bucket
 * at `.svc-blob/completions/<upload nonce>.json`, created with a conditional write (`If-None-Match: *`)
 * before anything is completed. Storage lets exactly one writer create it, whichever process or instance
 * the request reached, so exactly one `complete` of an upload does the work and runs `onUploadComplete`.
 *
 * The record moves through:
 *
 * - `pending` — claimed: this request completes the upload;
 * - (deleted) — the completion failed before `onUploadComplete` ran (the object had not arrived, a bad part
 *   list, lying bytes, a storage failure): nothing happened that a retry could repeat, so the claim is
 *   released and a retry is checked afresh;
 * - `done` with the answer — `onUploadComplete` returned: a repeat answers this same answer;
 * - `failed` with the refusal — `onUploadComplete` threw (the object was deleted): a repeat answers this
 *   same refusal, and the hook never runs again.
 *
 * A repeat that finds the record `pending` (a concurrent request still completing) waits for it, up to the
 * route's `completionWait`, then answers `conflict`. A record left `pending` by a process that died
 * mid-completion stays so: the hook is run at most once, never twice.
 *
 * @module
 */
import { createHash, randomBytes } from "node:crypto"
import { BlobError, type BlobErrorJson } from "../../shared/BlobError.ts"
import type { CompleteUploadResponse } from "../../shared/protocol.ts"
import type { BucketApi } from "../Bucket.ts"
import type { TokenClaims } from "./completionToken.ts"
import { run } from "./prepare.ts"
import { toBlobError } from "./failure.ts"

/** Where completion records live in a route's bucket; `begin` refuses uploads under it. */
export const COMPLETIONS_PREFIX = ".svc-blob/completions/"

/** The reserved top-level folder of the route's own records. */
export const RESERVED_PREFIX = ".svc-blob/"

/** A new upload's nonce (carried in its tokens as `n`). */
export const newUploadNonce = (): string => randomBytes(16).toString("base64url")

const NONCE = /^[A-Za-z0-9_-]{16,64}$/
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 40)

/**
 * The record's path: by the upload's nonce; a token signed before nonces existed falls back to its
 * multipart upload id, else to the token itself (then a resumed token of such an upload has another record).
 */
export const completionPath = (claims: TokenClaims, token: string): string => {
  const id = claims.n !== undefined && NONCE.test(claims.n)
    ? claims.n
    : claims.u !== undefined
    ? `u-${sha256(claims.u)}`
    : `t-${sha256(token)}`
  return `${COMPLETIONS_PREFIX}${id}.json`
}

export type CompletionRecord =
  | { readonly state: "pending"; readonly claim: string; readonly path: string; readonly at: number }
  | { readonly state: "done"; readonly answer: CompleteUploadResponse; readonly at: number }
  | { readonly state: "failed"; readonly error: BlobErrorJson; readonly at: number }
  /** a record this version cannot read: treated as completed (never completed again) */
  | { readonly state: "unreadable" }

const parse = (text: string): CompletionRecord => {
  try {
    const json = JSON.parse(text) as { state?: unknown; answer?: unknown; error?: unknown }
    if (json.state === "pending") return json as CompletionRecord
    if (json.state === "done" && typeof json.answer === "object" && json.answer !== null) return json as CompletionRecord
    if (json.state === "failed" && typeof json.error === "object" && json.error !== null) return json as CompletionRecord
  } catch {
    // unreadable below
  }
  return { state: "unreadable" }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export const completionRecords = (bucket: BucketApi, recordPath: string, uploadPath: string) => {
  const write = (record: CompletionRecord, allowOverwrite: boolean) =>
    run(bucket.put(recordPath, JSON.stringify(record), { contentType: "application/json", allowOverwrite, sniff: false }))

  /** The record, or undefined when there is none. */
  const read = async (): Promise<CompletionRecord | undefined> => {
    try {
      return parse(await run(bucket.getText(recordPath)))
    } catch (error) {
      if (BlobError.is(error, "not_found")) return undefined
      throw error
    }
  }

  /** Creates the `pending` record: true when this request now owns the completion, false when a record was there. */
  const claim = async (): Promise<boolean> => {
    const record: CompletionRecord = { state: "pending", claim: randomBytes(12).toString("base64url"), path: uploadPath, at: Date.now() }
    try {
      await write(record, false)
      return true
    } catch (error) {
      if (BlobError.is(error, "already_exists")) return false
      throw error
    }
  }

  /**
   * Waits until the record is settled (`done`, `failed`, unreadable) or gone (a released claim:
   * undefined), polling storage; still `pending` at `deadline` -> `conflict`.
   */
  const settled = async (deadline: number): Promise<CompletionRecord | undefined> => {
    let delay = 20
    while (true) {
      const record = await read()
      if (record === undefined || record.state !== "pending") return record
      if (Date.now() >= deadline) throw stillPending(uploadPath)
      await sleep(Math.min(delay, Math.max(1, deadline - Date.now())))
      delay = Math.min(delay * 2, 500)
    }
  }

  /** Gives the claim up (the completion failed before onUploadComplete ran): a retry starts afresh. */
  const release = () => run(bucket.del(recordPath)).then(() => undefined, () => undefined)

  /** onUploadComplete returned: a repeat answers `answer`. */
  const done = (answer: CompleteUploadResponse) => write({ state: "done", answer, at: Date.now() }, true).then(() => undefined, () => undefined)

  /** onUploadComplete threw: a repeat answers the same refusal, without running it again. */
  const failed = (error: unknown) =>
    write({ state: "failed", error: replayableError(error).toJSON(), at: Date.now() }, true).then(() => undefined, () => undefined)

  return { read, claim, settled, release, done, failed }
}

/** What a repeat of a completion whose onUploadComplete threw answers: the refusal as the first got it. */
const replayableError = (error: unknown): BlobError =>
  toBlobError(error) ?? new BlobError("request_failed", { message: "The upload could not be completed" })

export const stillPending = (path: string) =>
  new BlobError("conflict", {
    message: `The upload to ${path} is being completed by another request`,
    hint: "Retry in a moment: a completed upload answers its completion again"
  })

/** A repeat's answer from a settled record. */
export const replay = (record: CompletionRecord, path: string): Response => {
  switch (record.state) {
    case "done":
      return Response.json(record.answer)
    case "failed": {
      let refusal: BlobError
      try {
        refusal = BlobError.fromJSON(record.error)
      } catch {
        refusal = new BlobError("conflict", { message: `The upload to ${path} was already completed` })
      }
      throw refusal
    }
    default:
      throw new BlobError("conflict", { message: `The upload to ${path} was already completed` })
  }
}
