import { Layer } from "effect"
import { IndexStore } from "../../src/IndexStore.ts"
import { RefreshStore } from "../../src/RefreshStore.ts"
import { refreshStoreContract } from "../contracts/RefreshStore.ts"

refreshStoreContract("memory", Layer.mergeAll(RefreshStore.layerMemory, IndexStore.layerMemory))
