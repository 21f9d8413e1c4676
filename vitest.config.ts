import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    // One embedded Postgres cluster and one local object store for the whole run; each test file
    // gets its own database (cloned from a migrated template) and its own buckets.
    globalSetup: [
      "packages/platform/src/testing/postgresGlobalSetup.ts",
      "packages/platform/src/testing/objectStorageGlobalSetup.ts"
    ],
    include: ["packages/*/test/**/*.test.ts", "scripts/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 180_000
  }
})
