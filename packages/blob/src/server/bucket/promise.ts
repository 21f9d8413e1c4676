/**
 * The Promise API: the same verbs as `BucketApi`, returning Promises that reject with BlobError.
 *
 * @module
 */
import { Effect } from "effect"
import { BlobError } from "../../shared/BlobError.ts"
import { argumentsProblem } from "./arguments.ts"
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
  /**
   * Runs `verb` once its arguments have the shapes it takes (`arguments.ts`): `null` options, a number
   * for a string, a string for a list are `invalid_input` naming the option, never a TypeError from
   * inside the verb.
   */
  const run = <A>(verb: string, args: ReadonlyArray<unknown>, effect: () => Effect.Effect<A, BlobError>) => {
    const problem = argumentsProblem(verb, args)
    return problem === undefined
      ? Effect.runPromise(Effect.suspend(effect))
      : Promise.reject(new BlobError("invalid_input", { message: `Invalid arguments to ${verb}: ${problem}` }))
  }
  return {
    name: api.name,
    endpoint: api.endpoint,
    url: api.url,
    effect: api,
    put: (...args) => run("put", args, () => api.put(...args)),
    get: (...args) => run("get", args, () => api.get(...args)),
    getBytes: (...args) => run("getBytes", args, () => api.getBytes(...args)),
    getText: (...args) => run("getText", args, () => api.getText(...args)),
    info: (...args) => run("info", args, () => api.info(...args)),
    exists: (...args) => run("exists", args, () => api.exists(...args)),
    copy: (...args) => run("copy", args, () => api.copy(...args)),
    move: (...args) => run("move", args, () => api.move(...args)),
    del: (...args) => run("del", args, () => api.del(...args)),
    list: (...args) => run("list", args, () => api.list(...args)),
    updateJson: (path, update, opts) => run("updateJson", [path, update, opts], () => api.updateJson(path, update, opts)),
    signedReadUrl: (...args) => run("signedReadUrl", args, () => api.signedReadUrl(...args)),
    signedUploadUrl: (...args) => run("signedUploadUrl", args, () => api.signedUploadUrl(...args)),
    signedMultipartUpload: (...args) => run("signedMultipartUpload", args, () => api.signedMultipartUpload(...args)),
    completeMultipartUpload: (...args) => run("completeMultipartUpload", args, () => api.completeMultipartUpload(...args)),
    abortMultipartUpload: (...args) => run("abortMultipartUpload", args, () => api.abortMultipartUpload(...args)),
    listParts: (...args) => run("listParts", args, () => api.listParts(...args)),
    signedUploadParts: (...args) => run("signedUploadParts", args, () => api.signedUploadParts(...args)),
    configureCors: (...args) => run("configureCors", args, () => api.configureCors(...args)),
    close: () => Effect.runPromise(api.close)
  }
}
