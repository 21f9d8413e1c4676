/**
 * Pieces shared by the server, browser and React entrypoints. Nothing here imports node or the AWS SDK.
 *
 * @module
 */
export * from "./BlobError.ts"
export * from "./contentTypes.ts"
export * from "./paths.ts"
export * from "./size.ts"
export * from "./protocol.ts"
