/** The SigningKeys contract (test/contracts/SigningKeys.ts) against the memory stores: no database, a TestClock. */
import { signingKeysContract } from "../contracts/SigningKeys.ts"
import { memoryStores } from "../contracts/StoreTime.ts"

signingKeysContract("memory", memoryStores)
