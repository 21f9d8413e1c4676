/** The FlowControl and Queues contracts (test/contracts/) against the memory stores, with a TestClock. */
import { flowControlContract } from "../contracts/FlowControl.ts"
import { queuesContract } from "../contracts/Queues.ts"
import { memoryStores } from "../contracts/StoreTime.ts"

flowControlContract("memory", memoryStores)
queuesContract("memory", memoryStores)
