import { TestDatabase } from "@svc/platform/testing"
import { Layer } from "effect"
import { IndexStore } from "../src/IndexStore.ts"
import { RefreshStore } from "../src/RefreshStore.ts"
import { refreshStoreContract } from "./contracts/RefreshStore.ts"

refreshStoreContract("postgres", Layer.mergeAll(RefreshStore.layer, IndexStore.layer).pipe(Layer.provide(TestDatabase.layer())))
