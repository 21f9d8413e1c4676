/**
 * `@svc/blob`: the server entrypoint. BlobError and the shared pieces, the Bucket client (Effect and
 * Promise), bucket tokens, storage error normalization and upload routes.
 *
 * @module
 */
export * from "../shared/index.ts"
export * from "./Bucket.ts"
export { clearCredentialCache, mintCount, normalizeMintError } from "./credentials.ts"
export { isTransient, normalizeStorageError, parseRetryAfter } from "./normalize.ts"
export type { RetryOptions } from "./retry.ts"
export * from "./token.ts"
export * from "./route.ts"
