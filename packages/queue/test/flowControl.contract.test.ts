/** The FlowControl contract (test/contracts/FlowControl.ts) against Postgres: a fresh migrated database per test. */
import { flowControlContract } from "./contracts/FlowControl.ts"
import { postgresStores } from "./support.ts"

flowControlContract("postgres", postgresStores)
