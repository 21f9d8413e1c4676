/** The Groups contract (test/contracts/Groups.ts) against the memory stores: no database, a TestClock. */
import { groupsContract } from "../contracts/Groups.ts"
import { memoryStores } from "../contracts/StoreTime.ts"

groupsContract("memory", memoryStores)
