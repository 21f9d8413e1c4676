/** The Messages contract (test/contracts/Messages.ts) against Postgres: a fresh migrated database per test. */
import { messagesContract } from "./contracts/Messages.ts"
import { postgresStores } from "./support.ts"

messagesContract("postgres", postgresStores)
