/**
 * One batch through `write_offer_batch`: which offers it writes, what it leaves alone, the image rows
 * it registers and the version readers' remembered answers depend on.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Result } from "effect"
import { SqlClient } from "effect/sql"
import { type FeedRecord, normalize } from "../src/Normalize.ts"
import { OfferStore } from "../src/OfferStore.ts"
import { record, services, TestDatabase } from "./support.ts"

const stack = services().pipe(Layer.provideMerge(TestDatabase.layer())) as Layer.Layer<OfferStore | SqlClient.SqlClient, unknown>

/** Sends the records as one batch of source `gamma`, images included, without filtering anything. */
const write = (records: ReadonlyArray<FeedRecord>) =>
  Effect.gen(function*() {
    const normalized = records.map((r) => Result.getOrThrow(normalize("gamma", r)))
    return yield* (yield* OfferStore).upsertBatch(
      "gamma",
      normalized.map((n) => n.row),
      normalized.flatMap((n) => n.images)
    )
  })

layer(stack, { excludeTestServices: true, timeout: 60_000 })("OfferStore", (it) => {
  it.effect("a batch writes new, changed and revived offers, leaves unchanged ones alone, and registers images", () =>
    Effect.gen(function*() {
      const store = yield* OfferStore
      const sql = yield* SqlClient.SqlClient
      const stored = (id: string) =>
        sql<{ readonly row_version: string; readonly title: string; readonly removed: boolean }>`
          SELECT xmin::text AS row_version, title, removed_at IS NOT NULL AS removed FROM listings.offers WHERE id = ${id}`
          .pipe(Effect.map((rows) => rows[0]))
      const version = sql<{ readonly version: string }>`SELECT version::text FROM listings.offers_version`
        .pipe(Effect.map((rows) => BigInt(rows[0]!.version)))

      const same = record({ nativeId: "same" })
      const edited = record({ nativeId: "edited" })
      const revived = record({ nativeId: "revived" })
      assert.strictEqual(yield* write([same, edited, revived]), 3)
      assert.strictEqual(yield* store.expireVanished("gamma", ["gamma:same", "gamma:edited"]), 1)
      const sameBefore = yield* stored("gamma:same")
      const versionBefore = yield* version

      const added = record({ nativeId: "added", images: ["https://img.example/added/1.jpg", "https://img.example/added/2.jpg"] })
      const written = yield* write([same, { ...edited, title: "Edited title" }, revived, added])

      assert.strictEqual(written, 3, "edited, revived and added; the unchanged offer is not counted")
      assert.deepStrictEqual(yield* stored("gamma:same"), sameBefore, "the unchanged offer is not rewritten")
      assert.strictEqual((yield* stored("gamma:edited"))?.title, "Edited title")
      assert.isFalse((yield* stored("gamma:revived"))?.removed)
      assert.isDefined(yield* stored("gamma:added"))
      assert.strictEqual(yield* version, versionBefore + 1n, "one version bump for the batch")
      const images = yield* sql<{ readonly original_url: string; readonly status: string }>`
        SELECT original_url, status FROM listings.images WHERE original_url LIKE 'https://img.example/added/%'
        ORDER BY original_url`
      assert.deepStrictEqual(images, [
        { original_url: "https://img.example/added/1.jpg", status: "pending" },
        { original_url: "https://img.example/added/2.jpg", status: "pending" }
      ])

      // a batch with nothing new changes nothing, not even the version
      assert.strictEqual(yield* write([same]), 0)
      assert.strictEqual(yield* version, versionBefore + 1n)
    }))

  it.effect("the cleanup after a large feed is one pass: 150,000 offers, 450,000 ids seen, the two offers not among them expire", () =>
    Effect.gen(function*() {
      const store = yield* OfferStore
      const sql = yield* SqlClient.SqlClient
      yield* write([record({ nativeId: "kept" }), record({ nativeId: "gone" }), record({ nativeId: "also-gone" })])
      // 150,000 more live offers of the source, copies of one with other ids, all listed by the feed
      yield* sql`
        INSERT INTO listings.offers
        SELECT (jsonb_populate_record(o, jsonb_build_object('id', 'gamma:bulk-' || g))).*
        FROM listings.offers o, generate_series(1, 150000) g WHERE o.id = 'gamma:kept'`
      const live = yield* sql<{ readonly id: string }>`
        SELECT id FROM listings.offers WHERE source_id = 'gamma' AND removed_at IS NULL AND id NOT IN ('gamma:gone', 'gamma:also-gone')`
      const seen = [...live.map((row) => row.id), ...Array.from({ length: 300_000 }, (_, i) => `gamma:listed-elsewhere-${i}`)]
      // the former NOT IN scanned the ids once per offer past ~140,000 of them (minutes here); the anti-join takes ~1 s
      const expired = yield* store.expireVanished("gamma", seen).pipe(Effect.timeout("45 seconds"))
      assert.strictEqual(expired, 2)
    }), { timeout: 90_000 })
})
