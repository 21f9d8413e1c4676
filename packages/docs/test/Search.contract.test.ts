import { TestDatabase } from "@svc/platform/testing"
import { Layer } from "effect"
import { IndexStore } from "../src/IndexStore.ts"
import { Search } from "../src/Search.ts"
import { searchContract } from "./contracts/Search.ts"

searchContract("postgres", Layer.mergeAll(Search.layer, IndexStore.layer).pipe(Layer.provide(TestDatabase.layer())))
