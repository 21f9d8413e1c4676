/**
 * The browser upload client: `upload(file, { route })` asks the application's upload route for presigned
 * URLs (`begin`), PUTs the bytes straight to storage with `XMLHttpRequest` (the only browser API that
 * reports upload progress), one PUT or a bounded pool of part PUTs, and completes through the route.
 *
 * Failures follow the spec's browser rules:
 *
 * 1. a PUT that fails with no status and no bytes sent was blocked before sending (a CORS preflight
 *    refusal in practice): `request_failed` saying the bucket must allow PUT and the signed headers from
 *    this origin; not retried (it would fail the same way);
 * 2. a 403 on a freshly issued URL is `signature_mismatch`; a 401/403 on an older URL is taken for an
 *    expired signature: the route re-signs (`resume` message) and the PUT is sent again;
 * 3. transient failures (no answer after bytes went out, 408, 429, 5xx) are retried with a jittered,
 *    capped exponential backoff (an effect `Schedule`); when the retries are used up: `request_failed`
 *    with the attempt count and the last status, and a hint that landed parts are kept;
 * 4. canceling (the `signal`) rejects with a `DOMException` named `AbortError`, never a BlobError.
 *
 * Refusals of the route are its BlobError JSON, rebuilt with `BlobError.fromJSON`; a 413 that is not the
 * route's own JSON came from a platform body cap in front of it: `too_large` with a hint naming the caps.
 *
 * Resume: a multipart upload is remembered under a fingerprint of the file (name, size, last modified,
 * type, route, path) in a `ResumeStore` (localStorage by default). Picking the same file again asks the
 * route which parts storage already holds (its ListParts) and sends only the others.
 *
 * Imports nothing but `effect` and `../shared`: this is what a page bundles.
 *
 * @module
 */
import { Cause, Effect, Exit, Schedule, Semaphore } from "effect"
import { BlobError } from "../shared/BlobError.ts"
import type {
  BeginUploadResponse,
  CompletedPart,
  CompleteUploadResponse,
  PresignedPart,
  ResumeUploadResponse
} from "../shared/protocol.ts"

// --- options and results ---------------------------------------------------------------------------------

export interface UploadProgress {
  /** bytes stored or in flight */
  readonly loaded: number
  readonly total: number
  /** 0-100, two decimals */
  readonly percentage: number
}

/** Where multipart uploads are remembered for resuming (the `Storage` interface: localStorage fits). */
export interface ResumeStore {
  getItem(key: string): string | null
  setItem(key: string, value: string): void
  removeItem(key: string): void
}

/** The part of `XMLHttpRequest` the client uses (tests script it). */
export interface XhrLike {
  open(method: string, url: string): void
  setRequestHeader(name: string, value: string): void
  getResponseHeader(name: string): string | null
  send(body: Blob): void
  abort(): void
  readonly status: number
  readonly responseText: string
  readonly upload: { onprogress: ((event: { readonly loaded: number }) => void) | null }
  onload: (() => void) | null
  onerror: (() => void) | null
  ontimeout: (() => void) | null
  onabort: (() => void) | null
}

export interface UploadOptions {
  /** the upload route's URL (`/api/upload/avatar`) */
  readonly route: string
  /** the route's name when one URL serves several (sent as the body's `route`) */
  readonly routeName?: string | undefined
  /** where to store it (the route may change it); default: the file's name */
  readonly pathname?: string | undefined
  /** default: the file's type, else application/octet-stream */
  readonly contentType?: string | undefined
  /** handed to the route's onBeforeUpload */
  readonly clientPayload?: string | undefined
  /** extra headers of the route calls (an authorization header, a CSRF token) */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** aborting it cancels the upload: the promise rejects with an AbortError */
  readonly signal?: AbortSignal | undefined
  readonly onProgress?: ((progress: UploadProgress) => void) | undefined
  /** retries of each request after the first attempt (default 3) */
  readonly retries?: number | undefined
  /** backoff in milliseconds: first delay (default 250), largest delay before jitter (default 4000) */
  readonly retryDelay?: { readonly base?: number | undefined; readonly cap?: number | undefined } | undefined
  /** part PUTs in flight at once (default 4) */
  readonly concurrency?: number | undefined
  /** where multipart uploads are remembered for resuming; default localStorage when present; false: off */
  readonly resume?: ResumeStore | false | undefined
  /** a URL younger than this (ms, default 60 s) is "fresh": a 403 on it is signature_mismatch, not expiry */
  readonly freshFor?: number | undefined
  /**
   * a PUT with no progress and no answer for this long (ms, default 60 s), or a route call unanswered this
   * long, is given up and retried: a dead connection (or a stalled store) must not hang the upload forever
   */
  readonly stallTimeout?: number | undefined
  /** default: globalThis.fetch */
  readonly fetch?: typeof fetch | undefined
  /** default: globalThis.XMLHttpRequest */
  readonly XMLHttpRequest?: (new() => XhrLike) | undefined
}

/** The stored object, as the route reported it after completing. */
export interface UploadResult {
  readonly path: string
  readonly size: number
  readonly contentType: string
  readonly etag: string
}

/** A file, or any Blob with a name. */
export type UploadFile = Blob & { readonly name?: string; readonly lastModified?: number }

// --- error texts -----------------------------------------------------------------------------------------

export const RETRY_HINT = "Landed parts are kept: retry the upload, or pick the same file again to resume it"

export const PLATFORM_CAP_HINT =
  "A platform in front of the route refused the body: serverless functions take at most 4.5 MB on one platform and 6 MB on another, and an edge platform's free plan 100 MB; upload straight to storage instead"

const originOf = () => (globalThis as { location?: { origin?: string } }).location?.origin ?? "this origin"

const corsRefusal = (headers: Readonly<Record<string, string>>) =>
  new BlobError("request_failed", {
    message: `The upload was blocked before it started: the bucket must allow PUT and the signed headers (${
      ["content-type", "content-length", ...Object.keys(headers).filter((h) => h !== "content-type")].join(", ")
    }) from ${originOf()}`,
    hint: "Set the bucket's CORS rules (Bucket.configureCors); buckets allow all origins by default"
  })

/** An AbortError, as fetch rejects with it. */
export const abortError = (): DOMException => new DOMException("The upload was canceled", "AbortError")

// --- one attempt -----------------------------------------------------------------------------------------

/** A failure worth another attempt; `status` 0 = no answer. Internal: never leaves this module. */
class Transient {
  readonly _tag = "Transient"
  readonly status: number
  constructor(status: number) {
    this.status = status
  }
}

/** A 401/403 on a URL that is not fresh: re-sign and send again. */
class Expired {
  readonly _tag = "Expired"
}

/** The URL was re-signed after an expiry: send again at once (not a failed attempt). */
class Renewed {
  readonly _tag = "Renewed"
}

type Failure = BlobError | Transient | Expired | Renewed

/**
 * Sends again once with the renewed URL. A renewed URL is fresh, so a second refusal is a mismatch, not
 * expiry; only a client clock far off could see expiry twice: that is reported, not looped on.
 */
const sendAgainIfRenewed = <A>(attempt: Effect.Effect<A, Failure>, what: string) =>
  attempt.pipe(
    Effect.retry({ times: 1, while: (f) => f instanceof Renewed }),
    Effect.mapError((f) =>
      f instanceof Renewed || f instanceof Expired
        ? new BlobError("signature_mismatch", { message: `Storage refused ${what} with freshly renewed URLs` })
        : f
    )
  )

const isTransient = (f: Failure): f is Transient => f instanceof Transient

interface PutOutcome {
  readonly status: number
  /** no progress and no answer for stallTimeout: given up (not a CORS refusal, whatever was sent) */
  readonly stalled: boolean
  readonly sent: number
  readonly etag: string | null
  readonly body: string
}

/** One PUT with XHR; interrupting the fiber aborts it. Never fails: the outcome is classified after. */
const xhrPut = (
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

/** Storage's answer to a PUT, by the spec's browser rules (see the module comment). */
const classifyPut = (
  outcome: PutOutcome,
  context: { readonly fresh: boolean; readonly headers: Readonly<Record<string, string>>; readonly what: string }
): Failure | undefined => {
  const { status } = outcome
  if (status >= 200 && status < 300) return undefined
  if (status === 0) return outcome.sent === 0 && !outcome.stalled ? corsRefusal(context.headers) : new Transient(0)
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

// --- the client ------------------------------------------------------------------------------------------

interface Remembered {
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

/** The upload as an Effect: fails with BlobError; interrupting it aborts every request in flight. */
export const uploadEffect = (file: UploadFile, options: UploadOptions): Effect.Effect<UploadResult, BlobError> =>
  Effect.suspend(() => {
    if (typeof options?.route !== "string" || options.route === "") throw new TypeError("upload: options.route is required")
    const fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis)
    const Xhr = options.XMLHttpRequest ?? (globalThis as unknown as { XMLHttpRequest?: new() => XhrLike }).XMLHttpRequest
    if (Xhr === undefined) throw new TypeError("upload: no XMLHttpRequest here (pass options.XMLHttpRequest)")
    const retries = options.retries ?? 3
    if (!Number.isInteger(retries) || retries < 0) throw new TypeError("upload: retries must be an integer >= 0")
    const concurrency = options.concurrency ?? 4
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new TypeError("upload: concurrency must be an integer >= 1")
    const freshFor = options.freshFor ?? 60_000
    const stallTimeout = options.stallTimeout ?? 60_000
    const pathname = options.pathname ?? file.name ?? ""
    const contentType = options.contentType ?? (file.type === "" ? "application/octet-stream" : file.type)
    const store = options.resume === false ? undefined : options.resume ?? defaultStore()
    const key = fingerprint(file, options, pathname, contentType)
    const total = file.size

    // backoff between attempts: exponential from base, capped, jittered (built once per upload)
    const backoff = Schedule.min([
      Schedule.exponential(`${options.retryDelay?.base ?? 250} millis`),
      Schedule.spaced(`${options.retryDelay?.cap ?? 4000} millis`)
    ]).pipe(Schedule.jittered)

    /** Runs `attempt` with retries on Transient; exhaustion is request_failed with count and last status. */
    const withRetries = <A, E extends Failure>(what: string, attempt: Effect.Effect<A, E>) => {
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
              hint: RETRY_HINT
            })
            : f as Exclude<E, Transient>
        )
      )
    }

    // progress: bytes landed plus bytes in flight per request
    let landedBytes = 0
    const inFlight = new Map<number, number>()
    let lastReported = -1
    const report = () => {
      if (options.onProgress === undefined) return
      let loaded = landedBytes
      for (const n of inFlight.values()) loaded += n
      loaded = Math.min(loaded, total)
      if (loaded === lastReported) return
      lastReported = loaded
      options.onProgress({ loaded, total, percentage: total === 0 ? 100 : Math.round((loaded / total) * 10_000) / 100 })
    }

    /** One call of the route: its JSON, its BlobError, or Transient (no answer, 5xx/429 without JSON). */
    const callRoute = <A>(body: Record<string, unknown>, what: string) =>
      withRetries(
        what,
        Effect.tryPromise({
          try: (signal) =>
            fetchImpl(options.route, {
              method: "POST",
              headers: { "content-type": "application/json", ...options.headers },
              body: JSON.stringify(options.routeName === undefined ? body : { ...body, route: options.routeName }),
              signal
            }),
          catch: () => new Transient(0)
        }).pipe(
          // an unanswered call is given up (the request aborted) and retried like no answer at all
          Effect.timeoutOrElse({ duration: stallTimeout, orElse: () => Effect.fail(new Transient(0)) }),
          Effect.flatMap((response) =>
            Effect.promise(() => response.text().catch(() => "")).pipe(
              Effect.flatMap((text): Effect.Effect<A, BlobError | Transient> => {
                if (response.ok) {
                  try {
                    return Effect.succeed(JSON.parse(text) as A)
                  } catch {
                    return Effect.fail(new BlobError("request_failed", { status: 502, message: `The upload route answered ${what} with something other than JSON` }))
                  }
                }
                const refusal = routeRefusal(response.status, text)
                return Effect.fail(refusal ?? new Transient(response.status))
              })
            )
          )
        )
      )

    const complete = (completionToken: string, parts: ReadonlyArray<CompletedPart> | undefined) =>
      callRoute<CompleteUploadResponse>({ type: "complete", completionToken, ...(parts === undefined ? {} : { parts }) }, "completing the upload")
        .pipe(Effect.map(({ path, size, contentType: type, etag }): UploadResult => ({ path, size, contentType: type, etag })))

    /** Stores `token` for resuming (best effort: a full or blocked storage only loses the resume). */
    const remember = (completionToken: string) => {
      try {
        store?.setItem(key, JSON.stringify({ completionToken, savedAt: Date.now() } satisfies Remembered))
      } catch { /* resuming is a convenience */ }
    }
    const forget = () => {
      try {
        store?.removeItem(key)
      } catch { /* idem */ }
    }
    const recall = (): Remembered | undefined => {
      try {
        const raw = store?.getItem(key)
        const value = raw == null ? undefined : JSON.parse(raw) as Partial<Remembered>
        return typeof value?.completionToken === "string" ? value as Remembered : undefined
      } catch {
        return undefined
      }
    }

    // --- single PUT ---

    const single = (started: BeginUploadResponse) =>
      Effect.gen(function*() {
        let url = started.url!
        let headers = started.headers
        let token = started.completionToken
        let issuedAt = Date.now()
        let expiresAt = started.expiresAt
        let unknownOutcome = false
        const what = "the upload"
        const attempt: Effect.Effect<"stored" | "maybe-stored", Failure> = Effect.gen(function*() {
          inFlight.set(0, 0)
          const outcome = yield* xhrPut(Xhr, url, headers, file, (loaded) => {
            inFlight.set(0, loaded)
            report()
          }, stallTimeout)
          inFlight.set(0, 0)
          const fresh = Date.now() - issuedAt < freshFor && Date.now() < expiresAt
          const failure = classifyPut(outcome, { fresh, headers, what })
          if (failure === undefined) return "stored" as const
          // a retry after an unseen success meets its own object: let complete check it
          if (BlobError.is(failure, "already_exists") && unknownOutcome) return "maybe-stored" as const
          if (isTransient(failure) && failure.status === 0) unknownOutcome = true
          if (failure instanceof Expired) {
            const renewed = yield* callRoute<ResumeUploadResponse>({ type: "resume", completionToken: token }, "renewing the upload URL")
            url = renewed.url!
            headers = renewed.headers
            token = renewed.completionToken
            expiresAt = renewed.expiresAt
            issuedAt = Date.now()
            return yield* Effect.fail(new Renewed())
          }
          return yield* Effect.fail(failure)
        })
        yield* withRetries(what, sendAgainIfRenewed(attempt, what))
        landedBytes = total
        inFlight.clear()
        report()
        return yield* complete(token, undefined)
      })

    // --- multipart ---

    interface Plan {
      readonly token: string
      readonly partSize: number
      readonly parts: ReadonlyArray<PresignedPart>
      readonly landed: ReadonlyArray<CompletedPart & { readonly size: number }>
      readonly expiresAt: number
    }

    const multipart = (plan: Plan) =>
      Effect.gen(function*() {
        let token = plan.token
        remember(token)
        const etags = new Map<number, string>(plan.landed.map((p) => [p.partNumber, p.etag]))
        landedBytes = plan.landed.reduce((sum, p) => sum + p.size, 0)
        report()
        interface Signed {
          readonly url: string
          readonly issuedAt: number
          readonly expiresAt: number
        }
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
            const renewed = yield* callRoute<ResumeUploadResponse>({ type: "resume", completionToken: token, parts: pending }, "renewing the part URLs")
            token = renewed.completionToken
            remember(token)
            keep(renewed.multipart?.parts ?? [], renewed.expiresAt)
          }))

        const sendPart = (part: PresignedPart) => {
          const what = `the upload of part ${part.partNumber}`
          const from = (part.partNumber - 1) * plan.partSize
          const bytes = file.slice(from, from + part.size)
          const attempt: Effect.Effect<void, Failure> = Effect.gen(function*() {
            const signed = urls.get(part.partNumber)!
            inFlight.set(part.partNumber, 0)
            const outcome = yield* xhrPut(Xhr, signed.url, {}, bytes, (loaded) => {
              inFlight.set(part.partNumber, loaded)
              report()
            }, stallTimeout)
            inFlight.delete(part.partNumber)
            const fresh = Date.now() - signed.issuedAt < freshFor && Date.now() < signed.expiresAt
            const failure = classifyPut(outcome, { fresh, headers: {}, what })
            if (failure === undefined) {
              if (outcome.etag === null || outcome.etag === "") {
                return yield* new BlobError("request_failed", {
                  status: 502,
                  message: "Storage did not expose the ETag of an uploaded part",
                  hint: "The bucket's CORS rules must expose the ETag header (Bucket.configureCors does)"
                })
              }
              etags.set(part.partNumber, outcome.etag)
              landedBytes += part.size
              report()
              return
            }
            report()
            if (failure instanceof Expired) {
              yield* renew(part.partNumber, signed)
              return yield* Effect.fail(new Renewed())
            }
            return yield* Effect.fail(failure)
          }).pipe(Effect.onInterrupt(() => Effect.sync(() => inFlight.delete(part.partNumber))))
          return withRetries(what, sendAgainIfRenewed(attempt, what))
        }

        // a part that fails for good stops new parts from starting, but the parts in flight finish: they land
        // and a later resume skips them (interrupting them would throw their bytes away). Cancel still
        // aborts everything.
        let failure: BlobError | undefined
        yield* Effect.forEach(
          plan.parts,
          (part) =>
            Effect.suspend(() =>
              failure !== undefined ? Effect.void : sendPart(part).pipe(
                Effect.catch((error: BlobError) => Effect.sync(() => void (failure ??= error)))
              )
            ),
          { concurrency, discard: true }
        )
        if (failure !== undefined) return yield* Effect.fail(failure)
        const parts = [...etags].map(([partNumber, etag]) => ({ partNumber, etag })).sort((a, b) => a.partNumber - b.partNumber)
        return yield* complete(token, parts)
      })

    // --- begin, or resume a remembered upload ---

    const begin = callRoute<BeginUploadResponse>({
      type: "begin",
      pathname,
      contentType,
      size: total,
      ...(options.clientPayload === undefined ? {} : { clientPayload: options.clientPayload })
    }, "starting the upload")

    const fromBegin = (started: BeginUploadResponse) =>
      started.multipart === undefined
        ? single(started)
        : multipart({
          token: started.completionToken,
          partSize: started.multipart.partSize,
          parts: started.multipart.parts,
          landed: [],
          expiresAt: started.expiresAt
        })

    const resumed = (remembered: Remembered) =>
      callRoute<ResumeUploadResponse>({ type: "resume", completionToken: remembered.completionToken }, "resuming the upload").pipe(
        Effect.flatMap((answer) =>
          answer.multipart === undefined
            ? Effect.fail(new BlobError("invalid_input", { message: "The remembered upload is not a multipart upload" }))
            : Effect.succeed({
              token: answer.completionToken,
              partSize: answer.multipart.partSize,
              parts: answer.multipart.parts,
              landed: answer.multipart.landed ?? [],
              expiresAt: answer.expiresAt
            } satisfies Plan)
        ),
        // the upload is gone (completed, aborted, expired): start over
        Effect.catchIf(BlobError.hasCode("not_found", "forbidden", "invalid_input"), () => {
          forget()
          return Effect.succeed(undefined)
        })
      )

    const remembered = recall()
    const run = Effect.gen(function*() {
      const plan = remembered === undefined ? undefined : yield* resumed(remembered)
      const result = plan === undefined ? yield* Effect.flatMap(begin, fromBegin) : yield* multipart(plan)
      forget()
      return result
    })
    // a refusal other than a transient one means the remembered upload cannot go on: forget it
    return run.pipe(
      Effect.tapError((error) => BlobError.is(error, "request_failed") ? Effect.void : Effect.sync(forget))
    ) as Effect.Effect<UploadResult, BlobError>
  })

/** The refusal in a route's error answer: its BlobError JSON, or a platform's 413; undefined: retry it. */
const routeRefusal = (status: number, text: string): BlobError | undefined => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  if (typeof json === "object" && json !== null && typeof (json as { code?: unknown }).code === "string") {
    try {
      return BlobError.fromJSON(json)
    } catch {
      // not one of ours: judged by status below
    }
  }
  if (status === 413) return new BlobError("too_large", { message: "The upload request was refused as too large (413)", hint: PLATFORM_CAP_HINT })
  if (status === 408 || status === 429 || status >= 500) return undefined
  return new BlobError("request_failed", { status, message: `The upload route answered ${status}` })
}

const capitalize = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)

/**
 * Uploads `file` through the upload route at `options.route`; resolves with the stored object's info.
 * Rejects with a BlobError, or with an AbortError (`DOMException`) when `options.signal` aborts it.
 */
export const upload = (file: UploadFile, options: UploadOptions): Promise<UploadResult> => {
  const signal = options?.signal
  if (signal?.aborted === true) return Promise.reject(abortError())
  return Effect.runPromiseExit(uploadEffect(file, options), signal === undefined ? undefined : { signal }).then((exit) => {
    if (Exit.isSuccess(exit)) return exit.value
    if (signal?.aborted === true || Cause.hasInterruptsOnly(exit.cause)) throw abortError()
    throw Cause.squash(exit.cause)
  })
}
