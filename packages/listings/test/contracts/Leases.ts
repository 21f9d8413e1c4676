/**
 * The contract of `Leases` (with `IngestRuns` and `SourceHealthLookup`, which share its tables), run
 * against `layerMemory` (test/unit/Leases.test.ts) and Postgres (test/Leases.contract.test.ts), with
 * two holders as two processes would be: one holder per source, renew and release only by the
 * holder, an expired lease taken over by the other (the old holder's renew then fails) and the runs
 * the old holder left unfinished closed as abandoned, with the counts they recorded. Real time (the
 * database's clock): a TTL of 2 s, so that the round trips a test makes while a lease must still
 * stand fit in it on a busy machine. Each test builds a fresh layer.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Duration, Effect, Layer } from "effect"
import { IngestRuns } from "../../src/IngestRuns.ts"
import { Leases } from "../../src/Leases.ts"
import { SourceHealthLookup } from "../../src/SourceHealth.ts"

/** A second holder of the same leases (another process). */
export class OtherHolder extends Context.Service<OtherHolder, Leases["Service"]>()("test/listings/OtherHolder") {}

/** `leases` as this process and, built once more, as the other holder; both over the same tables. */
export const twoHolders = <E, R>(leases: Layer.Layer<Leases, E, R>): Layer.Layer<Leases | OtherHolder, E, R> =>
  Layer.merge(leases, Layer.effect(OtherHolder, Effect.map(Leases, (other) => other)).pipe(Layer.provide(Layer.fresh(leases))))

const TTL = Duration.seconds(2)
const LONG = Duration.seconds(30)

export const leasesContract = (
  name: string,
  layer: Layer.Layer<Leases | OtherHolder | IngestRuns | SourceHealthLookup, unknown>
) =>
  describe(`Leases contract (${name})`, () => {
    const test = (title: string, body: () => Effect.Effect<void, unknown, Leases | OtherHolder | IngestRuns | SourceHealthLookup>) =>
      it.live(title, () => Effect.provide(body(), layer))

    test("one holder per source; the other is refused until it is released", () =>
      Effect.gen(function*() {
        const mine = yield* Leases
        const other = yield* OtherHolder
        assert.notStrictEqual(mine.holder, other.holder)
        assert.isTrue(yield* mine.acquire("alpha", LONG))
        assert.isFalse(yield* other.acquire("alpha", LONG))
        assert.isFalse(yield* mine.acquire("alpha", LONG), "not twice, even by the holder")
        assert.isTrue(yield* other.acquire("beta", LONG), "another source is free")
        yield* other.release("alpha")
        assert.isFalse(yield* other.acquire("alpha", LONG), "release by another holder does nothing")
        yield* mine.release("alpha")
        assert.isTrue(yield* other.acquire("alpha", LONG))
      }))

    test("renew extends only the holder's lease", () =>
      Effect.gen(function*() {
        const mine = yield* Leases
        const other = yield* OtherHolder
        assert.isTrue(yield* mine.acquire("alpha", TTL))
        assert.isFalse(yield* other.renew("alpha", LONG))
        assert.isFalse(yield* mine.renew("beta", LONG), "no lease to renew")
        yield* Effect.sleep(Duration.millis(200))
        assert.isTrue(yield* mine.renew("alpha", LONG))
        yield* Effect.sleep(TTL)
        assert.isFalse(yield* other.acquire("alpha", LONG), "renewed: not expired after the first TTL")
      }))

    test("an expired lease is taken over; the old holder's renew fails; its unfinished runs are abandoned", () =>
      Effect.gen(function*() {
        const mine = yield* Leases
        const other = yield* OtherHolder
        const runs = yield* IngestRuns
        const health = yield* SourceHealthLookup
        assert.isTrue(yield* mine.acquire("alpha", TTL))
        const run = yield* runs.start("alpha", "manual", mine.holder)
        // two batches written side by side: the later record carries the smaller counts
        yield* runs.recordProgress(run, { offersFetched: 40, offersUpserted: 30, recordsRejected: 2 })
        yield* runs.recordProgress(run, { offersFetched: 20, offersUpserted: 15, recordsRejected: 1 })
        assert.isFalse(yield* other.acquire("alpha", LONG))
        yield* Effect.sleep(Duration.sum(TTL, Duration.millis(200)))
        assert.isTrue(yield* other.acquire("alpha", LONG), "expired: taken over")
        assert.isFalse(yield* mine.renew("alpha", LONG), "the old holder lost it")
        yield* mine.release("alpha")
        assert.isFalse(yield* mine.acquire("alpha", LONG), "the old holder's release did not free it")
        const alpha = (yield* health.list).sources.find((source) => source.id === "alpha")
        assert.strictEqual(alpha?.lastCompletedOk, false, "the dead holder's run is closed as failed (abandoned)")
        assert.strictEqual(alpha?.lastOffersUpserted, 30, "with the largest counts it recorded")
        yield* runs.recordProgress(run, { offersFetched: 60, offersUpserted: 50, recordsRejected: 2 })
        const closed = (yield* health.list).sources.find((source) => source.id === "alpha")
        assert.strictEqual(closed?.lastOffersUpserted, 30, "a closed run's counts no longer change")
      }))

    test("a finished run is the source's health; the next finished one replaces it", () =>
      Effect.gen(function*() {
        const runs = yield* IngestRuns
        const health = yield* SourceHealthLookup
        const before = (yield* health.list).sources.find((source) => source.id === "alpha")
        assert.deepStrictEqual([before?.lastCompletedOk, before?.lastOffersUpserted, before?.offerCount], [null, null, 0])
        const outcome = { offersFetched: 5, offersUpserted: 4, recordsRejected: 1, offersExpired: 0 }
        const first = yield* runs.start("alpha", "scheduled", "h")
        yield* runs.finish(first, { ok: true, ...outcome, failure: null })
        yield* Effect.sleep(Duration.millis(20))
        const second = yield* runs.start("alpha", "manual", "h")
        const unfinished = (yield* health.list).sources.find((source) => source.id === "alpha")
        assert.deepStrictEqual([unfinished?.lastCompletedOk, unfinished?.lastOffersUpserted], [true, 4], "an unfinished run is not health")
        yield* runs.finish(second, { ok: false, ...outcome, offersUpserted: 2, failure: "unreachable" })
        const after = (yield* health.list).sources
        const alpha = after.find((source) => source.id === "alpha")
        assert.deepStrictEqual([alpha?.lastCompletedOk, alpha?.lastOffersUpserted], [false, 2])
        assert.isAbove(alpha?.lastCompletedAtEpochMs ?? 0, Date.now() - 60_000)
        assert.deepStrictEqual(after.map((source) => [source.id, source.enabled]), [["alpha", true], ["beta", true], ["off", false]])
      }))
  })
