import { ApiKeys } from "../../src/ApiKeys.ts"
import { apiKeysContract } from "../contracts/ApiKeys.ts"

apiKeysContract("memory", ApiKeys.layerMemory)
