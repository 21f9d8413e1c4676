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
import { createUploadQueue, type UploadQueue, type UploadRecord, type UploadStatus } from "../browser/record.ts"
import type { UploadFile, UploadOptions, UploadProgress, UploadResult } from "../browser/upload.ts"
import type { BlobError } from "../shared/BlobError.ts"
import { createUploadSlot } from "./slot.ts"

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

export const useUpload = (route: string, options?: UploadHookOptions): UseUploadResult => {
  // the latest options without restarting anything when the caller passes a new object each render
  const latest = useRef(options)
  latest.current = options
  // one slot per component (useState's initializer: kept for the component's life, a memo may be dropped);
  // the running task lives in it, so a second upload() or a cancel() in the same event handler sees the
  // task the first upload() started (see ./slot.ts)
  const [slot] = useState(createUploadSlot)
  const record = useSyncExternalStore(slot.subscribe, slot.snapshot, slot.snapshot)
  // unmounting cancels what still runs (finished tasks ignore cancel)
  useEffect(() => () => slot.cancel(), [slot])
  const upload = useCallback(
    (file: UploadFile, perCall?: Partial<UploadHookOptions>) => slot.upload(file, { ...latest.current, ...perCall, route }),
    [slot, route]
  )
  const { cancel, reset } = slot
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
    files: UploadFile | Iterable<UploadFile> | ArrayLike<UploadFile>,
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
