/**
 * Storage credentials for a bucket token.
 *
 * With a `role` in the token, short-lived session credentials are minted through STS `AssumeRole`
 * (signed with the token's long-lived key), cached per token for the whole process (every `Bucket` made
 * from the same token shares them), minted once for concurrent callers, and re-minted `refreshBefore`
 * ahead of their expiry. A caller that meets an expired-credential refusal invalidates the set it used and
 * gets a fresh one (see `Bucket`: re-mint and retry once).
 *
 * Credential service answers:
 * - a refusal of the token (any 4xx but a throttle) -> `unauthorized` ("Storage rejected the bucket
 *   token"), never retried;
 * - a throttle asking to wait more than `mintBackoffThreshold` (10 s) -> `mint_backoff` with `retryAfter`;
 *   a shorter one is waited out by the retry schedule, then `rate_limited`;
 * - 5xx / no answer -> retried, then `request_failed` (502).
 *
 * Without a role, the long-lived key is used directly and minting is off.
 *
 * @module
 */
import { AssumeRoleCommand, STSClient } from "@aws-sdk/client-sts"
import { Clock, Effect, Redacted, Semaphore } from "effect"
import { randomBytes } from "node:crypto"
import { BlobError } from "../shared/BlobError.ts"
import { describeFailure, markTransient } from "./normalize.ts"
import { type RetryPolicy, withRetry } from "./retry.ts"
import { type BlobToken, parseBlobToken } from "./token.ts"

export interface StorageCredentials {
  readonly accessKeyId: string
  readonly secretAccessKey: string
  readonly sessionToken?: string | undefined
  /** epoch ms; undefined for the long-lived key */
  readonly expiresAt?: number | undefined
  /** minted through STS */
  readonly temporary: boolean
}

export interface CredentialOptions {
  /** re-mint this long before expiry (ms, default 5 minutes; capped at the session length less 1 s) */
  readonly refreshBeforeMs: number
  /** a throttle longer than this (seconds) from the credential service is `mint_backoff` (default 10) */
  readonly mintBackoffThreshold: number
  readonly retry: RetryPolicy
}

interface Entry {
  current: StorageCredentials | undefined
  readonly lock: Semaphore.Semaphore
  readonly sts: STSClient
  mints: number
}

const cache = new Map<string, Entry>()

const entryFor = (token: BlobToken): Entry => {
  let entry = cache.get(token.cacheKey)
  if (entry === undefined) {
    entry = {
      current: undefined,
      lock: Semaphore.makeUnsafe(1),
      sts: new STSClient({
        endpoint: token.stsEndpoint,
        region: token.region,
        maxAttempts: 1,
        credentials: { accessKeyId: token.accessKeyId, secretAccessKey: Redacted.value(token.secretAccessKey) }
      }),
      mints: 0
    }
    cache.set(token.cacheKey, entry)
  }
  return entry
}

/** How many times credentials were minted for this token in this process (tests, diagnostics). */
export const mintCount = (token: BlobToken | string): number =>
  cache.get(typeof token === "string" ? parseBlobToken(token, "token").cacheKey : token.cacheKey)?.mints ?? 0

/** Forgets every cached credential (tests). */
export const clearCredentialCache = (): void => {
  for (const entry of cache.values()) entry.sts.destroy()
  cache.clear()
}

const THROTTLE_CODES = new Set(["Throttling", "ThrottlingException", "TooManyRequests", "SlowDown", "RequestLimitExceeded"])

/** The credential service's refusal, as a BlobError. */
export const normalizeMintError = (error: unknown, threshold: number): BlobError => {
  if (BlobError.is(error)) return error
  const failure = describeFailure(error)
  const { status, code } = failure
  const cause = new Error(
    `credential service answered ${status ?? "no status"} ${code ?? ""}: ${failure.message ?? ""}`.trim(),
    { cause: error }
  )
  const throttled = status === 429 || (code !== undefined && THROTTLE_CODES.has(code))
  if (throttled) {
    if (failure.retryAfter !== undefined && failure.retryAfter > threshold) {
      return new BlobError("mint_backoff", { retryAfter: failure.retryAfter, cause })
    }
    return markTransient(
      new BlobError("rate_limited", {
        message: "The credential service rate limited the request",
        ...(failure.retryAfter === undefined ? {} : { retryAfter: failure.retryAfter }),
        cause
      }),
      failure.retryAfter
    )
  }
  if (status !== undefined && status >= 400 && status < 500) {
    return new BlobError("unauthorized", { message: "Storage rejected the bucket token", cause })
  }
  if (status === 503 && failure.retryAfter !== undefined && failure.retryAfter > threshold) {
    return new BlobError("mint_backoff", { retryAfter: failure.retryAfter, cause })
  }
  return markTransient(
    new BlobError("request_failed", {
      status: 502,
      message: status === undefined
        ? "The credential service could not be reached"
        : `The credential service answered ${status}${code === undefined ? "" : ` ${code}`}`,
      cause
    }),
    failure.retryAfter
  )
}

const mint = (token: BlobToken, entry: Entry, options: CredentialOptions) =>
  Effect.tryPromise({
    try: (signal) =>
      entry.sts.send(
        new AssumeRoleCommand({
          RoleArn: token.role,
          RoleSessionName: `${token.sessionName}-${randomBytes(6).toString("hex")}`.slice(0, 64),
          DurationSeconds: token.durationSeconds
        }),
        { abortSignal: signal }
      ),
    catch: (error) => normalizeMintError(error, options.mintBackoffThreshold)
  }).pipe(
    withRetry(options.retry),
    Effect.flatMap((out) => {
      const c = out.Credentials
      if (c?.AccessKeyId === undefined || c.SecretAccessKey === undefined || c.SessionToken === undefined) {
        return Effect.fail(
          new BlobError("request_failed", { status: 502, message: "The credential service answered without credentials" })
        )
      }
      entry.mints++
      return Effect.succeed<StorageCredentials>({
        accessKeyId: c.AccessKeyId,
        secretAccessKey: c.SecretAccessKey,
        sessionToken: c.SessionToken,
        expiresAt: c.Expiration?.getTime(),
        temporary: true
      })
    })
  )

const fresh = (credentials: StorageCredentials | undefined, now: number, refreshBeforeMs: number) =>
  credentials !== undefined && (credentials.expiresAt === undefined || credentials.expiresAt - refreshBeforeMs > now)

/**
 * The credentials to sign with now: the long-lived key without a role, else the cached session (minted
 * when missing or due for renewal; one mint at a time per token).
 */
export const credentialsFor = (
  token: BlobToken,
  options: CredentialOptions
): Effect.Effect<StorageCredentials, BlobError> => {
  if (token.role === undefined) {
    return Effect.succeed({
      accessKeyId: token.accessKeyId,
      secretAccessKey: Redacted.value(token.secretAccessKey),
      temporary: false
    })
  }
  const entry = entryFor(token)
  const refreshBefore = Math.min(options.refreshBeforeMs, token.durationSeconds * 1000 - 1000)
  return Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    if (fresh(entry.current, now, refreshBefore)) return entry.current!
    return yield* entry.lock.withPermit(Effect.gen(function*() {
      const again = yield* Clock.currentTimeMillis
      if (fresh(entry.current, again, refreshBefore)) return entry.current!
      const minted = yield* mint(token, entry, options)
      entry.current = minted
      return minted
    }))
  })
}

/** Drops `used` from the cache if it is still the current set (after storage refused it as expired). */
export const invalidateCredentials = (token: BlobToken, used: StorageCredentials): void => {
  const entry = cache.get(token.cacheKey)
  if (entry !== undefined && entry.current === used) entry.current = undefined
}
