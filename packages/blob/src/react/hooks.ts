/**
 * React hooks over the framework-free upload record (`../browser/record.ts`): the record is the state,
 * the hooks only subscribe to it (`useSyncExternalStore`), so a UI without React gets the same behaviour.
 *
 * - `useUpload(route, options?)`: one upload at a time: `{ upload(file), status, progress, error, result,
 *   cancel(), reset() }`. Starting another upload cancels the one running; unmounting cancels too.
 * - `useUploads(route, options?)`: a list of records, one per file (`add(files)`), each with its own
 *   `cancel()`; `cancelAll()`, `clearFinished()`.
 *
 * @module
 */
import { useCallback, useEffect, useMemo, useRef, useState, useSyncExternalStore } from "react"
import {
  createUploadQueue,
  createUploadTask,
  type UploadQueue,
  type UploadRecord,
  type UploadStatus,
  type UploadTask
} from "../browser/record.ts"
import type { UploadFile, UploadOptions, UploadProgress, UploadResult } from "../browser/upload.ts"
import type { BlobError } from "../shared/BlobError.ts"

/** Options of the hooks: those of `upload` except the route (an argument) and the signal (use cancel). */
export type UploadHookOptions = Omit<UploadOptions, "route" | "signal">

export interface UseUploadResult {
  /** starts an upload (canceling one still running); resolves with the stored object, rejects like `upload` */
  readonly upload: (file: UploadFile, options?: Partial<UploadHookOptions>) => Promise<UploadResult>
  readonly status: UploadStatus
  readonly progress: UploadProgress
  readonly error: BlobError | undefined
  readonly result: UploadResult | undefined
  /** the current record (undefined before the first upload) */
  readonly record: UploadRecord | undefined
  readonly cancel: () => void
  /** back to idle (cancels an upload still running) */
  readonly reset: () => void
}

const IDLE_PROGRESS: UploadProgress = { loaded: 0, total: 0, percentage: 0 }
const noSubscription = () => () => undefined
const noRecord = () => undefined

export const useUpload = (route: string, options?: UploadHookOptions): UseUploadResult => {
  // the latest options without restarting anything when the caller passes a new object each render
  const latest = useRef(options)
  latest.current = options
  const [task, setTask] = useState<UploadTask | undefined>(undefined)
  const record = useSyncExternalStore(task?.subscribe ?? noSubscription, task?.snapshot ?? noRecord, task?.snapshot ?? noRecord)
  // a replaced task, or unmounting, cancels what still runs (finished tasks ignore cancel)
  useEffect(() => () => task?.cancel(), [task])
  const upload = useCallback((file: UploadFile, perCall?: Partial<UploadHookOptions>) => {
    const next = createUploadTask(file, { ...latest.current, ...perCall, route })
    setTask(next)
    return next.start()
  }, [route])
  const cancel = useCallback(() => task?.cancel(), [task])
  const reset = useCallback(() => setTask(undefined), [])
  return {
    upload,
    status: record?.status ?? "idle",
    progress: record?.progress ?? IDLE_PROGRESS,
    error: record?.error,
    result: record?.result,
    record,
    cancel,
    reset
  }
}

export interface UseUploadsResult {
  /** one record per file, in the order added */
  readonly uploads: ReadonlyArray<UploadRecord>
  /** adds and starts an upload per file (a FileList works); `perFile` gives per-file options (a pathname) */
  readonly add: (
    files: Iterable<UploadFile> | ArrayLike<UploadFile>,
    perFile?: (file: UploadFile) => Partial<UploadHookOptions>
  ) => ReadonlyArray<UploadRecord>
  readonly cancelAll: () => void
  readonly clearFinished: () => void
}

export const useUploads = (route: string, options?: UploadHookOptions): UseUploadsResult => {
  const latest = useRef(options)
  latest.current = options
  const queue: UploadQueue = useMemo(() => createUploadQueue({ route }), [route])
  const uploads = useSyncExternalStore(queue.subscribe, queue.snapshot, queue.snapshot)
  useEffect(() => () => queue.cancelAll(), [queue])
  const add = useCallback<UseUploadsResult["add"]>(
    (files, perFile) => queue.add(files, (file) => ({ ...latest.current, ...perFile?.(file) })),
    [queue]
  )
  return { uploads, add, cancelAll: queue.cancelAll, clearFinished: queue.clearFinished }
}
