/** The Schedules contract (test/contracts/Schedules.ts) against Postgres: a fresh migrated database per test. */
import { schedulesContract } from "./contracts/Schedules.ts"
import { postgresStores } from "./support.ts"

schedulesContract("postgres", postgresStores)
