import { Layer } from "effect"
import { ListingsMemory } from "../../src/memory/ListingsMemory.ts"
import { Offers } from "../../src/Offers.ts"
import { OfferStore } from "../../src/OfferStore.ts"
import { contractConfig } from "../contracts/fixtures.ts"
import { offersContract } from "../contracts/Offers.ts"

offersContract(
  "memory",
  Layer.mergeAll(OfferStore.layerMemory, Offers.layerMemory).pipe(
    Layer.provide(ListingsMemory.layer),
    Layer.provide(contractConfig)
  )
)
