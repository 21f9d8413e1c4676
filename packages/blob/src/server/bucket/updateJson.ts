/**
 * `updateJson`: read, `update`, write with If-Match (If-None-Match: * when absent); a lost round is read
 * again after a short jittered pause, `conflict` after `maxAttempts`. The loop is the same for every
 * layer; a layer gives the read and the conditional write (`JsonStore`).
 *
 * @module
 */
import { GetObjectCommand } from "@aws-sdk/client-s3"
import { Duration, Effect, Random } from "effect"
import { randomUUID } from "node:crypto"
import { BlobError } from "../../shared/BlobError.ts"
import type { S3Context } from "./client.ts"
import { readOnlyRefusal, requirePath } from "./keys.ts"
import { type makePut, WRITE_ID } from "./put.ts"
import type { UpdateJsonOptions } from "./types.ts"

const encoder = new TextEncoder()

export interface JsonStore {
  readonly readOnly: boolean
  /** the stored text and its etag; undefined when nothing is stored */
  readonly read: (path: string) => Effect.Effect<{ readonly text: string; readonly etag: string } | undefined, BlobError>
  /** writes if the object still has `etag` (is still absent when undefined): else conflict or already_exists */
  readonly write: (path: string, bytes: Uint8Array, etag: string | undefined) => Effect.Effect<unknown, BlobError>
}

export const makeUpdateJson = (store: JsonStore) => {
  const updateJson = <A>(
    path: string,
    update: (current: A | undefined) => A | Effect.Effect<A, BlobError> | Promise<A>,
    options: UpdateJsonOptions = {}
  ): Effect.Effect<A, BlobError> =>
    Effect.gen(function*() {
      yield* requirePath(path)
      if (store.readOnly) return yield* readOnlyRefusal("Writing")
      const maxAttempts = options.maxAttempts ?? 6
      if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw new TypeError("maxAttempts must be an integer >= 1")
      for (let attempt = 1; attempt <= maxAttempts; attempt++) {
        const current = yield* store.read(path)
        let value: A | undefined
        if (current !== undefined) {
          try {
            value = JSON.parse(current.text) as A
          } catch (cause) {
            return yield* new BlobError("invalid_input", { message: `${path} does not hold JSON`, cause })
          }
        }
        const produced = update(value)
        const next: A = Effect.isEffect(produced)
          ? yield* (produced as Effect.Effect<A, BlobError>)
          : produced instanceof Promise
          ? yield* Effect.tryPromise({
            try: () => produced,
            catch: (cause) => BlobError.is(cause) ? cause : new BlobError("request_failed", { message: "The update function failed", cause })
          })
          : produced as A
        const bytes = encoder.encode(JSON.stringify(next))
        const written = yield* store.write(path, bytes, current?.etag).pipe(
          Effect.as(true),
          Effect.catchIf(BlobError.hasCode("conflict", "already_exists"), () => Effect.succeed(false))
        )
        if (written) return next
        if (attempt < maxAttempts) {
          // another writer won this round: back off a little (jittered) before reading again
          const jitter = yield* Random.nextBetween(0, 1)
          yield* Effect.sleep(Duration.millis(Math.round((5 + jitter * 20) * 2 ** Math.min(attempt, 5))))
        }
      }
      return yield* new BlobError("conflict", {
        message: `${path} kept changing: gave up after ${maxAttempts} attempts`,
        hint: "Retry later, or raise maxAttempts"
      })
    }).pipe(Effect.withSpan("Bucket.updateJson"))
  return updateJson
}

/** The S3 read (GetObject) and write (a conditional PutObject carrying a write id, never retried). */
export const makeS3JsonStore = (s3: S3Context, { putOnce }: Pick<ReturnType<typeof makePut>, "putOnce">): JsonStore => {
  const { Bucket, send, retried } = s3
  return {
    readOnly: s3.token.readOnly,
    read: (path) =>
      retried(send(path, async (client, signal) => {
        const out = await client.send(new GetObjectCommand({ Bucket, Key: path }), { abortSignal: signal })
        return { text: out.Body === undefined ? "" : await out.Body.transformToString(), etag: out.ETag ?? "" }
      })).pipe(Effect.catchIf(BlobError.hasCode("not_found"), () => Effect.succeed(undefined))),
    write: (path, bytes, etag) =>
      putOnce(path, { bytes }, {
        contentType: "application/json",
        ifNoneMatch: etag === undefined,
        ifMatch: etag,
        metadata: { [WRITE_ID]: randomUUID() },
        cacheControl: undefined
      })
  }
}
