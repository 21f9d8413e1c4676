/**
 * `svc docs add|list|refresh|remove`: index documentation into the docs service's tables. The commands
 * run the indexer in this process against the database (like `svc migrate`), so no docs-api needs to
 * be running; a running one serves the new snippets as soon as a run completes.
 */
import { type IndexOutcome, type IndexProgress, Indexer, type LibraryListing } from "@svc/docs"
import { Database, Migrations } from "@svc/platform"
import { Config, Console, Effect, Layer, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"

/** The indexer on the suite's database, the `docs` schema migrated first. */
const IndexerLive = Indexer.layer.pipe(
  Layer.provideMerge(Layer.effectDiscard(Migrations.migrate("docs"))),
  Layer.provideMerge(Database.layer)
)

/**
 * Runs a command with the indexer. Failures keep only their message, which is all `svc` prints of
 * them (configuration errors keep their type: `svc` words them itself).
 */
const withIndexer = <A, E extends { readonly message: string }>(effect: Effect.Effect<A, E, Indexer>) =>
  effect.pipe(
    Effect.provide(IndexerLive),
    Effect.mapError((error) => error instanceof Config.ConfigError ? error : new Error(error.message))
  )

const describeProgress = (progress: IndexProgress): string => {
  switch (progress._tag) {
    case "Started":
      return `Indexing ${progress.libraryId} ${progress.version} from ${progress.root}`
    case "FileRead":
      return `  [${progress.filesRead}/${progress.totalFiles}] ${progress.path}: ${plural(progress.snippets, "snippet")}`
    case "Stored":
      return `Stored ${plural(progress.snippets, "snippet")} (${progress.tokens} tokens)`
  }
}

const onProgress = (progress: IndexProgress) => Console.log(describeProgress(progress))

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : "s"}`

const describeOutcome = (outcome: IndexOutcome) =>
  `${outcome.libraryId}/${outcome.version} is ready: ${plural(outcome.files, "file")}, ${plural(outcome.snippets, "snippet")}`

const optional = <A>(option: Option.Option<A>) => Option.getOrUndefined(option)

const add = Command.make(
  "add",
  {
    source: Argument.String("source").pipe(
      Argument.withDescription("A folder (a git working tree is a folder), or npm:<package> installed in node_modules")
    ),
    id: Flag.String("id").pipe(Flag.withDescription("Library id /owner/repo (default: from package.json repository)"), Flag.optional),
    version: Flag.String("version").pipe(Flag.withDescription("Version (default: package.json version, else latest)"), Flag.optional)
  },
  Effect.fn(function*({ id, source, version }) {
    const indexer = yield* Indexer
    const outcome = yield* indexer.add(source, { id: optional(id), version: optional(version), onProgress })
    yield* Console.log(describeOutcome(outcome))
  }, withIndexer)
).pipe(
  Command.withDescription("Index a library's documentation (.md, .mdx, .rst, .txt) and make it the default version"),
  Command.withExamples([
    { command: "svc docs add ./docs --id /acme/widgets --version 2.1.0", description: "A local folder" },
    { command: "svc docs add npm:effect", description: "An installed npm package (id from its repository field)" }
  ])
)

const describeLibrary = (library: LibraryListing): ReadonlyArray<string> => [
  `${library.id}  ${library.title}  (${library.source})`,
  ...library.versions.map((version) =>
    [
      `  ${version.version}${version.version === library.defaultVersion ? " (default)" : ""}`,
      version.state + (version.errorCategory === null ? "" : ` (${version.errorCategory})`),
      `${version.snippets} snippets`,
      `${version.tokens} tokens`,
      version.lastUpdate === null ? "never indexed" : `updated ${version.lastUpdate.toISOString()}`
    ].join("  ")
  )
]

const list = Command.make(
  "list",
  { json: Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of lines"), Flag.withDefault(false)) },
  Effect.fn(function*({ json }) {
    const libraries = yield* (yield* Indexer).list
    if (json) return yield* Console.log(JSON.stringify(libraries, null, 2))
    if (libraries.length === 0) return yield* Console.log("No libraries yet: add one with svc docs add <folder|npm:package>")
    yield* Effect.forEach(libraries.flatMap(describeLibrary), (line) => Console.log(line), { discard: true })
  }, withIndexer)
).pipe(Command.withDescription("List indexed libraries with their versions, states and sizes"))

const libraryId = Argument.String("id").pipe(Argument.withDescription("/owner/repo, or /owner/repo/version for one version"))

const refresh = Command.make(
  "refresh",
  { id: libraryId },
  Effect.fn(function*({ id }) {
    const outcome = yield* (yield* Indexer).refresh(id, { onProgress })
    yield* Console.log(describeOutcome(outcome))
  }, withIndexer)
).pipe(Command.withDescription("Read a library's source again (readers switch to the new snippets at once, atomically)"))

const remove = Command.make(
  "remove",
  { id: libraryId },
  Effect.fn(function*({ id }) {
    const removed = yield* (yield* Indexer).remove(id)
    if (!removed) return yield* Effect.fail(new Error(`No library ${id} (svc docs list shows them)`))
    yield* Console.log(`${id}: removed`)
  }, withIndexer)
).pipe(Command.withDescription("Remove a library, or one version of it, and its snippets"))

export const docs = Command.make("docs").pipe(
  Command.withDescription("Index documentation for the docs service (runs against the database directly)"),
  Command.withSubcommands([add, list, refresh, remove])
)
