/**
 * `svc docs add|list|refresh|remove`: index documentation into the docs service's tables. The commands
 * run the indexer in this process against the database (like `svc migrate`), so no docs-api needs to
 * be running; a running one serves the new snippets as soon as a run completes. With `DOCS_URL` they
 * operate that docs-api over its RPC instead (`DocsRpcs`, `DOCS_ADMIN_TOKEN`).
 *
 * `svc docs keys create|list|revoke`: the REST API's keys, in the same database; a running docs-api
 * accepts a new key (and refuses a revoked one) from its next request on.
 */
import {
  type ApiKeyRecord,
  ApiKeys,
  type CreateApiKeyOptions,
  describeCrawl,
  DocsRpcClient,
  type IndexOutcome,
  type IndexProgress,
  Indexer,
  type LibraryListing,
  sourceProblem,
  validateSettings
} from "@svc/docs"
import { DEFAULT_TRUST_SCORE, MAX_NAME_LENGTH, MAX_SEARCH_TEXT_LENGTH, type SourceKind, TrustScore } from "@svc/schema"
import { Database, Migrations, plural, ServiceClient, Settings } from "@svc/platform"
import type { IndexEvent } from "@svc/schema"
import { Config, Console, Effect, Layer, Option, Redacted, Schema } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { wholeNumberFlag } from "./WholeNumberFlag.ts"
import * as fs from "node:fs"
import * as path from "node:path"
import { commaList } from "./CommaList.ts"
import { UsageError } from "./CommandFailed.ts"
import { deliverLine, printJson, printLine, printProgress } from "./Terminal.ts"

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
    case "Cloning":
      return `Cloning ${progress.url}`
    case "Fetched":
      return `  fetched [${progress.pages}, at most ${progress.maxPages}] ${progress.url}`
    case "Crawled":
      // `Read 57 pages; skipped 5 (3 not found, …)`, or `Stopped after 10m (DOCS_CRAWL_DEADLINE): …`
      return describeCrawl(progress)
    case "Waiting":
      return `${progress.libraryId} is being indexed by another run (${progress.holder}): waiting for it to end`
    case "Started":
      return `Indexing ${progress.libraryId} ${progress.version} from ${progress.root}`
    case "FileRead":
      return `  [${progress.filesRead}/${progress.totalFiles}] ${progress.path}: ${plural(progress.snippets, "snippet")}`
    case "Stored":
      return `Stored ${plural(progress.snippets, "snippet")} (${progress.tokens} tokens)`
  }
}

/** Progress is a log: stderr, so that stdout holds the result alone (`svc docs add … > done.txt`). */
const onProgress = (progress: IndexProgress) => printProgress(describeProgress(progress))

/**
 * With `DOCS_URL` the commands operate that running docs-api over its RPC (`DocsRpcs`, behind
 * `DOCS_ADMIN_TOKEN`; the server reads the sources); without it they work on the database directly.
 */
const RemoteConfig = Config.all({
  url: Config.option(ServiceClient.urlSetting("DOCS_URL")),
  token: Config.option(Config.Redacted("DOCS_ADMIN_TOKEN"))
})

const remote = Effect.gen(function*() {
  const { token, url } = yield* RemoteConfig
  if (Option.isNone(url)) return undefined
  if (Option.isNone(token)) {
    return yield* Effect.fail(new Error(`DOCS_URL is set (${url.value}): DOCS_ADMIN_TOKEN is needed to operate that docs-api`))
  }
  const problem = ServiceClient.targetProblem({
    url: url.value,
    urlVariable: "DOCS_URL",
    token: Redacted.value(token.value),
    tokenVariable: "DOCS_ADMIN_TOKEN"
  })
  if (problem !== undefined) return yield* Effect.fail(new Error(problem))
  return { url: url.value, operations: DocsRpcClient.operations({ url: url.value, token: token.value }) }
})

/** The message of a failed remote operation: the run's own, or why the docs-api could not be used. */
const remoteFailure = (url: string) => (error: { readonly _tag: string; readonly message: string }) =>
  new Error(
    error._tag === "RpcClientError"
      ? ServiceClient.describeFailure({ service: "docs-api", url, tokenVariable: "DOCS_ADMIN_TOKEN" }, error)
      : error._tag === "Unauthorized"
      ? `docs-api at ${url} refused DOCS_ADMIN_TOKEN: ${error.message}`
      : error.message
  )

const onEvent = (event: IndexEvent) => event._tag === "Done" ? Effect.void : onProgress(event)

const describeDone = (done: Option.Option<IndexEvent>) =>
  Option.isSome(done) && done.value._tag === "Done"
    ? `${done.value.libraryId}/${done.value.version} is ready: ${plural(done.value.files, "file")}, ${plural(done.value.snippets, "snippet")}`
    : "The run ended without an outcome"

const describeOutcome = (outcome: IndexOutcome) =>
  `${outcome.libraryId}/${outcome.version} is ready: ${plural(outcome.files, "file")}, ${plural(outcome.snippets, "snippet")}`

const optional = <A>(option: Option.Option<A>) => Option.getOrUndefined(option)

/**
 * A relative source path as the caller meant it: `npm run svc` runs in the repository's root, and npm
 * names the folder it was called from in `INIT_CWD` (`cd docs && npm run svc -- docs add ./guide` read
 * `<root>/guide`). A path that exists there is taken from there, and so is one that says it is relative
 * (`./`, `../`) whether it exists or not (`./missing` was reported as `<root>/missing does not exist`);
 * anything else (npm:, a URL, a git address) goes on as given.
 */
const fromCaller = (source: string): string => {
  const caller = process.env.INIT_CWD
  if (caller === undefined || caller === "" || path.isAbsolute(source)) return source
  const there = path.resolve(caller, source)
  return fs.existsSync(there) || /^\.\.?([\\/]|$)/.test(source) ? there : source
}

const add = Command.make(
  "add",
  {
    source: Argument.String("source").pipe(
      Argument.withDescription(
        "A folder (a git working tree is a folder), a git URL or bare repository path (cloned; #<branch or tag> optional), " +
          "npm:<package> installed in node_modules, a website (http/https: its llms.txt if it has one, else a crawl of the pages under the URL) " +
          "or an OpenAPI 3 document (a .json/.yaml/.yml URL or file)"
      )
    ),
    id: Flag.String("id").pipe(Flag.withDescription("Library id /owner/repo (default: from package.json repository; for git, from the URL)"), Flag.optional),
    version: Flag.String("version").pipe(Flag.withDescription("Version (default: package.json version, else latest; for git, the tag at HEAD, else the short commit hash)"), Flag.optional),
    trust: wholeNumberFlag("trust").pipe(
      Flag.filter(Schema.is(TrustScore), (trust) => `--trust must be a whole number from 0 to 10, not ${trust}`),
      Flag.withDescription(
        `Your trust in these docs, 0 to 10: ranks libraries whose names match equally well (default: ${DEFAULT_TRUST_SCORE} for a new library, else unchanged)`
      ),
      Flag.optional
    ),
    title: Flag.String("title").pipe(
      Flag.filter(
        (title) => title.trim() !== "" && title.length <= MAX_NAME_LENGTH,
        () => `--title must be 1 to ${MAX_NAME_LENGTH} characters`
      ),
      Flag.withDescription("The library's title (default: package.json name, else the README's first heading)"),
      Flag.optional
    ),
    description: Flag.String("description").pipe(
      Flag.filter(
        (description) => description.length <= MAX_SEARCH_TEXT_LENGTH,
        () => `--description must be at most ${MAX_SEARCH_TEXT_LENGTH} characters`
      ),
      Flag.withDescription("The library's description (default: package.json description, else the README's first paragraph)"),
      Flag.optional
    )
  },
  Effect.fn(function*({ description, id, source, title, trust, version }) {
    // what can never be a source is said before a database is opened (or created and migrated), or a
    // docs-api called
    const problem = sourceProblem(source)
    if (problem !== undefined) return yield* Effect.fail(new UsageError(["svc", "docs", "add"], problem))
    const server = yield* remote
    if (server !== undefined) {
      const done = yield* server.operations.add(
        {
          source,
          ...(Option.isSome(id) ? { id: id.value } : {}),
          ...(Option.isSome(version) ? { version: version.value } : {}),
          ...(Option.isSome(trust) ? { trust: trust.value } : {}),
          ...(Option.isSome(title) ? { title: title.value } : {}),
          ...(Option.isSome(description) ? { description: description.value } : {})
        },
        onEvent
      ).pipe(Effect.mapError(remoteFailure(server.url)))
      return yield* printLine(describeDone(done))
    }
    const outcome = yield* withIndexer(Effect.gen(function*() {
      const indexer = yield* Indexer
      return yield* indexer.add(fromCaller(source), {
        id: optional(id),
        version: optional(version),
        trust: optional(trust),
        title: optional(title),
        description: optional(description),
        onProgress
      })
    }))
    yield* printLine(describeOutcome(outcome))
  })
).pipe(
  Command.withDescription(
    "Index a library's documentation (.md, .mdx, .rst, .txt files of a folder, git repository or npm package; a website; an OpenAPI document) and make it the default version"
  ),
  Command.withExamples([
    { command: "svc docs add ./docs --id /acme/widgets --version 2.1.0 --trust 8", description: "A local folder, trusted above the default 5" },
    { command: "svc docs add npm:effect", description: "An installed npm package (id from its repository field)" },
    { command: "svc docs add ./handbook --id /acme/handbook --title \"Acme handbook\" --description \"How we build and ship\"", description: "A folder with its own title and description (default: its README's first heading and paragraph)" },
    { command: "svc docs add git@github.com:acme/widgets.git#v2.1.0", description: "A git repository, cloned at a tag (credentials in a URL are never stored)" },
    { command: "svc docs add https://docs.acme.dev/widgets/", description: "A website: its llms.txt if it has one, else the pages under the URL (DOCS_CRAWL_* bound the crawl)" },
    { command: "svc docs add ./api/openapi.yaml", description: "An OpenAPI 3 document (a file or an http(s) URL): one snippet per operation" }
  ])
)

/** A library as lines (printed {@link printLine}: what its sources wrote, id, title and rules, may hold anything). */
const describeLibrary = (library: LibraryListing): ReadonlyArray<string> => [
  `${library.id}  ${library.title}  (${library.source})`,
  ...(library.rules ?? []).map((rule) => `  rule: ${rule}`),
  ...library.versions.map((version) =>
    [
      `  ${version.version}${version.version === library.defaultVersion ? " (default)" : ""}`,
      version.state + (version.errorCategory === null ? "" : ` (${version.errorCategory})`),
      plural(version.snippets, "snippet"),
      plural(version.tokens, "token"),
      version.lastUpdate === null ? "never indexed" : `updated ${version.lastUpdate.toISOString()}`
    ].join("  ")
  )
]

const list = Command.make(
  "list",
  { json: Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of lines"), Flag.withDefault(false)) },
  Effect.fn(function*({ json }) {
    const server = yield* remote
    const libraries: ReadonlyArray<LibraryListing> = server !== undefined
      ? (yield* server.operations.list.pipe(Effect.mapError(remoteFailure(server.url)))).map((library) => ({
        ...library,
        versions: library.versions.map((version) => ({
          ...version,
          lastUpdate: version.lastUpdate === null ? null : new Date(version.lastUpdate)
        }))
      }))
      : yield* withIndexer(Effect.gen(function*() {
        return yield* (yield* Indexer).list
      }))
    if (json) return yield* printJson(libraries)
    if (libraries.length === 0) return yield* printLine("No libraries yet: add one with svc docs add <folder|git URL|npm:package|website|OpenAPI document>")
    yield* Effect.forEach(libraries.flatMap(describeLibrary), (line) => printLine(line), { discard: true })
  })
).pipe(Command.withDescription("List indexed libraries with their versions, states and sizes"))

const libraryId = Argument.String("id").pipe(Argument.withDescription("/owner/repo, or /owner/repo/version for one version"))

const refresh = Command.make(
  "refresh",
  { id: libraryId },
  Effect.fn(function*({ id }) {
    const server = yield* remote
    if (server !== undefined) {
      const done = yield* server.operations.refresh(id, onEvent).pipe(Effect.mapError(remoteFailure(server.url)))
      return yield* printLine(describeDone(done))
    }
    const outcome = yield* withIndexer(Effect.gen(function*() {
      return yield* (yield* Indexer).refresh(id, { onProgress })
    }))
    yield* printLine(describeOutcome(outcome))
  })
).pipe(Command.withDescription("Read a library's source again (readers switch to the new snippets at once, atomically)"))

const remove = Command.make(
  "remove",
  { id: libraryId },
  Effect.fn(function*({ id }) {
    const server = yield* remote
    const removed = server !== undefined
      ? yield* server.operations.remove(id).pipe(Effect.mapError(remoteFailure(server.url)))
      : yield* withIndexer(Effect.gen(function*() {
        return yield* (yield* Indexer).remove(id)
      }))
    if (!removed) return yield* Effect.fail(new Error(`No library ${id} (svc docs list shows them)`))
    yield* printLine(`${id}: removed`)
  })
).pipe(Command.withDescription(
  "Remove a library, or one version of it, and its snippets (a library's last version takes the library with it; a removed default gives way to the newest ready version)"
))

// -----------------------------------------------------------------------------
// keys
// -----------------------------------------------------------------------------

/** API keys on the suite's database, the `docs` schema migrated first. */
const ApiKeysLive = ApiKeys.layer.pipe(
  Layer.provideMerge(Layer.effectDiscard(Migrations.migrate("docs"))),
  Layer.provideMerge(Database.layer)
)

/**
 * The keys live in the database, not behind the RPC: with `DOCS_URL` set and no `DATABASE_URL`, a key
 * would be made in this machine's embedded database (made for it, too), which the docs-api at
 * `DOCS_URL` never reads — a key its server refuses, with no word of why. Refused instead, naming both.
 */
const keysDatabase = Effect.gen(function*() {
  const { url } = yield* RemoteConfig
  if (Option.isNone(url) || Option.isSome(yield* Settings.DatabaseUrl)) return
  return yield* Effect.fail(
    new Error(
      `DOCS_URL is set (${url.value}), but API keys are kept in the docs-api's database, not reached through DOCS_URL: ` +
        "set DATABASE_URL to that database (`svc db url` on its machine), or unset DOCS_URL to use this machine's"
    )
  )
})

const withKeys = <A, E extends { readonly message: string }>(effect: Effect.Effect<A, E, ApiKeys>) =>
  // checked before the database layer is built (an embedded one would start first)
  Effect.andThen(keysDatabase, Effect.provide(effect, ApiKeysLive)).pipe(
    Effect.mapError((error) => error instanceof Config.ConfigError || error instanceof UsageError ? error : new Error(error.message))
  )

/**
 * An optional comma-separated list flag ({@link commaList}; absent: `[]`, which a key's settings read
 * as "all"). Given, it must name something: `--libraries=` or `--sources ,` would otherwise create a
 * key that sees everything, the opposite of what the flag asks.
 */
const listFlag = (name: string, description: string) =>
  Flag.String(name).pipe(
    Flag.withDescription(description),
    Flag.filterMap(
      (text) => {
        const entries = commaList([text])
        return entries.length === 0 ? Option.none() : Option.some(entries)
      },
      (text) => `--${name} ${JSON.stringify(text)} names nothing: list at least one, or leave the flag out for all`
    ),
    Flag.optional,
    Flag.map(Option.getOrElse((): ReadonlyArray<string> => []))
  )

const describeSettings = (key: ApiKeyRecord): string =>
  key.settings.libraries.length === 0 && key.settings.sources.length === 0
    ? "all libraries, all sources"
    : [
      `libraries ${key.settings.libraries.length === 0 ? "all" : key.settings.libraries.join(",")}`,
      `sources ${key.settings.sources.length === 0 ? "all" : key.settings.sources.join(",")}`
    ].join("; ")

/** One line per key: never the key itself (it is not stored), only its prefix. */
const describeKey = (key: ApiKeyRecord): string =>
  [
    key.prefix,
    `id ${key.id}`,
    key.name === "" ? "(no name)" : JSON.stringify(key.name),
    `team ${key.team ?? "-"}`,
    `created ${key.createdAt.toISOString()}`,
    key.revokedAt === null ? "active" : `revoked ${key.revokedAt.toISOString()}`,
    describeSettings(key)
  ].join("  ")

/** Creates a key with checked `options` and prints it: the key alone on stdout, its description on stderr. */
const createKey = Effect.fnUntraced(function*(options: CreateApiKeyOptions) {
  const apiKeys = yield* ApiKeys
  const { key, record } = yield* apiKeys.create(options)
  // The key alone on stdout, so `KEY=$(svc docs keys create)` works, and its description on stderr.
  // A key that did not reach stdout (`> /dev/full`, a reader gone) is one nobody has: revoked at once,
  // and not described as created.
  yield* deliverLine(key).pipe(
    Effect.catch((lost) =>
      apiKeys.revoke(record.id).pipe(
        Effect.andThen(Effect.fail(new Error(`${lost.message}, so the key ${record.prefix}… (id ${record.id}) was revoked: nobody has it`)))
      )
    )
  )
  yield* Console.error(`Created API key ${record.prefix}… (id ${record.id}): ${describeSettings(record)}`)
  yield* Console.error("Store it now: only its hash is kept, it cannot be shown again.")
})

const create = Command.make(
  "create",
  {
    name: Flag.String("name").pipe(Flag.withDescription("What the key is for (shown by list)"), Flag.optional),
    team: Flag.String("team").pipe(Flag.withDescription("The team the key belongs to"), Flag.optional),
    libraries: listFlag("libraries", "Library filter: ids and prefixes, comma-separated (/acme/widgets,/acme/*); default all"),
    sources: listFlag("sources", "Source access: source kinds, comma-separated (folder,npm,git); default all")
  },
  Effect.fn(function*({ libraries, name, sources, team }) {
    const options = {
      name: optional(name),
      team: optional(team),
      libraries,
      sources: sources as ReadonlyArray<SourceKind> // checked by validateSettings
    }
    // a flag's value the key cannot take (`--sources ftp`, a name over 200 characters), refused before
    // the database is opened (or the embedded cluster started)
    yield* validateSettings(options).pipe(
      Effect.catchTag("InvalidApiKeyOptions", (error) => Effect.fail(new UsageError(["svc", "docs", "keys", "create"], error.message)))
    )
    return yield* withKeys(createKey(options))
  })
).pipe(
  Command.withDescription("Create an API key for the docs REST API (printed once)"),
  Command.withExamples([
    { command: "svc docs keys create --name ci", description: "A key with the keyed rate limit, seeing everything" },
    {
      command: "svc docs keys create --name web --team acme --libraries '/acme/*' --sources folder",
      description: "A team key that sees only acme's libraries indexed from folders"
    }
  ])
)

const listKeys = Command.make(
  "list",
  { json: Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of lines"), Flag.withDefault(false)) },
  Effect.fn(function*({ json }) {
    const keys = yield* (yield* ApiKeys).list
    if (json) return yield* printJson(keys)
    if (keys.length === 0) return yield* printLine("No API keys yet: create one with svc docs keys create")
    yield* Effect.forEach(keys, (key) => printLine(describeKey(key)), { discard: true })
  }, withKeys)
).pipe(Command.withDescription("List API keys: prefix, id, name, team, created, revoked, settings (never the key)"))

const revoke = Command.make(
  "revoke",
  { key: Argument.String("prefix-or-id").pipe(Argument.withDescription("The key's prefix (svcsk_…) or id, as list shows")) },
  Effect.fn(function*({ key }) {
    const record = yield* (yield* ApiKeys).revoke(key)
    yield* printLine(`${record.prefix} (id ${record.id}): revoked ${record.revokedAt?.toISOString()}`)
  }, withKeys)
).pipe(Command.withDescription("Revoke an API key: the API refuses it (401) from the next request on"))

const keys = Command.make("keys").pipe(
  Command.withDescription("API keys of the docs REST API: create, list, revoke"),
  Command.withSubcommands([create, listKeys, revoke])
)

export const docs = Command.make("docs").pipe(
  Command.withDescription("Index documentation and manage API keys for the docs service (runs against the database directly)"),
  Command.withSubcommands([add, list, refresh, remove, keys])
)
