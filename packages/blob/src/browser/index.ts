/**
 * `@svc/blob/browser`: the upload client (`upload`, `uploadEffect`), the upload record state machine
 * (`createUploadTask`, `createUploadQueue`), BlobError and the shared types. No server code: only
 * `effect` and browser APIs (fetch, XMLHttpRequest, localStorage).
 *
 * @module
 */
export * from "../shared/index.ts"
export * from "./record.ts"
export * from "./upload.ts"
