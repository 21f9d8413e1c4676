import { IndexStore } from "../../src/IndexStore.ts"
import { indexStoreContract } from "../contracts/IndexStore.ts"

indexStoreContract("memory", IndexStore.layerMemory)
