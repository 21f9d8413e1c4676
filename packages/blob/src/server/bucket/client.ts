/**
 * The S3 side of a Bucket: options checked once, one `S3Client` per credential set (static credentials,
 * so the SDK never caches an expired session; the previous client lives a minute more for requests in
 * flight), `send` (one storage call; an expired temporary credential is re-minted through
 * `credentials.ts` and the call retried once when its body can be sent again), the retry policy of
 * idempotent verbs, public URLs and `close`.
 *
 * @module
 */
import { S3Client } from "@aws-sdk/client-s3"
import { Duration, Effect } from "effect"
import type { BlobError } from "../../shared/BlobError.ts"
import { parseSize } from "../../shared/size.ts"
import { credentialsFor, invalidateCredentials, type StorageCredentials } from "../credentials.ts"
import { isCredentialRefusal, normalizeStorageError } from "../normalize.ts"
import { retryPolicy, withRetry } from "../retry.ts"
import { type BlobToken, parseBlobToken } from "../token.ts"
import { encodePath, MiB } from "./keys.ts"
import type { BucketOptions } from "./types.ts"

/** What every S3 verb builds on. */
export interface S3Context {
  readonly token: BlobToken
  /** the bucket's name (the S3 commands' `Bucket` field) */
  readonly Bucket: string
  readonly multipartThreshold: number
  readonly partSize: number
  readonly partConcurrency: number
  readonly maxSinglePut: number
  /** the credentials to sign with now (minted, cached, refreshed: see credentials.ts) */
  readonly currentCredentials: Effect.Effect<StorageCredentials, BlobError>
  readonly clientFor: (credentials: StorageCredentials) => S3Client
  readonly send: <A>(
    path: string | undefined,
    call: (client: S3Client, signal: AbortSignal) => Promise<A>,
    replayable?: boolean
  ) => Effect.Effect<A, BlobError>
  /** the retry policy of idempotent verbs */
  readonly retried: <A, R>(effect: Effect.Effect<A, BlobError, R>) => Effect.Effect<A, BlobError, R>
  /** the public (unsigned) URL of a path */
  readonly url: (path: string) => string
  /** releases the S3 clients */
  readonly close: Effect.Effect<void>
}

/** Checks the options (TypeError when bad) and builds the S3 side. Synchronous. */
export const makeS3Context = (options: BucketOptions): S3Context => {
  const token: BlobToken = parseBlobToken(options.token, "options.token")
  const policy = retryPolicy(options.retry)
  const multipartThreshold = parseSize(options.multipartThreshold ?? 100 * MiB, "multipartThreshold")
  const partSize = parseSize(options.partSize ?? 8 * MiB, "partSize")
  if (partSize < 5 * MiB) throw new TypeError("partSize must be at least 5 MiB (the S3 minimum)")
  const partConcurrency = options.partConcurrency ?? 4
  if (!Number.isInteger(partConcurrency) || partConcurrency < 1) throw new TypeError("partConcurrency must be an integer >= 1")
  const maxSinglePut = parseSize(options.maxSinglePut ?? 5 * 1024 * MiB, "maxSinglePut")
  const refreshBeforeMs = Duration.toMillis(Duration.fromInputUnsafe(options.refreshBeforeExpiry ?? "5 minutes"))
  const mintBackoffThreshold = options.mintBackoffThreshold ?? 10
  if (!Number.isFinite(mintBackoffThreshold) || mintBackoffThreshold < 0) {
    throw new TypeError("mintBackoffThreshold must be a number of seconds >= 0")
  }
  const idleMs = Duration.toMillis(Duration.fromInputUnsafe(options.storageTimeout ?? "60 seconds"))
  if (!(idleMs > 0) || !Number.isFinite(idleMs)) throw new TypeError("storageTimeout must be a duration longer than 0")
  const credentialOptions = { refreshBeforeMs, mintBackoffThreshold, retry: policy }
  const Bucket = token.bucket

  // one S3 client per credential set: static credentials, so the SDK never caches an expired one
  let session: { readonly credentials: StorageCredentials; readonly client: S3Client } | undefined
  const retired = new Set<S3Client>()
  const clientFor = (credentials: StorageCredentials): S3Client => {
    if (session?.credentials === credentials) return session.client
    const previous = session
    const client = new S3Client({
      endpoint: token.endpoint,
      region: token.region,
      forcePathStyle: token.forcePathStyle,
      maxAttempts: 1, // retries are ours (Schedule), and never for non-idempotent verbs
      // an idle bound, not a total one: a large transfer that keeps moving is never cut
      requestHandler: { connectionTimeout: Math.min(idleMs, 10_000), socketTimeout: idleMs },
      // radosgw (and other stores) refuse aws-chunked uploads with trailing checksums: 411
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
      credentials: {
        accessKeyId: credentials.accessKeyId,
        secretAccessKey: credentials.secretAccessKey,
        ...(credentials.sessionToken === undefined ? {} : { sessionToken: credentials.sessionToken }),
        ...(credentials.expiresAt === undefined ? {} : { expiration: new Date(credentials.expiresAt) })
      }
    })
    session = { credentials, client }
    if (previous !== undefined) {
      // requests in flight keep their client; it is destroyed a minute later
      retired.add(previous.client)
      setTimeout(() => {
        retired.delete(previous.client)
        previous.client.destroy()
      }, 60_000).unref()
    }
    return client
  }

  const currentCredentials = credentialsFor(token, credentialOptions)

  /**
   * One storage call with the current credentials; storage refusing a temporary credential as expired
   * re-mints and retries once (when the request can be sent again). The second refusal surfaces.
   */
  const send = <A>(
    path: string | undefined,
    call: (client: S3Client, signal: AbortSignal) => Promise<A>,
    replayable = true
  ): Effect.Effect<A, BlobError> => {
    const attempt = (credentials: StorageCredentials) =>
      Effect.tryPromise({
        try: (signal) => call(clientFor(credentials), signal),
        catch: (error) => normalizeStorageError(error, { path, bucket: Bucket, signedWithToken: !credentials.temporary })
      })
    return Effect.flatMap(currentCredentials, (credentials) =>
      attempt(credentials).pipe(
        Effect.catchIf(
          (error) => replayable && credentials.temporary && isCredentialRefusal(error),
          () =>
            Effect.suspend(() => {
              invalidateCredentials(token, credentials)
              return Effect.flatMap(currentCredentials, attempt)
            })
        )
      ))
  }
  const retried = withRetry(policy)

  const url = (path: string) =>
    token.forcePathStyle
      ? `${token.endpoint}/${Bucket}/${encodePath(path)}`
      : `${token.endpoint.replace("://", `://${Bucket}.`)}/${encodePath(path)}`

  const close = Effect.sync(() => {
    session?.client.destroy()
    session = undefined
    for (const client of retired) client.destroy()
    retired.clear()
  })

  return {
    token,
    Bucket,
    multipartThreshold,
    partSize,
    partConcurrency,
    maxSinglePut,
    currentCredentials,
    clientFor,
    send,
    retried,
    url,
    close
  }
}
