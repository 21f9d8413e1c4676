import { TestDatabase } from "@svc/platform/testing"
import { Layer } from "effect"
import { Offers } from "../src/Offers.ts"
import { OfferStore } from "../src/OfferStore.ts"
import { contractConfig } from "./contracts/fixtures.ts"
import { offerStoreContract } from "./contracts/OfferStore.ts"

offerStoreContract(
  "postgres",
  Layer.mergeAll(OfferStore.layer, Offers.layer).pipe(Layer.provide(TestDatabase.layer()), Layer.provide(contractConfig))
)
