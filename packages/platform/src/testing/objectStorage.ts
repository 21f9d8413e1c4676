/**
 * Test helpers for object storage: the run's instance (started once by objectStorageGlobalSetup.ts)
 * as a `LocalObjectStorage` layer, and a fresh, uniquely named bucket per test.
 *
 * ```ts
 * layer(TestObjectStorage)("uploads", (it) => {
 *   it.effect("stores a file", () => Effect.gen(function*() {
 *     const bucket = yield* makeFreshBucket("uploads")
 *     const { client } = yield* LocalObjectStorage
 *     ...
 *   }))
 * })
 * ```
 */
import { Effect, Layer } from "effect"
import { randomBytes } from "node:crypto"
import { inject } from "vitest"
import { LocalObjectStorage } from "../LocalObjectStorage.ts"
import type { ObjectStorageError, ObjectStorageInfo } from "../LocalObjectStorage.ts"

/** The run's instance, as provided by the globalSetup. Call inside a test file (not in the config). */
export const objectStorageInfo = (): ObjectStorageInfo => inject("svcObjectStorage")

/** `LocalObjectStorage` connected to the test run's instance. */
export const TestObjectStorage: Layer.Layer<LocalObjectStorage> = Layer.unwrap(
  Effect.sync(() => LocalObjectStorage.layerExternal(objectStorageInfo()))
)

/**
 * Creates a bucket no other test uses (`<prefix>-<random>`, a valid S3 name) and returns its name.
 * Buckets are not deleted: the whole store goes away with the test run.
 */
export const makeFreshBucket = (prefix = "t"): Effect.Effect<string, ObjectStorageError, LocalObjectStorage> =>
  Effect.gen(function*() {
    const storage = yield* LocalObjectStorage
    const clean = prefix.toLowerCase().replace(/[^a-z0-9-]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 40) || "t"
    const name = `${clean}-${randomBytes(8).toString("hex")}`
    yield* storage.createBucket(name)
    return name
  })

/** A fresh bucket with the default prefix. */
export const freshBucket: Effect.Effect<string, ObjectStorageError, LocalObjectStorage> = makeFreshBucket()
