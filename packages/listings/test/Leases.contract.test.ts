import { TestDatabase } from "@svc/platform/testing"
import { Layer } from "effect"
import { IngestRuns } from "../src/IngestRuns.ts"
import { Leases } from "../src/Leases.ts"
import { SourceHealthLookup } from "../src/SourceHealth.ts"
import { contractSources } from "./contracts/fixtures.ts"
import { leasesContract, twoHolders } from "./contracts/Leases.ts"

leasesContract(
  "postgres",
  Layer.mergeAll(twoHolders(Leases.layer), IngestRuns.layer, SourceHealthLookup.layer).pipe(
    Layer.provide(TestDatabase.layer()),
    Layer.provide(contractSources)
  )
)
