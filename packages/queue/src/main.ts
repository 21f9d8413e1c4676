/**
 * Process entry: `node packages/queue/src/main.ts` runs the queue (migrating its schema first) on
 * `DATABASE_URL` or the embedded Postgres. `svc start queue` does the same through the suite command.
 */
import { Database, Logging, Migrations, runServer } from "@svc/platform"
import { Layer } from "effect"
import * as Service from "./Service.ts"

runServer(
  Service.layer.pipe(
    Layer.provide(Migrations.layer("queue")),
    Layer.provide(Database.layer),
    Layer.provide(Logging.layer)
  )
)
