import { defineConfig } from "vitest/config"

/**
 * The fast tier (`npm run test:unit`): handlers and services over their `layerMemory` layers, and
 * the contract suites run against those layers. No global setup: no Postgres, no object storage,
 * no sockets to start. `npm test` runs these files too, with everything else.
 */
export default defineConfig({
  test: {
    include: ["packages/*/test/unit/**/*.test.ts"],
    // A unit test that reaches for a database fails at once instead of waiting on a connection.
    env: { DATABASE_URL: "postgres://unit-tier.invalid:1/none" },
    testTimeout: 10_000,
    // The files share their workers' module graph: importing effect and the services once per worker,
    // not once per file, is most of what keeps this tier fast. Safe here: every test builds its own layers.
    isolate: false
  }
})
