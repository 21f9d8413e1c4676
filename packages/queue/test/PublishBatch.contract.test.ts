/** The Messages.publishBatch contract (test/contracts/PublishBatch.ts) against Postgres: a fresh migrated database per test. */
import { publishBatchContract } from "./contracts/PublishBatch.ts"
import { postgresStores } from "./support.ts"

publishBatchContract("postgres", postgresStores)
