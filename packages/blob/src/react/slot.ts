/**
 * The upload slot behind `useUpload`: one upload at a time, as a plain store (no React), so its rules
 * hold however the calls are batched and can be tested without a renderer.
 *
 * The running task is held here, not in React state: `upload()` replaces it and cancels the previous one
 * at once, and `cancel()` reads the current one. Relying on a render to see the new task (state, then an
 * effect's cleanup) let two `upload()` calls in one event handler both run to completion, and made
 * `upload(f); cancel()` in one handler cancel nothing, since `cancel` still saw the old task.
 *
 * @module
 */
import { createUploadTask, notifyAll, type UploadRecord, type UploadTask } from "../browser/record.ts"
import type { UploadFile, UploadOptions, UploadResult } from "../browser/upload.ts"

export interface UploadSlot {
  /** the current task's record; undefined before the first upload and after reset */
  readonly snapshot: () => UploadRecord | undefined
  /** called when the current task changes, or is replaced; returns the unsubscribe function */
  readonly subscribe: (listener: () => void) => () => void
  /** cancels the upload running (if any), then starts this one */
  readonly upload: (file: UploadFile, options: UploadOptions) => Promise<UploadResult>
  readonly cancel: () => void
  /** back to no record; cancels an upload still running */
  readonly reset: () => void
}

export const createUploadSlot = (): UploadSlot => {
  const listeners = new Set<() => void>()
  const notify = () => notifyAll(listeners)
  let task: UploadTask | undefined
  let unsubscribeTask: (() => void) | undefined
  const replace = (next: UploadTask | undefined) => {
    const previous = task
    unsubscribeTask?.()
    task = next
    unsubscribeTask = next?.subscribe(notify)
    // canceled after the switch: its change is no longer the slot's record (finished tasks ignore it)
    previous?.cancel()
    notify()
  }
  return {
    snapshot: () => task?.snapshot(),
    subscribe: (listener) => {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    upload: (file, options) => {
      let next: UploadTask
      try {
        next = createUploadTask(file, options)
      } catch (error) {
        // a bad file or option rejects, as upload() does: `upload` returns a promise, it never throws
        return Promise.reject(error)
      }
      replace(next)
      return next.start()
    },
    cancel: () => task?.cancel(),
    reset: () => replace(undefined)
  }
}
