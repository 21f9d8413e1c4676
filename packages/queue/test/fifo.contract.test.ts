/** The Queues contract (test/contracts/Queues.ts) against Postgres: a fresh migrated database per test. */
import { queuesContract } from "./contracts/Queues.ts"
import { postgresStores } from "./support.ts"

queuesContract("postgres", postgresStores)
