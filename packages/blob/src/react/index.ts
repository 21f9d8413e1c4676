/**
 * `@svc/blob/react`: `useUpload` and `useUploads`, plus everything of `@svc/blob/browser` (the client,
 * the upload record, BlobError and the shared types). React is an optional peer dependency of
 * `@svc/blob`: only this entrypoint imports it.
 *
 * @module
 */
export * from "../browser/index.ts"
export * from "./hooks.ts"
