/**
 * `@svc/blob/react`: BlobError and the shared types. The upload hooks are issue 5.
 *
 * @module
 */
export * from "../shared/index.ts"
