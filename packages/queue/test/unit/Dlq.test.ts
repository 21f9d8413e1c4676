/** The Dlq contract (test/contracts/Dlq.ts) against the memory stores: no database, a TestClock. */
import { dlqContract } from "../contracts/Dlq.ts"
import { memoryStores } from "../contracts/StoreTime.ts"

dlqContract("memory", memoryStores)
