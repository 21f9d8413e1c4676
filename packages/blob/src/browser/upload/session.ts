/**
 * One upload's settings and shared state: the options checked and given their defaults once, the retry
 * policy built once, and the progress counter every PUT adds to. The phases (begin, parts, complete,
 * resume) take this one value instead of a dozen arguments, and none of them reads `options` for a
 * setting with a default.
 *
 * @module
 */
import { retryTransient, type WithRetries } from "./failures.ts"
import type { UploadFile, UploadOptions, XhrLike } from "./types.ts"

/** Bytes landed plus bytes in flight per request (keyed by part number; 0 for a single PUT). */
export interface Progress {
  landed: number
  /** parts of a multipart upload storage holds (landed here, or before a resume): what a retry keeps */
  partsLanded: number
  readonly inFlight: Map<number, number>
  /** tells `onProgress` the new total, when it changed */
  readonly report: () => void
}

export interface UploadSession {
  readonly file: UploadFile
  readonly options: UploadOptions
  readonly fetch: typeof globalThis.fetch
  readonly Xhr: new() => XhrLike
  readonly concurrency: number
  readonly freshFor: number
  readonly stallTimeout: number
  readonly pathname: string
  readonly contentType: string
  /** the file's size */
  readonly total: number
  readonly withRetries: WithRetries
  readonly progress: Progress
  /**
   * `reached`: a PUT of this upload reached storage (it answered, or took bytes), so its CORS rules let
   * this page PUT: a later PUT ending unanswered and unsent is no answer, not the CORS refusal
   */
  readonly storage: { reached: boolean }
}

/**
 * Checks the options and fills in their defaults. Bad options throw a TypeError (a defect of the caller,
 * not a BlobError), so this runs inside the upload's `Effect.suspend`, where the throw becomes the
 * rejection of `upload`.
 */
/** An option in milliseconds: its default when absent, else a finite number from `minimum`, or a TypeError naming it. */
const milliseconds = (name: string, value: number | undefined, fallback: number, minimum: number): number => {
  const ms = value ?? fallback
  if (typeof ms !== "number" || !Number.isFinite(ms) || ms < minimum) {
    throw new TypeError(`upload: ${name} must be a finite number of milliseconds >= ${minimum} (got ${String(value)})`)
  }
  return ms
}

/**
 * Reports an error thrown by one of the page's callbacks (a subscriber, `onProgress`) as the browser
 * reports one thrown by an event listener: `reportError` (the page's error handlers and console),
 * `console.error` with `what` where there is none. The caller goes on: a bug in a progress bar or a
 * render must not stop an upload.
 */
export const reportCallbackError = (what: string, error: unknown): void => {
  const report = (globalThis as { readonly reportError?: (error: unknown) => void }).reportError
  if (report !== undefined) report(error)
  else console.error(what, error)
}

/** Why `file` is not something to upload (a File or Blob), or undefined. */
export const fileProblem = (file: unknown): string | undefined =>
  typeof (file as Blob | null | undefined)?.size === "number" && typeof (file as Blob).slice === "function"
    ? undefined
    : `the file must be a File or Blob, got ${file === null ? "null" : Array.isArray(file) ? "an array" : typeof file}`

/** Why `signal` is not an AbortSignal (a plain object has no listeners to add), or undefined. */
export const signalProblem = (signal: unknown): string | undefined =>
  signal === undefined ||
    (typeof (signal as AbortSignal | null)?.addEventListener === "function" && typeof (signal as AbortSignal).aborted === "boolean")
    ? undefined
    : "options.signal must be an AbortSignal (controller.signal)"

/** The first header fetch cannot send (its name only: a value may be a secret), or undefined. */
const unsendableHeader = (headers: Readonly<Record<string, string>> | undefined): string | undefined =>
  Object.entries(headers ?? {}).find(([name, value]) => {
    try {
      new Headers([[name, value]])
      return false
    } catch {
      return true
    }
  })?.[0]

export const openSession = (file: UploadFile, options: UploadOptions): UploadSession => {
  if (typeof options?.route !== "string" || options.route === "") throw new TypeError("upload: options.route is required")
  // each a mistake of the page, told at once: a bad header or route was retried 4 times and reported
  // as "no answer", a null file read as "reading 'size'"
  const problem = fileProblem(file) ?? signalProblem(options.signal)
  if (problem !== undefined) throw new TypeError(`upload: ${problem}`)
  try {
    new URL(options.route, (globalThis as { readonly location?: { readonly href: string } }).location?.href ?? "http://localhost/")
  } catch {
    throw new TypeError(`upload: options.route is not a URL or path: ${JSON.stringify(options.route.slice(0, 200))}`)
  }
  const badHeader = unsendableHeader(options.headers)
  if (badHeader !== undefined) {
    throw new TypeError(`upload: options.headers[${JSON.stringify(badHeader)}] cannot be sent (a space or another character a header cannot hold)`)
  }
  if (options.onProgress !== undefined && typeof options.onProgress !== "function") {
    throw new TypeError("upload: options.onProgress must be a function")
  }
  if ((options.pathname ?? file.name ?? "") === "") {
    throw new TypeError("upload: options.pathname is required for a Blob, which has no name (a File's name is the default)")
  }
  const fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis)
  const Xhr = options.XMLHttpRequest ?? (globalThis as unknown as { XMLHttpRequest?: new() => XhrLike }).XMLHttpRequest
  if (Xhr === undefined) throw new TypeError("upload: no XMLHttpRequest here (pass options.XMLHttpRequest)")
  const retries = options.retries ?? 3
  if (!Number.isInteger(retries) || retries < 0) throw new TypeError("upload: retries must be an integer >= 0")
  const concurrency = options.concurrency ?? 4
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new TypeError("upload: concurrency must be an integer >= 1")
  // NaN, 0 or a negative would give up every request at once; Infinity would never give up
  const stallTimeout = milliseconds("stallTimeout", options.stallTimeout, 60_000, 1)
  // NaN would make every URL stale (an expiry, not a mismatch) or every backoff a hot loop
  const freshFor = milliseconds("freshFor", options.freshFor, 60_000, 0)
  const retryDelay = {
    base: milliseconds("retryDelay.base", options.retryDelay?.base, 250, 0),
    cap: milliseconds("retryDelay.cap", options.retryDelay?.cap, 4000, 0)
  }
  const progress = trackProgress(file.size, options.onProgress)
  return {
    file,
    options,
    fetch: fetchImpl,
    Xhr,
    concurrency,
    freshFor,
    stallTimeout,
    pathname: options.pathname ?? file.name ?? "",
    contentType: options.contentType ?? (file.type === "" ? "application/octet-stream" : file.type),
    total: file.size,
    withRetries: retryTransient(retries, retryDelay, () => progress.partsLanded > 0),
    progress,
    storage: { reached: false }
  }
}

/**
 * The progress counter. Reported as landed + in-flight bytes (so a part's progress shows while it is
 * sent, and a retried part's lost bytes go back), capped at the file's size, and only when it changed.
 * An `onProgress` that throws is reported (`reportCallbackError`): called inside the upload's effect it
 * failed the upload with the page's bug, and from an XHR event it was an uncaught error.
 */
const trackProgress = (total: number, onProgress: UploadOptions["onProgress"]): Progress => {
  let lastReported = -1
  const progress: Progress = {
    landed: 0,
    partsLanded: 0,
    inFlight: new Map(),
    report: () => {
      if (onProgress === undefined) return
      let loaded = progress.landed
      for (const n of progress.inFlight.values()) loaded += n
      loaded = Math.min(loaded, total)
      if (loaded === lastReported) return
      lastReported = loaded
      try {
        onProgress({ loaded, total, percentage: total === 0 ? 100 : Math.round((loaded / total) * 10_000) / 100 })
      } catch (error) {
        reportCallbackError("upload: onProgress failed", error)
      }
    }
  }
  return progress
}
