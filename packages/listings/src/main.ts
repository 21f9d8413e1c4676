/**
 * The listings service as its own process: `node packages/listings/src/main.ts` (migrates the
 * `listings` schema first). `svc start listings` does the same inside the `svc` command.
 */
import { Database, Logging, Migrations, runServer } from "@svc/platform"
import { Layer } from "effect"
import * as Service from "./Service.ts"

runServer(
  Service.layer.pipe(
    Layer.provide(Migrations.layer("listings")),
    Layer.provide(Database.layer),
    Layer.provide(Logging.layer)
  )
)
