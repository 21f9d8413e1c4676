/**
 * The rate limiter's memory is bounded (RateLimitStore.ts): however many distinct client addresses
 * call, the store holds at most its capacity of buckets, forgetting the least recently used; under
 * the capacity it limits exactly as effect's own memory store does. And the API is wired to it:
 * `DOCS_RATE_LIMIT_CLIENTS` bounds the buckets of a running DocsAuth.
 */
import { assert, describe, it } from "@effect/vitest"
import { apiRoutes, toWebHandler } from "@svc/platform"
import { DocsApi } from "@svc/schema"
import { ConfigProvider, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { RateLimiter } from "effect/persistence"
import { DocsAuthLive } from "../../src/Auth.ts"
import { ApiHandlers } from "../../src/http.ts"
import { makeBoundedStore } from "../../src/RateLimitStore.ts"
import { memoryServices } from "./memoryApi.ts"

const limiterOver = (capacity: number) =>
  Effect.gen(function*() {
    const { store, size } = yield* makeBoundedStore(capacity)
    const limiter = yield* Effect.provideService(RateLimiter.make, RateLimiter.RateLimiterStore, store)
    const take = (key: string, limit = 2, algorithm: "token-bucket" | "fixed-window" = "token-bucket") =>
      Effect.map(Effect.result(limiter.consume({ algorithm, window: "1 minute", limit, key })), (result) => result._tag === "Success")
    return { take, size }
  })

describe("bounded rate-limit store", () => {
  it.effect("capacity + 1,000 distinct keys leave at most capacity buckets, per algorithm", () =>
    Effect.gen(function*() {
      const capacity = 500
      const { take, size } = yield* limiterOver(capacity)
      for (let i = 0; i < capacity + 1_000; i++) {
        assert.isTrue(yield* take(`address:2001:db8::${i.toString(16)}`))
        assert.isTrue(yield* take(`address:2001:db8::${i.toString(16)}`, 2, "fixed-window"))
      }
      assert.deepStrictEqual(size(), { tokenBuckets: capacity, fixedWindows: capacity })
    }))

  it.effect("under the capacity a key is limited as effect's store limits it, and refills with time", () =>
    Effect.gen(function*() {
      const { take } = yield* limiterOver(10)
      assert.deepStrictEqual([yield* take("a"), yield* take("a"), yield* take("a")], [true, true, false])
      assert.isTrue(yield* take("b"))
      yield* TestClock.adjust("30 seconds") // one of the two tokens back (a token per 30 s)
      assert.deepStrictEqual([yield* take("a"), yield* take("a")], [true, false])
    }))

  it.effect("the least recently used key is the one forgotten", () =>
    Effect.gen(function*() {
      const capacity = 100
      const { take } = yield* limiterOver(capacity)
      assert.isTrue(yield* take("old", 1))
      assert.isTrue(yield* take("busy", 1))
      for (let i = 0; i < capacity - 2; i++) assert.isTrue(yield* take(`fill-${i}`, 1))
      // full: "old" is the oldest; using "busy" again keeps it, and one more key pushes "old" out
      assert.isFalse(yield* take("busy", 1))
      assert.isTrue(yield* take("one-more", 1))
      assert.isFalse(yield* take("busy", 1), "a recently used key stays limited")
      assert.isTrue(yield* take("old", 1), "the forgotten key starts with a full bucket")
    }))

  it("a capacity that is not a positive integer is refused", async () => {
    for (const capacity of [0, -1, 1.5, Number.NaN]) {
      const exit = await Effect.runPromiseExit(makeBoundedStore(capacity))
      assert.strictEqual(exit._tag, "Failure", String(capacity))
    }
  })
})

describe("DocsAuth over the bounded store", () => {
  it.effect("DOCS_RATE_LIMIT_CLIENTS=2: a limited address is forgotten after two others call", () =>
    Effect.gen(function*() {
      const { handler, dispose } = toWebHandler(
        apiRoutes({ api: DocsApi, handlers: ApiHandlers }).pipe(
          Layer.provide(DocsAuthLive),
          Layer.provide(memoryServices),
          Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({
            DOCS_RATE_LIMIT_ANONYMOUS: "1",
            DOCS_RATE_LIMIT_CLIENTS: "2",
            DOCS_TRUST_PROXY: "true"
          })))
        )
      )
      yield* Effect.addFinalizer(() => Effect.promise(dispose))
      const from = (address: string) =>
        Effect.promise(() =>
          handler(new Request("http://docs.test/api/v2/libs/search?libraryName=widgets", { headers: { "x-forwarded-for": address } }))
            .then((response) => response.status)
        )
      assert.deepStrictEqual([yield* from("198.51.100.1"), yield* from("198.51.100.1")], [200, 429])
      assert.strictEqual(yield* from("198.51.100.2"), 200)
      assert.strictEqual(yield* from("198.51.100.1"), 429, "still remembered: one other address since")
      assert.strictEqual(yield* from("198.51.100.2"), 429)
      assert.strictEqual(yield* from("198.51.100.3"), 200)
      assert.strictEqual(yield* from("198.51.100.4"), 200)
      // two other addresses since its last request: its bucket was let go, and it starts full
      assert.strictEqual(yield* from("198.51.100.1"), 200)
      // an entry longer than any address is counted by its first 100 characters: no bucket holds more
      const long = "x".repeat(100)
      assert.deepStrictEqual([yield* from(`${long}-first`), yield* from(`${long}-second`)], [200, 429])
    }).pipe(Effect.scoped))
})
