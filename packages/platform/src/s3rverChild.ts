/**
 * The s3rver fallback's own process, started and restarted by `LocalObjectStorage.ts`: s3rver leaves
 * errors of some of its streams unhandled (completing a multipart upload that names a part never sent,
 * even unsigned and straight to its port), and in the suite's process such an error ended every
 * service at once. Here it ends only this process, which is started again on the same port.
 *
 * s3rver builds file paths from requests as sent and checks no signature: `s3rverRequests.ts` refuses
 * what S3 would (names that reach outside the store, among others) before it runs. It lacks ListParts
 * and AbortMultipartUpload: `s3rverMultipart.ts` answers them here. It wrote an object over its file
 * in place and read one by name after its size: `s3rverWholeObjects.ts` writes and reads it whole.
 *
 * Arguments: the folder s3rver keeps its buckets in, and the port (0: any free one). Once listening it
 * sends `{ port }` over the IPC channel; it exits when that channel closes (its parent stopped or died).
 */
import { createRequire } from "node:module"
import { serveObjectsWhole, type WholeObjectStore } from "./s3rverWholeObjects.ts"
import { multipartOperations } from "./s3rverMultipart.ts"
import { requestChecks, type Store } from "./s3rverRequests.ts"

interface S3rverInstance {
  run(): Promise<{ readonly port: number }>
  close(): Promise<void>
  /** Koa's middleware list, composed when `run` listens; s3rver's router is its last entry. */
  readonly middleware: Array<unknown>
  readonly store: Store & WholeObjectStore
}
type S3rverConstructor = new(options: {
  readonly address: string
  readonly port: number
  readonly directory: string
  readonly silent: boolean
  readonly vhostBuckets: boolean
}) => S3rverInstance

const [directory, port] = process.argv.slice(2)
// s3rver ships no types: load it as CommonJS and describe what is used
const S3rver = createRequire(import.meta.url)("s3rver") as S3rverConstructor
const server = new S3rver({ address: "127.0.0.1", port: Number(port), directory: directory!, silent: true, vhostBuckets: false })
serveObjectsWhole(server.store)
// the checks before s3rver reads the request (after its logging and its writing of a body as XML), the
// multipart operations just before its router
const vhost = server.middleware.findIndex((middleware) => (middleware as { readonly name?: string }).name === "vhost")
if (vhost < 0) throw new Error("s3rver's vhost middleware is not where this build expects it")
server.middleware.splice(vhost, 0, requestChecks(server.store))
server.middleware.splice(server.middleware.length - 1, 0, multipartOperations(server.store))
const listening = await server.run()
process.send!({ port: listening.port })
process.once("disconnect", () => void server.close().finally(() => process.exit(0)))
