/** The events log's contract (test/contracts/Events.ts) against Postgres (the triggers record): a fresh migrated database per test. */
import { eventsContract } from "./contracts/Events.ts"
import { postgresStores, postgresStoresWith } from "./support.ts"

eventsContract("postgres", postgresStores, postgresStoresWith({ events: false }))
