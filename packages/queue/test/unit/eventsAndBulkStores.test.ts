/** The Events and Bulk contracts (test/contracts/) against the memory stores, with a TestClock. */
import { bulkContract } from "../contracts/Bulk.ts"
import { eventsContract } from "../contracts/Events.ts"
import { memoryStores, memoryStoresWith } from "../contracts/StoreTime.ts"

eventsContract("memory", memoryStores, memoryStoresWith({ events: false }))
bulkContract("memory", memoryStores)
