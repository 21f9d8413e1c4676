import { TestDatabase } from "@svc/platform/testing"
import { Layer } from "effect"
import { ApiKeys } from "../src/ApiKeys.ts"
import { apiKeysContract } from "./contracts/ApiKeys.ts"

apiKeysContract("postgres", ApiKeys.layer.pipe(Layer.provide(TestDatabase.layer())))
