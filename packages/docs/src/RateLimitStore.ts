/**
 * The rate limiter's counters, in memory, for at most `capacity` keys.
 *
 * effect's `RateLimiter.layerStoreMemory` keeps a bucket for every key it was ever asked about and
 * never lets one go: the anonymous limit is keyed by client address, so every address that ever called
 * (an IPv6 client picks a fresh one from its /64 per request; behind `DOCS_TRUST_PROXY` a client that
 * reaches the API around the proxy names any `X-Forwarded-For`) stayed in memory for the life of the
 * process. This store has the same token-bucket and fixed-window arithmetic, and keeps its keys in
 * least-recently-used order: past `capacity` the key used longest ago is forgotten. A forgotten key
 * starts again with a full bucket, which is what a key idle for a window has anyway; only a flood of
 * more than `capacity` distinct keys within one window can cut a limited caller's wait short, and
 * such a flood already has a fresh bucket per address.
 *
 * The adaptive operations (client-side feedback from responses, unused here) are effect's own.
 */
import { Duration, Effect, Layer } from "effect"
import { RateLimiter } from "effect/persistence"

/** Moves `key` to the most recently used end with `value`, then forgets the oldest keys past `capacity`. */
const remember = <V>(entries: Map<string, V>, key: string, value: V, capacity: number) => {
  entries.delete(key)
  entries.set(key, value)
  for (const oldest of entries.keys()) {
    if (entries.size <= capacity) break
    entries.delete(oldest)
  }
}

/** The store's state, for tests: how many keys each algorithm holds. */
export interface BoundedStoreSize {
  readonly tokenBuckets: number
  readonly fixedWindows: number
}

/** A `RateLimiterStore` remembering at most `capacity` keys per algorithm; `size` reports how many it holds. */
export const makeBoundedStore = Effect.fnUntraced(function*(capacity: number) {
  if (!Number.isInteger(capacity) || capacity < 1) return yield* Effect.die(new RangeError(`capacity must be a positive integer, got ${capacity}`))
  const inner = yield* Effect.provide(Effect.service(RateLimiter.RateLimiterStore), RateLimiter.layerStoreMemory)
  const buckets = new Map<string, { tokens: number; lastRefill: number }>()
  const counters = new Map<string, { count: number; expiresAt: number }>()

  const store = RateLimiter.RateLimiterStore.of({
    ...inner,
    // effect's memory store's arithmetic (RateLimiter.ts layerStoreMemory), with `remember` in place of set
    fixedWindow: (options) =>
      Effect.clockWith((clock) =>
        Effect.sync(() => {
          const refillRateMillis = Duration.toMillis(options.refillRate)
          const now = clock.currentTimeMillisUnsafe()
          let counter = counters.get(options.key)
          if (counter === undefined || counter.expiresAt <= now) counter = { count: 0, expiresAt: now }
          remember(counters, options.key, counter, capacity)
          if (options.limit !== undefined && counter.count + options.tokens > options.limit) {
            return [counter.count + options.tokens, counter.expiresAt - now] as const
          }
          counter.count += options.tokens
          counter.expiresAt += refillRateMillis * options.tokens
          return [counter.count, counter.expiresAt - now] as const
        })
      ),
    tokenBucket: (options) =>
      Effect.clockWith((clock) =>
        Effect.sync(() => {
          const refillRateMillis = Duration.toMillis(options.refillRate)
          const now = clock.currentTimeMillisUnsafe()
          const bucket = buckets.get(options.key) ?? { tokens: options.limit, lastRefill: now }
          remember(buckets, options.key, bucket, capacity)
          const tokensToAdd = Math.floor((now - bucket.lastRefill) / refillRateMillis)
          if (tokensToAdd > 0) {
            bucket.tokens = Math.min(options.limit, bucket.tokens + tokensToAdd)
            bucket.lastRefill += tokensToAdd * refillRateMillis
          }
          if (bucket.tokens >= options.limit) bucket.lastRefill = now
          const newTokenCount = bucket.tokens - options.tokens
          if (options.allowOverflow || newTokenCount >= 0) bucket.tokens = newTokenCount
          return [newTokenCount, Math.max(0, now - bucket.lastRefill)] as const
        })
      )
  })
  const size = (): BoundedStoreSize => ({ tokenBuckets: buckets.size, fixedWindows: counters.size })
  return { store, size }
})

/** {@link makeBoundedStore} as the layer of `RateLimiterStore`. */
export const layerBoundedStore = (capacity: number): Layer.Layer<RateLimiter.RateLimiterStore> =>
  Layer.effect(RateLimiter.RateLimiterStore, Effect.map(makeBoundedStore(capacity), ({ store }) => store))
