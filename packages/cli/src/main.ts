/**
 * The `svc` command: run the suite's services, migrate the database.
 */
import { Database, Migrations } from "@svc/platform"
import { Console, Effect, Layer } from "effect"
import { Argument, Command } from "effect/cli"
import { landed, serviceNames } from "./Services.ts"
import * as SuiteStatus from "./SuiteStatus.ts"

export class CommandFailed extends Error {}

const migrate = Command.make(
  "migrate",
  {
    schemas: Argument.String("schema").pipe(
      Argument.withDescription("Only these services' schemas (default: every folder under migrations/)"),
      Argument.variadic()
    )
  },
  Effect.fn(function*({ schemas }) {
    const only = schemas.length > 0 ? schemas : Migrations.services()
    if (only.length === 0) return yield* Console.log("Nothing to migrate: no service has migrations yet.")
    for (const schema of only) {
      const applied = yield* Migrations.migrate(schema)
      yield* Console.log(
        applied.length === 0 ? `${schema}: up to date` : `${schema}: applied ${applied.join(", ")}`
      )
    }
  }, Effect.provide(Database.layer))
).pipe(
  Command.withDescription("Apply pending database migrations (services also migrate when they start)"),
  Command.withExamples([
    { command: "svc migrate", description: "Migrate every service's schema" },
    { command: "svc migrate listings", description: "Migrate one schema" }
  ])
)

const start = Command.make(
  "start",
  {
    service: Argument.Literals("service", ["all", ...serviceNames]).pipe(
      Argument.withDescription("Which service to run; `all` runs every landed service in one process"),
      Argument.withDefault("all")
    )
  },
  Effect.fn(function*({ service }) {
    const selected = service === "all" ? landed : landed.filter((candidate) => candidate.name === service)
    if (service !== "all" && selected.length === 0) {
      const available = landed.map((candidate) => candidate.name).join(", ") || "none yet"
      return yield* Effect.fail(
        new CommandFailed(`The ${service} service is not part of this build yet (landed: ${available}).`)
      )
    }
    const schemas = service === "all" ? Migrations.services() : selected.flatMap((candidate) => candidate.schemas)
    yield* Effect.logInfo(
      `Starting ${selected.map((candidate) => candidate.name).join(", ") || "the suite (no service has landed yet)"}`
    )
    const running = Layer.mergeAll(
      service === "all" ? SuiteStatus.layer(selected) : Layer.empty,
      ...selected.map((candidate) => candidate.layer)
    )
    // Migrations first, on the one database every service of the process shares.
    return yield* Layer.launch(
      running.pipe(Layer.provide(Migrations.layer(...schemas)), Layer.provide(Database.layer))
    )
  })
).pipe(
  Command.withDescription("Run services (migrating their schemas first) until SIGTERM or Ctrl-C"),
  Command.withExamples([
    { command: "svc start", description: "Every landed service in one process, on one database" },
    { command: "svc start listings", description: "Only the listings backend" }
  ])
)

export const svc = Command.make("svc").pipe(
  Command.withDescription(
    "svc: listings backend, documentation lookup, message delivery queue and object storage. " +
      "Configuration comes from the environment (see the README)."
  ),
  Command.withSubcommands([start, migrate])
)
