/**
 * The docs REST API as its own process: `node packages/docs/src/main.ts` (migrates the `docs` schema
 * first). `svc start docs-api` does the same inside the `svc` command.
 */
import { Database, Logging, Migrations, runServer } from "@svc/platform"
import { Layer } from "effect"
import * as Service from "./Service.ts"

runServer(
  Service.layer.pipe(
    Layer.provide(Migrations.layer("docs")),
    Layer.provide(Database.layer),
    Layer.provide(Logging.layer)
  )
)
