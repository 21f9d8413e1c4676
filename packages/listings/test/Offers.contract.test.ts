import { TestDatabase } from "@svc/platform/testing"
import { Layer } from "effect"
import { Offers } from "../src/Offers.ts"
import { OfferStore } from "../src/OfferStore.ts"
import { contractConfig } from "./contracts/fixtures.ts"
import { offersContract } from "./contracts/Offers.ts"

offersContract(
  "postgres",
  Layer.mergeAll(OfferStore.layer, Offers.layer).pipe(Layer.provide(TestDatabase.layer()), Layer.provide(contractConfig))
)
