/**
 * The four store contracts (test/contracts/) against the memory stores (`Stores.layerMemory`, a
 * TestClock): no database. One file rather than one per store: each file of the fast tier pays for
 * importing the stack in its own worker (measured under load: five files 11-14 s, two files 5 s).
 */
import { dlqContract } from "../contracts/Dlq.ts"
import { groupsContract } from "../contracts/Groups.ts"
import { messagesContract } from "../contracts/Messages.ts"
import { publishBatchContract } from "../contracts/PublishBatch.ts"
import { signingKeysContract } from "../contracts/SigningKeys.ts"
import { memoryStores } from "../contracts/StoreTime.ts"

messagesContract("memory", memoryStores)
publishBatchContract("memory", memoryStores)
dlqContract("memory", memoryStores)
groupsContract("memory", memoryStores)
signingKeysContract("memory", memoryStores)
