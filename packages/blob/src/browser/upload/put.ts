/**
 * One PUT of bytes to storage with `XMLHttpRequest` (the only browser API that reports upload progress),
 * and storage's answer judged by the spec's browser rules (see `../upload.ts`). The PUT never fails: its
 * outcome is plain data, classified apart, so the single PUT and the part PUTs share both halves and
 * differ only in what they do with the verdict.
 *
 * @module
 */
import { Effect } from "effect"
import { BlobError } from "../../shared/BlobError.ts"
import { Expired, type Failure, PLATFORM_CAP_HINT, Transient } from "./failures.ts"
import type { XhrLike } from "./types.ts"

const originOf = () => (globalThis as { location?: { origin?: string } }).location?.origin ?? "this origin"

const corsRefusal = (headers: Readonly<Record<string, string>>) =>
  new BlobError("request_failed", {
    message: `The upload was blocked before it started: the bucket must allow PUT and the signed headers (${
      ["content-type", "content-length", ...Object.keys(headers).filter((h) => h !== "content-type")].join(", ")
    }) from ${originOf()}`,
    hint: "Set the bucket's CORS rules (Bucket.configureCors); buckets allow all origins by default"
  })


export interface PutOutcome {
  readonly status: number
  /** no progress and no answer for stallTimeout: given up (not a CORS refusal, whatever was sent) */
  readonly stalled: boolean
  readonly sent: number
  readonly etag: string | null
  readonly body: string
}

/** One PUT with XHR; interrupting the fiber aborts it. Never fails: the outcome is classified after. */
export const xhrPut = (
  Xhr: new() => XhrLike,
  url: string,
  headers: Readonly<Record<string, string>>,
  body: Blob,
  onLoaded: (loaded: number) => void,
  stallTimeout: number
): Effect.Effect<PutOutcome> =>
  Effect.callback<PutOutcome>((resume) => {
    const xhr = new Xhr()
    let sent = 0
    let stalled = false
    let watchdog: ReturnType<typeof setTimeout> | undefined
    const arm = () => {
      clearTimeout(watchdog)
      watchdog = setTimeout(() => {
        stalled = true
        xhr.onload = xhr.onerror = xhr.ontimeout = null
        xhr.abort()
        done(0)
      }, stallTimeout)
    }
    const done = (status: number) => {
      clearTimeout(watchdog)
      resume(Effect.succeed({
        status,
        stalled,
        sent,
        etag: status >= 200 && status < 300 ? xhr.getResponseHeader("ETag") : null,
        body: status === 0 ? "" : safeText(xhr)
      }))
    }
    xhr.open("PUT", url)
    // the browser sets content-length itself (and refuses it as a header): it matches the signed one
    for (const [name, value] of Object.entries(headers)) {
      if (name.toLowerCase() !== "content-length") xhr.setRequestHeader(name, value)
    }
    xhr.upload.onprogress = (event) => {
      sent = event.loaded
      arm()
      onLoaded(event.loaded)
    }
    xhr.onload = () => done(xhr.status)
    xhr.onerror = () => done(0)
    xhr.ontimeout = () => done(0)
    arm()
    xhr.send(body)
    return Effect.sync(() => {
      clearTimeout(watchdog)
      xhr.onload = xhr.onerror = xhr.ontimeout = null
      xhr.abort()
    })
  })

const safeText = (xhr: XhrLike) => {
  try {
    return xhr.responseText
  } catch {
    return ""
  }
}

const storageCode = (body: string) => /<Code>([^<]+)<\/Code>/.exec(body)?.[1]

/** Whether the browser says it has no network (`navigator.onLine` false); unknown counts as online. */
const offline = () => (globalThis as { readonly navigator?: { readonly onLine?: unknown } }).navigator?.onLine === false

/**
 * Whether this outcome shows that storage lets this page PUT: it answered, or took bytes (with upload
 * progress listened to, the browser sends a body only after a CORS preflight passed). Once one PUT of an
 * upload did, a later one that ends unanswered and unsent was cut off (storage stopped, the network
 * dropped), not blocked by CORS rules, which do not change under an upload.
 */
export const reachedStorage = (outcome: PutOutcome): boolean => outcome.status !== 0 || outcome.sent > 0

/** Storage's answer to a PUT, by the spec's browser rules (see the module comment of `../upload.ts`). */
export const classifyPut = (
  outcome: PutOutcome,
  context: {
    readonly fresh: boolean
    readonly headers: Readonly<Record<string, string>>
    readonly what: string
    /** an earlier PUT of this upload reached storage (`reachedStorage`) */
    readonly storageReached: boolean
  }
): Failure | undefined => {
  const { status } = outcome
  if (status >= 200 && status < 300) return undefined
  if (status === 0) {
    // rule 1, blocked before sending, is a CORS refusal in practice; not when storage took this upload's
    // PUTs already, nor while the browser is offline: then it is no answer, retried like one
    const blocked = outcome.sent === 0 && !outcome.stalled && !context.storageReached && !offline()
    return blocked ? corsRefusal(context.headers) : new Transient(0)
  }
  const code = storageCode(outcome.body)
  if (status === 401 || status === 403) {
    if (!context.fresh) return new Expired()
    return status === 403
      ? new BlobError("signature_mismatch", { message: `Storage refused ${context.what} (403${code === undefined ? "" : ` ${code}`})` })
      : new BlobError("unauthorized", { message: `Storage refused ${context.what} (401)` })
  }
  if (status === 408 || status === 429 || status >= 500) return new Transient(status)
  if (status === 413) {
    return code === "EntityTooLarge"
      ? new BlobError("too_large", { message: `Storage refused ${context.what} as too large` })
      : new BlobError("too_large", { message: `The upload was refused as too large (413)`, hint: PLATFORM_CAP_HINT })
  }
  if (status === 412) return new BlobError("already_exists", { message: "Something is already stored at this path" })
  if (status === 404) {
    return new BlobError("not_found", {
      message: code === "NoSuchUpload" ? "The multipart upload is gone from storage" : `Storage answered 404 to ${context.what}`
    })
  }
  return new BlobError("request_failed", { status, message: `Storage answered ${status}${code === undefined ? "" : ` ${code}`} to ${context.what}` })
}

