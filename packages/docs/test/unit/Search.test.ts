import { Layer } from "effect"
import { IndexStore } from "../../src/IndexStore.ts"
import { Search } from "../../src/Search.ts"
import { searchContract } from "../contracts/Search.ts"

// one build: both memory layers share one in-memory index
searchContract("memory", Layer.mergeAll(Search.layerMemory, IndexStore.layerMemory))
