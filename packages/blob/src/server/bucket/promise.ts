/**
 * The Promise API: the same verbs as `BucketApi`, returning Promises that reject with BlobError.
 *
 * @module
 */
import { Effect } from "effect"
import type { BlobError } from "../../shared/BlobError.ts"
import type { BucketApi, UpdateJsonOptions } from "./types.ts"

type Promised<F> = F extends (...args: infer A) => Effect.Effect<infer R, infer _E> ? (...args: A) => Promise<R> : F

/** The same verbs as {@link BucketApi}, returning Promises that reject with BlobError. */
export type PromiseBucket =
  & { readonly [K in Exclude<keyof BucketApi, "close" | "updateJson" | "name" | "endpoint" | "url">]: Promised<BucketApi[K]> }
  & {
    readonly name: string
    readonly endpoint: string
    url(path: string): string
    updateJson<A>(
      path: string,
      update: (current: A | undefined) => A | Promise<A>,
      options?: UpdateJsonOptions
    ): Promise<A>
    /** the Effect form of the same bucket */
    readonly effect: BucketApi
    close(): Promise<void>
  }

/**

/** Promises over a bucket's Effect verbs. */
export const promiseBucket = (api: BucketApi): PromiseBucket => {
  const run = <A>(effect: Effect.Effect<A, BlobError>) => Effect.runPromise(effect)
  return {
    name: api.name,
    endpoint: api.endpoint,
    url: api.url,
    effect: api,
    put: (...args) => run(api.put(...args)),
    get: (...args) => run(api.get(...args)),
    getBytes: (...args) => run(api.getBytes(...args)),
    getText: (...args) => run(api.getText(...args)),
    info: (...args) => run(api.info(...args)),
    exists: (...args) => run(api.exists(...args)),
    copy: (...args) => run(api.copy(...args)),
    move: (...args) => run(api.move(...args)),
    del: (...args) => run(api.del(...args)),
    list: (...args) => run(api.list(...args)),
    updateJson: (path, update, opts) => run(api.updateJson(path, update, opts)),
    signedReadUrl: (...args) => run(api.signedReadUrl(...args)),
    signedUploadUrl: (...args) => run(api.signedUploadUrl(...args)),
    signedMultipartUpload: (...args) => run(api.signedMultipartUpload(...args)),
    completeMultipartUpload: (...args) => run(api.completeMultipartUpload(...args)),
    abortMultipartUpload: (...args) => run(api.abortMultipartUpload(...args)),
    listParts: (...args) => run(api.listParts(...args)),
    signedUploadParts: (...args) => run(api.signedUploadParts(...args)),
    configureCors: (...args) => run(api.configureCors(...args)),
    close: () => run(api.close)
  }
}
