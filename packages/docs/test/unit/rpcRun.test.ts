/** The docs RPC's indexing stream (src/rpc.ts `indexingRun`): progress, the outcome, a failure, and a defect that ends it. */
import { assert, describe, it } from "@effect/vitest"
import { databaseDown } from "@svc/platform/testing"
import { RPC_DEFECT_MESSAGE } from "@svc/schema"
import { Effect, Stream } from "effect"
import { IndexFailed } from "../../src/sources/Source.ts"
import { DATABASE_LOST_MESSAGE, indexingRun } from "../../src/rpc.ts"

const outcome = { libraryId: "/acme/widgets", version: "1.0", files: 1, snippets: 2, tokens: 30 }

describe("indexingRun", () => {
  it.effect("streams the run's progress, then Done", () =>
    Effect.gen(function*() {
      const events = yield* Stream.runCollect(indexingRun((options) =>
        Effect.as(options.onProgress!({ _tag: "Stored", snippets: 2, tokens: 30 }), outcome)
      ))
      assert.deepStrictEqual(events.map((event) => event._tag), ["Stored", "Done"])
    }))

  it.effect("a failed run ends the stream with its category and message", () =>
    Effect.gen(function*() {
      const failure = yield* Effect.flip(Stream.runCollect(indexingRun(() =>
        Effect.fail(new IndexFailed({ category: "no_documents", message: "nothing to read" }))
      )))
      assert.deepStrictEqual([failure.category, failure.message], ["no_documents", "nothing to read"])
    }))

  it.effect("a defect ends the stream too, with a failure that says so and no detail (it used to hang)", () =>
    Effect.gen(function*() {
      const failure = yield* Effect.flip(Stream.runCollect(indexingRun(() => Effect.die(new Error("invalid byte sequence for encoding \"UTF8\": 0x00")))))
      assert.deepStrictEqual([failure._tag, failure.category, failure.message], ["IndexingFailed", "internal_error", RPC_DEFECT_MESSAGE])
    }).pipe(Effect.timeout("5 seconds")))

  it.effect("the database going away during the run is said so (service_unavailable, it resumes), not an internal error", () =>
    Effect.gen(function*() {
      const failure = yield* Effect.flip(Stream.runCollect(indexingRun(() => Effect.die(databaseDown()))))
      assert.deepStrictEqual([failure._tag, failure.category, failure.message], ["IndexingFailed", "service_unavailable", DATABASE_LOST_MESSAGE])
      assert.include(failure.message, "resumes the version")
    }).pipe(Effect.timeout("5 seconds")))
})
