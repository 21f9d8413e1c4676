/**
 * `@svc/blob/browser`: BlobError and the shared types. The browser upload client is issue 5.
 *
 * @module
 */
export * from "../shared/index.ts"
