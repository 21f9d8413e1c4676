/**
 * Test support: bucket tokens and Bucket clients on the test run's radosgw.
 */
import { Effect, Redacted } from "effect"
import type { Scope } from "effect"
import { LocalObjectStorage } from "../../../platform/src/LocalObjectStorage.ts"
import type { ObjectStorageError } from "../../../platform/src/LocalObjectStorage.ts"
import { makeFreshBucket } from "../../../platform/src/testing/objectStorage.ts"
import { Bucket, type BucketApi, type BucketOptions } from "../../src/server/Bucket.ts"
import { formatBlobToken } from "../../src/server/token.ts"

/** A token for `bucket` on the run's store, signed with the store's own user. */
export const tokenFor = (
  bucket: string,
  extra: { readonly role?: string; readonly access?: "readwrite" | "readonly"; readonly duration?: number } = {}
): Effect.Effect<string, never, LocalObjectStorage> =>
  Effect.gen(function*() {
    const storage = yield* LocalObjectStorage
    return formatBlobToken({
      endpoint: storage.endpoint,
      bucket,
      accessKeyId: storage.accessKeyId,
      secretAccessKey: Redacted.value(storage.secretAccessKey),
      region: storage.region,
      ...extra
    })
  })

/** A fresh bucket and a Bucket client on it (released with the scope). */
export const freshBucket = (
  prefix: string,
  options: Omit<BucketOptions, "token"> = {}
): Effect.Effect<BucketApi, ObjectStorageError, LocalObjectStorage | Scope.Scope> =>
  Effect.gen(function*() {
    const name = yield* makeFreshBucket(prefix)
    const token = yield* tokenFor(name)
    return yield* Bucket.make({ ...options, token })
  })
