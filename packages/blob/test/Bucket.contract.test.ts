/**
 * The Bucket contract (test/contracts/Bucket.ts) against the real layer on the test run's radosgw: a
 * fresh bucket per test. The same suite runs against `Bucket.layerMemory` in test/unit/Bucket.test.ts.
 */
import { Layer } from "effect"
import { TestObjectStorage } from "../../platform/src/testing/objectStorage.ts"
import { Bucket } from "../src/server/Bucket.ts"
import { bucketContract, contractOptions } from "./contracts/Bucket.ts"
import { freshBucket } from "./support/storage.ts"

bucketContract("radosgw", Layer.effect(Bucket, freshBucket("contract", contractOptions)).pipe(Layer.provide(TestObjectStorage)))
