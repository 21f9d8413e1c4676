/** The Groups contract (test/contracts/Groups.ts) against Postgres: a fresh migrated database per test. */
import { groupsContract } from "./contracts/Groups.ts"
import { postgresStores } from "./support.ts"

groupsContract("postgres", postgresStores)
