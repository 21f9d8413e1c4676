/** The Messages contract (test/contracts/Messages.ts) against the memory stores: no database, a TestClock. */
import { messagesContract } from "../contracts/Messages.ts"
import { memoryStores } from "../contracts/StoreTime.ts"

messagesContract("memory", memoryStores)
