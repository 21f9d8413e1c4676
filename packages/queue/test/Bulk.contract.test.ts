/** The bulk operations' contract (test/contracts/Bulk.ts) against Postgres: a fresh migrated database per test. */
import { bulkContract } from "./contracts/Bulk.ts"
import { postgresStores } from "./support.ts"

bulkContract("postgres", postgresStores)
