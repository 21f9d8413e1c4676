import { TestDatabase } from "@svc/platform/testing"
import { Layer } from "effect"
import { IndexStore } from "../src/IndexStore.ts"
import { indexStoreContract } from "./contracts/IndexStore.ts"

indexStoreContract("postgres", IndexStore.layer.pipe(Layer.provide(TestDatabase.layer())))
