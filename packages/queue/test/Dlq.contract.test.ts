/** The Dlq contract (test/contracts/Dlq.ts) against Postgres: a fresh migrated database per test. */
import { dlqContract } from "./contracts/Dlq.ts"
import { postgresStores } from "./support.ts"

dlqContract("postgres", postgresStores)
