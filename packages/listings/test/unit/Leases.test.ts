import { Layer } from "effect"
import { IngestRuns } from "../../src/IngestRuns.ts"
import { Leases } from "../../src/Leases.ts"
import { ListingsMemory } from "../../src/memory/ListingsMemory.ts"
import { SourceHealthLookup } from "../../src/SourceHealth.ts"
import { contractSources } from "../contracts/fixtures.ts"
import { leasesContract, twoHolders } from "../contracts/Leases.ts"

leasesContract(
  "memory",
  Layer.mergeAll(twoHolders(Leases.layerMemory), IngestRuns.layerMemory, SourceHealthLookup.layerMemory).pipe(
    Layer.provide(ListingsMemory.layer),
    Layer.provide(contractSources)
  )
)
