/**
 * The upload record: a small state machine around one `upload(...)`, framework-free, so the React hooks
 * (and any other UI) only subscribe to it.
 *
 * ```
 * idle --start()--> uploading --resolved--> done
 *                       |------refusal or retries used up--> error     (error: a BlobError)
 *                       '------cancel()--------------------> canceled  (error stays undefined)
 * idle --cancel()--> canceled
 * ```
 *
 * `start()` returns the upload's promise: it rejects with the BlobError, or with an AbortError
 * (`DOMException`) after `cancel()`, never a BlobError then. Snapshots are immutable: a new frozen object
 * on every change (what `useSyncExternalStore` needs). A listener that throws is reported (`notifyAll`)
 * and changes nothing else.
 *
 * @module
 */
import { BlobError } from "../shared/BlobError.ts"
import { abortError, upload, type UploadFile, type UploadOptions, type UploadProgress, type UploadResult } from "./upload.ts"
import { fileProblem, reportCallbackError, signalProblem } from "./upload/session.ts"

export type UploadStatus = "idle" | "uploading" | "done" | "error" | "canceled"

export interface UploadRecord {
  readonly id: string
  readonly file: UploadFile
  readonly name: string
  readonly status: UploadStatus
  readonly progress: UploadProgress
  /** set in status error only */
  readonly error: BlobError | undefined
  /** set in status done only */
  readonly result: UploadResult | undefined
  readonly cancel: () => void
}

export interface UploadTask {
  /** the current record */
  readonly snapshot: () => UploadRecord
  /** called after every change; returns the unsubscribe function */
  readonly subscribe: (listener: () => void) => () => void
  /** starts the upload (once; later calls return the same promise) */
  readonly start: () => Promise<UploadResult>
  readonly cancel: () => void
}

let counter = 0
const nextId = () => `upload-${Date.now().toString(36)}-${(++counter).toString(36)}`

/**
 * Calls every listener; one that throws (a render bug) is reported as an event listener's error is
 * (`reportError`: the page's error handlers), and neither stops the others nor the upload. A throw
 * here used to leave the task in `uploading` for good, its upload finished and unseen.
 */
export const notifyAll = (listeners: ReadonlySet<() => void>): void => {
  for (const listener of [...listeners]) {
    try {
      listener()
    } catch (error) {
      reportCallbackError("an upload listener failed", error)
    }
  }
}

/** Anything that is not a BlobError (a bug, a TypeError from bad options) still reaches the UI as one. */
const asBlobError = (error: unknown): BlobError =>
  BlobError.is(error)
    ? error
    : new BlobError("request_failed", {
      message: error instanceof Error && error.message !== "" ? error.message : "The upload failed",
      cause: error
    })

/** A record for `file`, idle until `start()`. `options.signal` and `options.onProgress` still work. */
export const createUploadTask = (file: UploadFile, options: UploadOptions): UploadTask => {
  const problem = fileProblem(file) ?? signalProblem(options?.signal)
  if (problem !== undefined) throw new TypeError(`createUploadTask: ${problem}`)
  const controller = new AbortController()
  const listeners = new Set<() => void>()
  let promise: Promise<UploadResult> | undefined

  const cancel = () => {
    release()
    if (record.status === "idle" || record.status === "uploading") {
      set({ status: "canceled", error: undefined })
      controller.abort()
    }
  }
  // frozen: a snapshot is a value (useSyncExternalStore compares them); writing to one changed the task's
  let record: UploadRecord = Object.freeze({
    id: nextId(),
    file,
    name: file.name ?? "",
    status: "idle",
    progress: { loaded: 0, total: file.size, percentage: 0 },
    error: undefined,
    result: undefined,
    cancel
  })
  const set = (patch: Partial<UploadRecord>) => {
    record = Object.freeze({ ...record, ...patch })
    notifyAll(listeners)
  }
  // an outer signal cancels the same way as cancel(); the listener goes once the task settles, so a
  // long-lived signal (a page's) does not keep every finished task alive
  const release = () => options.signal?.removeEventListener("abort", cancel)
  options.signal?.addEventListener("abort", cancel, { once: true })
  // an abort that came before the task was created fires no event: canceled at once, nothing sent
  if (options.signal?.aborted === true) cancel()

  const start = () => {
    if (promise !== undefined) return promise
    if (record.status === "canceled") return (promise = Promise.reject(abortError()))
    set({ status: "uploading" })
    promise = upload(file, {
      ...options,
      signal: controller.signal,
      onProgress: (progress) => {
        // a late progress event must not pull a finished record back
        if (record.status === "uploading") set({ progress })
        options.onProgress?.(progress)
      }
    }).then(
      (result) => {
        release()
        if (record.status === "uploading") {
          set({ status: "done", result, progress: { loaded: result.size, total: result.size, percentage: 100 } })
        }
        return result
      },
      (error: unknown) => {
        release()
        if (controller.signal.aborted) throw abortError()
        const blobError = asBlobError(error)
        if (record.status === "uploading") set({ status: "error", error: blobError })
        throw blobError
      }
    )
    return promise
  }

  return {
    snapshot: () => record,
    subscribe: (listener) => {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    start,
    cancel
  }
}

export interface UploadQueue {
  /** every record, in the order added */
  readonly snapshot: () => ReadonlyArray<UploadRecord>
  readonly subscribe: (listener: () => void) => () => void
  /** adds and starts an upload per file (one File or Blob, or a list); per-file options (a pathname) from `perFile` */
  readonly add: (
    files: UploadFile | Iterable<UploadFile> | ArrayLike<UploadFile>,
    perFile?: (file: UploadFile) => Partial<UploadOptions>
  ) => ReadonlyArray<UploadRecord>
  readonly cancelAll: () => void
  /** drops finished records (done, error, canceled) */
  readonly clearFinished: () => void
}

/**
 * Several uploads through one route (a drop zone). Each runs on its own; the route's failures land on the
 * file's record. The promises of the tasks are handled here (a refusal is state, not an unhandled rejection).
 */
export const createUploadQueue = (options: UploadOptions): UploadQueue => {
  const listeners = new Set<() => void>()
  let tasks: ReadonlyArray<UploadTask> = []
  let records: ReadonlyArray<UploadRecord> = []
  const refresh = () => {
    records = Object.freeze(tasks.map((task) => task.snapshot()))
    notifyAll(listeners)
  }
  return {
    snapshot: () => records,
    subscribe: (listener) => {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    add: (files, perFile) => {
      // one File or Blob is a list of one (Array.from gave [] for it: nothing uploaded, no error)
      const list = fileProblem(files) === undefined ? [files as UploadFile] : Array.from(files as ArrayLike<UploadFile>)
      const added = list.map((file) => createUploadTask(file, { ...options, ...perFile?.(file) }))
      tasks = [...tasks, ...added]
      for (const task of added) {
        task.subscribe(refresh)
        task.start().catch(() => undefined)
      }
      refresh()
      return added.map((task) => task.snapshot())
    },
    cancelAll: () => {
      for (const task of tasks) task.cancel()
    },
    clearFinished: () => {
      tasks = tasks.filter((task) => {
        const status = task.snapshot().status
        return status === "idle" || status === "uploading"
      })
      refresh()
    }
  }
}
