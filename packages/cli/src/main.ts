/**
 * The `svc` command: run the suite's services, migrate the database, operate running services
 * (listings ingest, the queue's dead-letter queue and URL groups), index documentation (svc docs).
 */
import { IngestClient } from "@svc/listings"
import { Database, EmbeddedPostgres, Migrations, ServiceClient, Settings } from "@svc/platform"
import { Config, Console, Deferred, Effect, Layer, Option, Redacted } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { commaList } from "./CommaList.ts"
import { CommandFailed, UsageError } from "./CommandFailed.ts"
import { docs } from "./docs.ts"
import { mcp } from "./mcp.ts"
import { queue } from "./queue.ts"
import { landed, serviceNames } from "./Services.ts"
import * as SuiteStatus from "./SuiteStatus.ts"
import { printLine, printProgress } from "./Terminal.ts"


const migrate = Command.make(
  "migrate",
  {
    schemas: Argument.String("schema").pipe(
      Argument.withDescription("Only these services' schemas (default: every folder under migrations/)"),
      Argument.variadic()
    )
  },
  Effect.fn(function*({ schemas }) {
    const known = Migrations.services()
    // `svc migrate nope` told the migrations folder's path and the system's ENOENT: refused naming the
    // known ones, and before the database is opened (the embedded cluster was started, even created, first)
    const unknown = schemas.find((schema) => !known.includes(schema))
    if (unknown !== undefined) {
      return yield* Effect.fail(
        new UsageError(
          ["svc", "migrate"],
          `No service ${JSON.stringify(unknown.slice(0, 100))} has migrations: ${
            known.length === 0 ? "no service has any yet" : `give one of ${known.join(", ")} (or none, for all)`
          }`
        )
      )
    }
    const only = schemas.length > 0 ? schemas : known
    if (only.length === 0) return yield* Console.log("Nothing to migrate: no service has migrations yet.")
    yield* Effect.forEach(only, (schema) =>
      Migrations.migrate(schema).pipe(
        Effect.flatMap((applied) =>
          Console.log(applied.length === 0 ? `${schema}: up to date` : `${schema}: applied ${applied.join(", ")}`)
        )
      ), { discard: true }).pipe(Effect.provide(Database.layer))
  })
).pipe(
  Command.withDescription("Apply pending database migrations (services also migrate when they start)"),
  Command.withExamples([
    { command: "svc migrate", description: "Migrate every service's schema" },
    { command: "svc migrate listings", description: "Migrate one schema" }
  ])
)

const dbUrl = Command.make(
  "url",
  {},
  Effect.fn(function*() {
    const external = yield* Settings.DatabaseUrl
    if (Option.isSome(external)) return yield* Console.log(Redacted.value(external.value))
    const dataDir = yield* Settings.EmbeddedPostgresDir
    const port = yield* Settings.EmbeddedPostgresPort
    const url = yield* EmbeddedPostgres.storedUrl(dataDir, { port: Option.getOrUndefined(port) })
    yield* Console.log(Redacted.value(url))
  })
).pipe(
  Command.withDescription(
    "Print the database URL (DATABASE_URL, or the embedded Postgres of EMBEDDED_POSTGRES_DIR: its port stays the same across restarts)"
  ),
  Command.withExamples([
    { command: "DATABASE_URL=$(svc db url) svc start queue", description: "A second process on the suite's embedded database" }
  ])
)

const db = Command.make("db").pipe(
  Command.withDescription("The suite's database"),
  Command.withSubcommands([dbUrl])
)

/**
 * Refuses an `EMBEDDED_POSTGRES_PORT` that one of the services to start listens on: the port an
 * embedded cluster starts on is remembered in its data folder, so the clash outlived the variable and
 * every later start failed "address in use" on the service (an outside sweep).
 */
const embeddedPortFree = Effect.fnUntraced(function*(servers: ReadonlyArray<{ readonly port: Config.Config<number>; readonly portVariable: string }>) {
  if (Option.isSome(yield* Settings.DatabaseUrl)) return
  const embedded = yield* Settings.EmbeddedPostgresPort
  if (Option.isNone(embedded)) return
  for (const server of servers) {
    if ((yield* server.port) === embedded.value) {
      return yield* Effect.fail(
        new CommandFailed(`EMBEDDED_POSTGRES_PORT ${embedded.value} is ${server.portVariable}'s port: give the embedded Postgres another one`)
      )
    }
  }
})

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
        new UsageError(["svc", "start"], `The ${service} service is not part of this build yet (landed: ${available}).`)
      )
    }
    const servers = service === "all" ? [...selected, SuiteStatus.Server] : selected
    // every port read before anything listens: QUEUE_PORT=99999 let the other services answer /health
    // for a moment before the start failed on it; two services given one port, the same
    const owners = new Map<number, string>()
    for (const server of servers) {
      const port = yield* server.port
      const other = owners.get(port)
      if (other !== undefined) {
        return yield* Effect.fail(new CommandFailed(`${server.portVariable} and ${other} are both ${port}: give each service its own port`))
      }
      owners.set(port, server.portVariable)
    }
    yield* Effect.logInfo(
      `Starting ${selected.map((candidate) => candidate.name).join(", ") || "the suite (no service has landed yet)"}`
    )
    const standalone = selected.flatMap((candidate) => candidate.database ? [] : [candidate.layer])
    const onDatabase = selected.flatMap((candidate) => candidate.database ? [candidate] : [])
    if (service !== "all" && onDatabase.length === 0) return yield* Layer.launch(Layer.mergeAll(Layer.empty, ...standalone))
    yield* embeddedPortFree(servers)
    // every service's settings before the database: a bad INGEST_INTERVAL was reported only after the
    // embedded cluster had been created and migrated
    yield* Layer.build(Layer.mergeAll(Layer.empty, ...onDatabase.map((candidate) => candidate.settings))).pipe(Effect.scoped)
    const schemas = service === "all" ? Migrations.services() : onDatabase.flatMap((candidate) => candidate.schemas)
    // Migrations first, on the one database every service of the process shares.
    const services = Layer.mergeAll(Layer.empty, ...standalone, ...onDatabase.map((candidate) => candidate.layer)).pipe(
      Layer.provide(Migrations.layer(...schemas)),
      Layer.provide(Database.layer)
    )
    if (service !== "all") return yield* Layer.launch(services)
    // the status server answers 503 until every service is up (SuiteStatus.ts)
    const running = yield* Deferred.make<void>()
    return yield* Layer.launch(Layer.mergeAll(
      SuiteStatus.layer(selected, Deferred.await(running)),
      services.pipe(Layer.tap(() => Deferred.succeed(running, undefined)))
    ))
  })
).pipe(
  Command.withDescription("Run services (migrating their schemas first) until SIGTERM or Ctrl-C"),
  Command.withExamples([
    { command: "svc start", description: "Every landed service in one process, on one database" },
    { command: "svc start listings", description: "Only the listings backend" }
  ])
)

const listingsIngest = Command.make(
  "ingest",
  {
    source: Flag.String("source").pipe(
      Flag.withDescription("Only this source (repeat or comma-separate for several); default: every enabled source"),
      Flag.atLeast(0)
    ),
    wait: Flag.Boolean("wait").pipe(Flag.withDescription("Follow the runs until they finish"), Flag.withDefault(false))
  },
  Effect.fn(function*({ source, wait }) {
    const sources = commaList(source)
    // `--source ""` names no source: running every one instead is not what was asked
    if (source.length > 0 && sources.length === 0) {
      return yield* Effect.fail(
        new UsageError(
          ["svc", "listings", "ingest"],
          "--source names no source: give a source id (svc listings ingest without --source runs every enabled one)"
        )
      )
    }
    const url = yield* ServiceClient.urlSetting("LISTINGS_URL").pipe(Config.withDefault("http://localhost:8787"))
    const token = yield* Config.option(Config.Redacted("ADMIN_TOKEN"))
    if (Option.isNone(token)) {
      return yield* Effect.fail(new CommandFailed("ADMIN_TOKEN is not set: the listings RPC needs it"))
    }
    const problem = ServiceClient.targetProblem({ url, urlVariable: "LISTINGS_URL", token: Redacted.value(token.value), tokenVariable: "ADMIN_TOKEN" })
    if (problem !== undefined) return yield* Effect.fail(new CommandFailed(problem))
    let failed = false
    let events = 0
    yield* IngestClient.trigger({
      url: `${url.replace(/\/+$/, "")}/rpc`,
      token: token.value,
      sources: sources.length > 0 ? sources : undefined,
      wait,
      onEvent: (event) => {
        events++
        if (event._tag === "Finished" && !event.outcome.ok) failed = true
        // progress is a log (stderr); what started and how each run ended are the result (stdout)
        return event._tag === "Progress" ? printProgress(IngestClient.describe(event)) : printLine(IngestClient.describe(event))
      }
    }).pipe(
      Effect.catchTag("UnknownSources", (error) => Effect.fail(new CommandFailed(error.message))),
      Effect.catchTag("RpcClientError", (error) =>
        Effect.fail(
          new CommandFailed(ServiceClient.describeFailure({ service: "listings", url, tokenVariable: "ADMIN_TOKEN" }, error))
        ))
    )
    if (failed) return yield* Effect.fail(new CommandFailed("some ingest runs failed (see the service log)"))
    // nothing started: the command printed nothing and exited 0, as if every source had been ingested
    if (events === 0) {
      return yield* Effect.fail(
        new CommandFailed(`listings at ${url} started no ingest run: it has no enabled source (its SOURCES_FILE, ENABLE_MOCK_SOURCE)`)
      )
    }
  })
).pipe(
  Command.withDescription("Trigger ingestion on a running listings service (LISTINGS_URL, ADMIN_TOKEN) and show progress"),
  Command.withExamples([
    { command: "svc listings ingest --wait", description: "Every enabled source, following progress" },
    { command: "svc listings ingest --source mock", description: "Start one source and return" }
  ])
)

const listings = Command.make("listings").pipe(
  Command.withDescription("Operate the listings service"),
  Command.withSubcommands([listingsIngest])
)

export const svc = Command.make("svc").pipe(
  Command.withDescription(
    "svc: listings backend, documentation lookup, message delivery queue and object storage. " +
      "Configuration comes from the environment (see the README)."
  ),
  Command.withSubcommands([start, migrate, db, listings, queue, docs, mcp])
)
