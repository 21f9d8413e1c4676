/**
 * (About 700 lines on purpose: the index writer is one transaction story — generations, the
 * switch, refresh states, run claims, resumption — that a reader checks for atomicity top to bottom.)
 *
 * `IndexStore`: the index writer, the one service that writes libraries, versions and snippets (and
 * reads back what the indexer needs: a library's stored source, the unfinished versions, the listing).
 * Search.ts reads the same tables for the API.
 *
 * Atomic re-index: the snippets are written as a new *generation*; one transaction then points the
 * version at it and deletes the previous one. Readers (Search.ts) read pointer and snippets in one
 * statement, so an answer is entirely from one generation. A failed run leaves the live generation
 * (if any) in place; its version says `failed` with an error category.
 *
 * Refresh states of a version: `queued` (registered, nothing read yet) → `indexing` (a run has
 * started) → `ready` | `failed`. A run that is interrupted puts its version back to `queued`.
 *
 * Every run holds its version's run lock (RunLocks.ts) from the moment it makes the version
 * `indexing` ({@link IndexStore} `claim`, `startIndexing`) to its end: the state and the lock are
 * taken in one transaction, so no other process ever sees the version `indexing` without its lock
 * while its run lives. One whose process died leaves it `indexing` with the lock free: it is listed
 * `queued` (`listedState`) and taken up again by a docs-api (DefaultLibraries.ts).
 */
import { DEFAULT_TRUST_SCORE, IndexState } from "@svc/schema"
import { atDatabaseBoundary, Database } from "@svc/platform"
import { Array as Arr, Clock, Context, Effect, Layer, Option, Ref, Schema, Scope } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { listedVersionState, MemoryIndex, type MemoryIndexState, type MemoryVersion } from "./MemoryIndex.ts"
import { IdRow, RowId, Timestamp } from "./Rows.ts"
import * as RunLocks from "./RunLocks.ts"
import type { ErrorCategory, ResolvedSource } from "./sources/Source.ts"
import type { Snippet } from "./Splitter.ts"
import { identifierWords } from "./ranking/Identifiers.ts"

export interface LibraryListing {
  readonly id: string
  readonly title: string
  readonly source: string
  readonly defaultVersion: string
  /** Rules for agents from the library's `svc.json` (sources/RepoConfig.ts); empty without one. */
  readonly rules?: ReadonlyArray<string> | undefined
  readonly versions: ReadonlyArray<{
    readonly version: string
    readonly state: string
    readonly errorCategory: string | null
    readonly snippets: number
    readonly tokens: number
    readonly lastUpdate: Date | null
  }>
}

/** A version whose refresh has not finished (see `IndexStore.unfinished`). */
export interface UnfinishedVersion {
  /** `/owner/repo/version`. */
  readonly libraryId: string
  readonly version: string
  /** As listed: `indexing` while a run holds the version, `queued` while it waits for one. */
  readonly state: "queued" | "indexing"
}

/**
 * A run of the version is going on (it holds the version's run lock: RunLocks.ts), in another
 * process or in this one: a second run's claim is refused, and nothing was changed (the Indexer waits
 * and tries again; a resume leaves the version to that run).
 */
export class VersionBusy extends Schema.TaggedError<VersionBusy>()("VersionBusy", {
  /** `/owner/repo/version`. */
  libraryId: Schema.String,
  /** The run's process, in words (`process 4242 on build-1`, `this process, pid 4242`). */
  holder: Schema.String,
  message: Schema.String
}) {}

const versionBusy = (libraryId: string, holder: string | undefined, since: Date | undefined) =>
  new VersionBusy({
    libraryId,
    holder: holder ?? "another process",
    message: `${libraryId} is being indexed by another run (${holder ?? "one that has just ended"}${
      since === undefined ? "" : `, started ${since.toISOString()}`
    })`
  })

/** A run lock found held by a claim (IndexStore.layer): its transaction rolls back on it. */
class Held extends Schema.TaggedError<Held>()("Held", { versionId: Schema.String, here: Schema.Boolean }) {}

/** Options of {@link IndexStore} `startIndexing`. */
export interface StartOptions {
  /** Only a version still `queued` or `indexing` (a resume): none for one that finished meanwhile. */
  readonly unfinishedOnly?: boolean | undefined
}

/** What is stored of a source: everything but the folder it was read from. */
export type SourceRecord = Omit<ResolvedSource, "root">

/** A library's stored source, for `refresh`. */
export interface StoredLibrary {
  readonly location: string
  readonly defaultVersion: string
}

const INSERT_BATCH = 500

/** A version a refresh or resume started: its row id, its own source, and whether an add meant it to become the default once ready. */
export interface StartedVersion {
  readonly versionId: string
  readonly location: string | undefined
  readonly defaultWhenReady: boolean
  /** The last run asked for was a remote caller's: this one is confined to `DOCS_SOURCE_ROOTS` too. */
  readonly confined: boolean
}

/**
 * How a version is registered. `makeDefault`: the version becomes the library's default now.
 * `defaultWhenReady`: an add's version, to become the default once a run finishes it (recorded with the
 * version, so that the run finishing a killed add's version promotes it too). `trust`: the library's
 * trust score. `confined`: the run is a remote caller's, read under `DOCS_SOURCE_ROOTS` (recorded, so
 * that a resume or a scheduled refresh of the version is read under them too; the latest run decides).
 */
export interface RegisterOptions {
  readonly makeDefault: boolean
  readonly defaultWhenReady?: boolean | undefined
  readonly trust?: number | undefined
  readonly confined?: boolean | undefined
}

const LibraryRow = Schema.Struct({ source_location: Schema.String, default_version: Schema.String })
const GenerationPointer = Schema.Struct({ generation_id: Schema.NullOr(RowId) })
const StaleStatistics = Schema.Struct({ stale: Schema.Boolean })
const UnfinishedRow = Schema.Struct({ library_id: Schema.String, version: Schema.String, state: Schema.Literals(["queued", "indexing"]) })
const StartedRow = Schema.Struct({
  id: Schema.String,
  source_location: Schema.NullOr(Schema.String),
  pending_default: Schema.Boolean,
  confined: Schema.Boolean
})
const RunStart = Schema.Struct({ library_id: Schema.String, version: Schema.String, updated_at: Timestamp })
const ListedLibrary = Schema.Struct({
  id: Schema.String,
  title: Schema.String,
  source_location: Schema.String,
  default_version: Schema.String,
  rules: Schema.Array(Schema.String)
})
const ListedVersion = Schema.Struct({
  library_id: Schema.String,
  version: Schema.String,
  state: IndexState,
  error_category: Schema.NullOr(Schema.String),
  snippet_count: Schema.Number,
  token_count: Schema.Number,
  last_update: Schema.NullOr(Timestamp)
})
const Count = Schema.Struct({ count: Schema.Number })

export class IndexStore extends Context.Service<IndexStore, {
  /**
   * Creates or updates the library and its version, in `state`; the version's row id. `queued` does
   * not take back a version another run is indexing right now. `makeDefault`: the version becomes the
   * library's default, with the source's title, description and location (otherwise an existing
   * library keeps its own until {@link promote}). `trust`: the library's trust score (a new library
   * without it gets 5, an existing one keeps its own). `indexing` takes no run lock: a run uses
   * {@link claim} (or registers again a version it holds); without one, the version is what a run that
   * died leaves, listed `queued`.
   */
  readonly register: (
    source: SourceRecord,
    state: "queued" | "indexing",
    options: RegisterOptions
  ) => Effect.Effect<string>
  /**
   * A run of the source's version starts: {@link register} in state `indexing` and the version's run
   * lock taken for the scope's life, in one transaction. Fails with `VersionBusy` — nothing changed —
   * while another run (in any process) holds the lock.
   */
  readonly claim: (
    source: SourceRecord,
    options: RegisterOptions
  ) => Effect.Effect<string, VersionBusy, Scope.Scope>
  /** Registers sources `queued`, each version its library's default: all or none. */
  readonly enqueue: (sources: ReadonlyArray<SourceRecord>) => Effect.Effect<void>
  /** The library `/owner/repo`: its stored source and default version. */
  readonly library: (id: string) => Effect.Effect<Option.Option<StoredLibrary>>
  /**
   * Puts an existing version in state `indexing` (a refresh starts), with its run lock taken for the
   * scope's life as {@link claim} does: its row id and the location it was registered from
   * (`undefined` for a version registered before versions kept theirs: the library's applies), if it
   * exists (and with `unfinishedOnly`, if it is still `queued` or `indexing`). Fails with
   * `VersionBusy` — nothing changed — while another run holds the lock.
   */
  readonly startIndexing: (
    id: string,
    version: string,
    options?: StartOptions
  ) => Effect.Effect<
    Option.Option<StartedVersion>,
    VersionBusy,
    Scope.Scope
  >
  /**
   * Writes the snippets as a new generation and makes it the version's live one (state `ready`);
   * the tokens stored. Nothing half-written stays behind on failure.
   */
  readonly write: (versionId: string, snippets: ReadonlyArray<Snippet>) => Effect.Effect<number>
  /**
   * An interrupted run: back to `queued` (if it is still `indexing`). `withdrawDefault`: an add that
   * was interrupted (its caller went away, Ctrl-C) no longer means its version to become the default.
   */
  readonly requeue: (versionId: string, options?: { readonly withdrawDefault?: boolean }) => Effect.Effect<void>
  /** `failed`, unless another run finished the version meanwhile (then that run's state stands). */
  readonly markFailed: (versionId: string, category: ErrorCategory) => Effect.Effect<void>
  /**
   * Versions `queued` or `indexing` as listed (an `indexing` one whose run died is `queued`), oldest
   * registration first.
   */
  readonly unfinished: Effect.Effect<ReadonlyArray<UnfinishedVersion>>
  /**
   * Removes a library (no `version`) or one version; false if unknown. A library whose last version is
   * removed is removed with it (with no version it answers nothing, and was listed as "queued"); one whose
   * default version is removed gets its newest ready version as the default (else its newest), where
   * readers without a version asked had "no version undefined".
   */
  readonly remove: (id: string, version: string | undefined) => Effect.Effect<boolean>
  /**
   * Libraries by id, each with its versions in registration order; a version's state as listed (an
   * `indexing` one whose run died is `queued`).
   */
  readonly list: Effect.Effect<ReadonlyArray<LibraryListing>>
  /** No library at all. */
  readonly isEmpty: Effect.Effect<boolean>
  /**
   * Makes the source's version its library's default, with the source's title, description, location
   * and rules: an add, once its version is ready. Until then readers keep the previous default, and a
   * run that fails leaves the library as it was.
   */
  readonly promote: (source: SourceRecord) => Effect.Effect<void>
}>()("@svc/docs/IndexStore") {
  /** On Postgres (the `docs` schema migrated). */
  static readonly layer = Layer.effect(
    IndexStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      // this process's run locks, on a lock session of their own (RunLocks.ts)
      const locks = yield* RunLocks.make((yield* Database).url)

      const register = Effect.fnUntraced(function*(
        source: SourceRecord,
        state: "queued" | "indexing",
        options: RegisterOptions
      ) {
        const { makeDefault, trust } = options
        const pendingDefault = options.defaultWhenReady === true
        const version = yield* SqlSchema.findOne({ Request: Schema.Void, Result: IdRow, execute: () => sql`
          WITH library AS (
            INSERT INTO docs.libraries (id, title, description, source_kind, source_location, default_version, trust_score, rules)
            VALUES (${source.libraryId}, ${source.title}, ${source.description}, ${source.kind}, ${source.location}, ${source.version},
              ${trust ?? DEFAULT_TRUST_SCORE}, ${JSON.stringify(source.rules ?? [])}::jsonb)
            ON CONFLICT (id) DO UPDATE SET updated_at = now()
              ${
          makeDefault
            ? sql`, default_version = excluded.default_version, title = excluded.title, description = excluded.description,
                source_kind = excluded.source_kind, source_location = excluded.source_location, rules = excluded.rules`
            : sql``
        }
              ${trust === undefined ? sql`` : sql`, trust_score = excluded.trust_score`}
            RETURNING id
          )
          INSERT INTO docs.versions AS v (library_id, version, state, source_kind, source_location, pending_default, confined)
          SELECT id, ${source.version}, ${state}, ${source.kind}, ${source.location}, ${pendingDefault}, ${options.confined === true} FROM library
          ON CONFLICT (library_id, version) DO UPDATE SET
            state = ${state === "queued" ? sql`CASE WHEN v.state = 'indexing' THEN 'indexing' ELSE 'queued' END` : sql`'indexing'`},
            source_kind = excluded.source_kind, source_location = excluded.source_location,
            pending_default = v.pending_default OR excluded.pending_default,
            confined = excluded.confined,
            error_category = NULL, updated_at = now()
          RETURNING id` })()
        return version.id
      })

      /** Takes a version's run lock for `scope` (released when it closes); who holds it otherwise. */
      const lockFor = (scope: Scope.Scope, versionId: string) =>
        Effect.uninterruptible(Effect.gen(function*() {
          const taken = yield* locks.take(versionId)
          if (taken === "taken") yield* Scope.addFinalizer(scope, locks.release(versionId))
          return taken
        }))

      /**
       * A run lock found held inside a claim's transaction: the transaction rolls back (nothing changed),
       * then {@link busy} says who holds it.
       */
      const held = (versionId: string, taken: RunLocks.Taken) => Effect.fail(new Held({ versionId, here: taken === "held here" }))

      const busy = Effect.fnUntraced(function*(libraryId: string, found: Held) {
        const run = yield* SqlSchema.findOneOption({
          Request: Schema.Void,
          Result: RunStart,
          execute: () => sql`SELECT library_id, version, updated_at FROM docs.versions WHERE id = ${found.versionId}`
        })()
        const holder = found.here ? `this process, pid ${process.pid}` : yield* RunLocks.describeHolder(sql, found.versionId)
        return yield* versionBusy(
          Option.match(run, { onNone: () => libraryId, onSome: (row) => `${row.library_id}/${row.version}` }),
          holder,
          Option.getOrUndefined(run)?.updated_at
        )
      })

      const claim = Effect.fnUntraced(function*(
        source: SourceRecord,
        options: RegisterOptions
      ) {
        const scope = yield* Effect.scope
        return yield* sql.withTransaction(Effect.gen(function*() {
          const versionId = yield* register(source, "indexing", options)
          const taken = yield* lockFor(scope, versionId)
          return taken === "taken" ? versionId : yield* held(versionId, taken)
        })).pipe(Effect.catchTag("Held", (found) => busy(`${source.libraryId}/${source.version}`, found)))
      })

      // All or none: a crash while registering leaves nothing half-queued.
      const enqueue = (sources: ReadonlyArray<SourceRecord>) =>
        sql.withTransaction(Effect.forEach(sources, (source) => register(source, "queued", { makeDefault: true }), { discard: true }))

      const library = (id: string) =>
        SqlSchema.findOneOption({
          Request: Schema.Void,
          Result: LibraryRow,
          execute: () => sql`SELECT source_location, default_version FROM docs.libraries WHERE id = ${id}`
        })().pipe(
          Effect.map(Option.map((row): StoredLibrary => ({ location: row.source_location, defaultVersion: row.default_version })))
        )

      const startIndexing = Effect.fnUntraced(function*(id: string, version: string, options: StartOptions = {}) {
        const scope = yield* Effect.scope
        return yield* sql.withTransaction(Effect.gen(function*() {
          const started = yield* SqlSchema.findOneOption({
            Request: Schema.Void,
            Result: StartedRow,
            execute: () =>
              sql`
                UPDATE docs.versions SET state = 'indexing', error_category = NULL, updated_at = now()
                WHERE library_id = ${id} AND version = ${version}
                  ${options.unfinishedOnly === true ? sql`AND state IN ('queued', 'indexing')` : sql``}
                RETURNING id::text, source_location, pending_default, confined`
          })()
          if (Option.isNone(started)) return Option.none()
          const taken = yield* lockFor(scope, started.value.id)
          if (taken !== "taken") return yield* held(started.value.id, taken)
          return Option.some<StartedVersion>({
            versionId: started.value.id,
            location: started.value.source_location ?? undefined,
            defaultWhenReady: started.value.pending_default,
            confined: started.value.confined
          })
        })).pipe(Effect.catchTag("Held", (found) => busy(`${id}/${version}`, found)))
      })

      /**
       * Library search reads `docs.libraries` through its trigram index only while the planner knows
       * how many libraries there are: after a bulk add, until autovacuum analyzed the table (a minute
       * or more), it scanned all 10,000 (4 ms a search instead of 0.07 ms). So a run that leaves 10%
       * (and 20) more libraries than the statistics know analyzes that small table (10,000 rows: ~20 ms).
       */
      const refreshLibraryStatistics = Effect.gen(function*() {
        const known = yield* SqlSchema.findOneOption({
          Request: Schema.Void,
          Result: StaleStatistics,
          execute: () =>
            sql`
              SELECT (SELECT count(*) FROM docs.libraries) > 1.1 * greatest(c.reltuples, 0) + 20 AS stale
              FROM pg_class c WHERE c.oid = 'docs.libraries'::regclass`
        })()
        if (Option.isSome(known) && known.value.stale) yield* sql`ANALYZE docs.libraries`
      }).pipe(
        // the run's version is live already: statistics are a speed matter, never the run's failure
        Effect.catch((error) => Effect.logWarning(`Could not analyze docs.libraries: ${error.message}`))
      )

      const write = Effect.fnUntraced(function*(versionId: string, snippets: ReadonlyArray<Snippet>) {
        // Generations of earlier runs that never went live (a process killed while it wrote, or between
        // write and switch). The run holds its version's run lock (RunLocks.ts), so no other run of the
        // version is writing one: all of them go, however recent (an age bar left a killed run's rows in
        // place until a run more than an hour later, and for good when none came).
        yield* sql`
          DELETE FROM docs.generations g USING docs.versions v
          WHERE g.version_id = ${versionId} AND v.id = g.version_id AND g.id IS DISTINCT FROM v.generation_id`
        const { id: generationId } = yield* SqlSchema.findOne({
          Request: Schema.Void,
          Result: IdRow,
          execute: () => sql`INSERT INTO docs.generations (version_id) VALUES (${versionId}) RETURNING id`
        })()
        const switched = Effect.gen(function*() {
          for (let start = 0; start < snippets.length; start += INSERT_BATCH) {
            const rows = snippets.slice(start, start + INSERT_BATCH).map((snippet, index) => ({
              generation_id: generationId,
              ordinal: start + index,
              kind: snippet.kind,
              title: snippet.title,
              heading_path: snippet.headingPath,
              heading: snippet.headingPath.join(" > "),
              description: snippet.description,
              language: snippet.language,
              body: snippet.body,
              source_path: snippet.sourcePath,
              source_url: snippet.sourceUrl ?? null,
              tokens: snippet.tokens,
              // ranking: the words of the title's and heading path's identifiers (migration 0004)
              identifiers: identifierWords(`${snippet.title} ${snippet.headingPath.join(" ")}`)
            }))
            if (Arr.isArrayNonEmpty(rows)) yield* sql`INSERT INTO docs.snippets ${sql.insert(rows)}`
          }
          // what the docs are about, for library search (migration 0003)
          yield* sql`
            UPDATE docs.generations SET topics = (
              SELECT to_tsvector('english'::regconfig, left(string_agg(s.title || ' ' || s.heading || ' ' || s.description, ' '), 500000))
              FROM docs.snippets s WHERE s.generation_id = ${generationId}
            ) WHERE id = ${generationId}`
          const tokens = snippets.reduce((sum, snippet) => sum + snippet.tokens, 0)
          yield* sql.withTransaction(Effect.gen(function*() {
            const current = yield* SqlSchema.findOneOption({
              Request: Schema.Void,
              Result: GenerationPointer,
              execute: () => sql`SELECT generation_id FROM docs.versions WHERE id = ${versionId} FOR UPDATE`
            })()
            yield* sql`
              UPDATE docs.versions
              SET generation_id = ${generationId}, state = 'ready', error_category = NULL,
                  snippet_count = ${snippets.length}, token_count = ${tokens}, last_update = now(), updated_at = now()
              WHERE id = ${versionId}`
            if (Option.isSome(current) && current.value.generation_id !== null) {
              yield* sql`DELETE FROM docs.generations WHERE id = ${current.value.generation_id}`
            }
          }))
          return tokens
        })
        // Never leave a half-written generation behind.
        const tokens = yield* switched.pipe(
          Effect.onError(() => sql`DELETE FROM docs.generations WHERE id = ${generationId}`.pipe(Effect.ignore))
        )
        yield* refreshLibraryStatistics
        return tokens
      })

      /**
       * Best effort: a process that dies leaves the version `indexing` with its run lock free, which
       * lists it `queued` and has a docs-api take it up (DefaultLibraries.ts).
       */
      const requeue = (versionId: string, options: { readonly withdrawDefault?: boolean } = {}) =>
        sql`UPDATE docs.versions SET state = CASE WHEN state = 'indexing' THEN 'queued' ELSE state END,
              pending_default = pending_default AND NOT ${options.withdrawDefault === true}, updated_at = now()
            WHERE id = ${versionId} AND (state = 'indexing' OR ${options.withdrawDefault === true})`
          .pipe(Effect.ignore)

      const markFailed = (versionId: string, category: ErrorCategory) =>
        sql`UPDATE docs.versions SET state = 'failed', error_category = ${category}, updated_at = now()
            WHERE id = ${versionId} AND state = 'indexing'`.pipe(Effect.asVoid)

      const unfinished = SqlSchema.findAll({
        Request: Schema.Void,
        Result: UnfinishedRow,
        execute: () =>
          sql`SELECT v.library_id, v.version, ${RunLocks.listedState(sql)} AS state
              FROM docs.versions v WHERE v.state IN ('queued', 'indexing') ORDER BY v.id`
      })().pipe(
        Effect.map((rows) =>
          rows.map((row): UnfinishedVersion => ({
            libraryId: `${row.library_id}/${row.version}`,
            version: row.version,
            state: row.state
          }))
        )
      )

      const remove = Effect.fnUntraced(function*(id: string, version: string | undefined) {
        if (version === undefined) return (yield* sql`DELETE FROM docs.libraries WHERE id = ${id} RETURNING id`).length > 0
        return yield* sql.withTransaction(Effect.gen(function*() {
          const deleted = yield* sql`DELETE FROM docs.versions WHERE library_id = ${id} AND version = ${version} RETURNING id`
          if (deleted.length === 0) return false
          // its last version: the library goes too ({@link IndexStore} `remove`)
          yield* sql`DELETE FROM docs.libraries l WHERE l.id = ${id}
            AND NOT EXISTS (SELECT 1 FROM docs.versions v WHERE v.library_id = l.id)`
          yield* sql`UPDATE docs.libraries l SET default_version = (
              SELECT v.version FROM docs.versions v WHERE v.library_id = l.id
              ORDER BY v.state = 'ready' DESC, v.created_at DESC, v.id DESC LIMIT 1)
            WHERE l.id = ${id} AND l.default_version = ${version}`
          return true
        }))
      })

      const list = Effect.gen(function*() {
        const libraries = yield* SqlSchema.findAll({
          Request: Schema.Void,
          Result: ListedLibrary,
          execute: () => sql`SELECT id, title, source_location, default_version, rules FROM docs.libraries ORDER BY id`
        })()
        const versions = yield* SqlSchema.findAll({
          Request: Schema.Void,
          Result: ListedVersion,
          execute: () =>
            sql`SELECT v.library_id, v.version, ${RunLocks.listedState(sql)} AS state, v.error_category, v.snippet_count,
                  v.token_count, v.last_update
                FROM docs.versions v ORDER BY v.library_id, v.created_at`
        })()
        return libraries.map((library): LibraryListing => ({
          id: library.id,
          title: library.title,
          source: library.source_location,
          defaultVersion: library.default_version,
          rules: library.rules,
          versions: versions.filter((version) => version.library_id === library.id).map((version) => ({
            version: version.version,
            state: version.state,
            errorCategory: version.error_category,
            snippets: version.snippet_count,
            tokens: version.token_count,
            lastUpdate: version.last_update
          }))
        }))
      })

      const isEmpty = SqlSchema.findOne({
        Request: Schema.Void,
        Result: Count,
        execute: () => sql`SELECT count(*)::int AS count FROM docs.libraries`
      })().pipe(Effect.map(({ count }) => count === 0))

      // A promote settles every add's intent for the library: the version promoted now is the default
      // the last add asked for (an older killed add's version must not take over when resumed later).
      const promote = (source: SourceRecord) =>
        sql`WITH cleared AS (
              UPDATE docs.versions SET pending_default = false WHERE library_id = ${source.libraryId} AND pending_default
            )
            UPDATE docs.libraries SET default_version = ${source.version}, title = ${source.title},
              description = ${source.description}, source_kind = ${source.kind}, source_location = ${source.location},
              rules = ${JSON.stringify(source.rules ?? [])}::jsonb, updated_at = now()
            WHERE id = ${source.libraryId}`.pipe(Effect.asVoid)

      return IndexStore.of({
        promote: (source) => atDatabaseBoundary(promote(source)),
        register: (source, state, options) => atDatabaseBoundary(register(source, state, options)),
        claim: (source, options) => atDatabaseBoundary(claim(source, options)),
        enqueue: (sources) => atDatabaseBoundary(enqueue(sources)),
        library: (id) => atDatabaseBoundary(library(id)),
        startIndexing: (id, version, options) => atDatabaseBoundary(startIndexing(id, version, options)),
        write: (versionId, snippets) => atDatabaseBoundary(write(versionId, snippets)),
        requeue,
        markFailed: (versionId, category) => atDatabaseBoundary(markFailed(versionId, category)),
        unfinished: atDatabaseBoundary(unfinished),
        remove: (id, version) => atDatabaseBoundary(remove(id, version)),
        list: atDatabaseBoundary(list),
        isEmpty: atDatabaseBoundary(isEmpty)
      })
    })
  )

  /**
   * In memory (tests only), the same behaviour as {@link layer} as far as the contract suite
   * (test/contracts/IndexStore.ts) tells; shares its index with `Search.layerMemory` in one build.
   */
  static readonly layerMemory = Layer.effect(
    IndexStore,
    Effect.gen(function*() {
      const index = yield* MemoryIndex

      const updateVersion = (versionId: string, f: (version: MemoryVersion) => MemoryVersion) =>
        Ref.update(index, (state) => ({
          ...state,
          versions: state.versions.map((version) => version.id === versionId ? f(version) : version)
        }))

      /** A library's row as a source describes it, its default that source's version (trust aside). */
      const fromSource = (source: SourceRecord) => ({
        id: source.libraryId,
        title: source.title,
        description: source.description,
        kind: source.kind,
        location: source.location,
        defaultVersion: source.version,
        rules: source.rules ?? []
      })

      const registerIn = (
        state: MemoryIndexState,
        source: SourceRecord,
        versionState: "queued" | "indexing",
        options: RegisterOptions
      ): [string, MemoryIndexState] => {
        const existing = state.libraries.get(source.libraryId)
        const libraries = new Map(state.libraries)
        libraries.set(source.libraryId, {
          ...(existing === undefined || options.makeDefault ? fromSource(source) : existing),
          trustScore: options.trust ?? existing?.trustScore ?? DEFAULT_TRUST_SCORE
        })
        const version = state.versions.find((v) => v.libraryId === source.libraryId && v.version === source.version)
        if (version !== undefined) {
          const next = versionState === "queued" && version.state === "indexing" ? "indexing" : versionState
          return [version.id, {
            ...state,
            libraries,
            versions: state.versions.map((v) =>
              v === version
                ? {
                  ...v,
                  state: next,
                  errorCategory: null,
                  location: source.location,
                  pendingDefault: v.pendingDefault === true || options.defaultWhenReady === true,
                  confined: options.confined === true
                }
                : v
            )
          }]
        }
        const id = String(state.nextId)
        const created: MemoryVersion = {
          id,
          libraryId: source.libraryId,
          version: source.version,
          state: versionState,
          errorCategory: null,
          live: null,
          snippetCount: 0,
          tokenCount: 0,
          lastUpdate: null,
          location: source.location,
          pendingDefault: options.defaultWhenReady === true,
          confined: options.confined === true
        }
        return [id, { ...state, libraries, versions: [...state.versions, created], nextId: state.nextId + 1 }]
      }

      const register = (
        source: SourceRecord,
        state: "queued" | "indexing",
        options: RegisterOptions
      ) => Ref.modify(index, (current) => registerIn(current, source, state, options))

      const enqueue = (sources: ReadonlyArray<SourceRecord>) =>
        Ref.update(index, (current) =>
          sources.reduce((state, source) => registerIn(state, source, "queued", { makeDefault: true })[1], current))

      const library = (id: string) =>
        Effect.map(Ref.get(index), (state) =>
          Option.map(Option.fromNullishOr(state.libraries.get(id)), (found): StoredLibrary => ({
            location: found.location,
            defaultVersion: found.defaultVersion
          })))

      /**
       * The memory form of a run lock: the version's `running` flag, set with the state in one update and
       * cleared when the scope closes; a version already running is `VersionBusy` (of this process).
       */
      const runFor = <A>(
        libraryId: string,
        start: (state: MemoryIndexState) => readonly [A, MemoryIndexState, string | undefined] | "running"
      ) =>
        Effect.uninterruptible(Effect.gen(function*() {
          const scope = yield* Effect.scope
          const started = yield* Ref.modify(index, (state): [readonly [A, string | undefined] | "running", MemoryIndexState] => {
            const outcome = start(state)
            if (outcome === "running") return ["running", state]
            const [result, next, versionId] = outcome
            return [[result, versionId], {
              ...next,
              versions: next.versions.map((v) => v.id === versionId ? { ...v, running: true } : v)
            }]
          })
          if (started === "running") return yield* versionBusy(libraryId, `this process, pid ${process.pid}`, undefined)
          const [result, versionId] = started
          if (versionId !== undefined) yield* Scope.addFinalizer(scope, updateVersion(versionId, (v) => ({ ...v, running: false })))
          return result
        }))

      const findVersion = (state: MemoryIndexState, id: string, version: string) =>
        state.versions.find((v) => v.libraryId === id && v.version === version)

      const claim = (source: SourceRecord, options: RegisterOptions) =>
        runFor(`${source.libraryId}/${source.version}`, (state) => {
          if (findVersion(state, source.libraryId, source.version)?.running === true) return "running"
          const [versionId, next] = registerIn(state, source, "indexing", options)
          return [versionId, next, versionId] as const
        })

      const startIndexing = (id: string, version: string, options: StartOptions = {}) =>
        runFor(`${id}/${version}`, (state) => {
          const found = findVersion(state, id, version)
          if (found === undefined || (options.unfinishedOnly === true && found.state !== "queued" && found.state !== "indexing")) {
            return [Option.none<StartedVersion>(), state, undefined] as const
          }
          if (found.running === true) return "running"
          const started: StartedVersion = {
            versionId: found.id,
            location: found.location,
            defaultWhenReady: found.pendingDefault === true,
            confined: found.confined === true
          }
          return [Option.some(started), {
            ...state,
            versions: state.versions.map((v) => v === found ? { ...v, state: "indexing" as const, errorCategory: null } : v)
          }, found.id] as const
        })

      const write = Effect.fnUntraced(function*(versionId: string, snippets: ReadonlyArray<Snippet>) {
        const now = new Date(yield* Clock.currentTimeMillis)
        const tokens = snippets.reduce((sum, snippet) => sum + snippet.tokens, 0)
        const written = yield* Ref.modify(index, (state): [boolean, MemoryIndexState] => {
          if (!state.versions.some((v) => v.id === versionId)) return [false, state]
          return [true, {
            ...state,
            versions: state.versions.map((v) =>
              v.id === versionId
                ? { ...v, live: [...snippets], state: "ready", errorCategory: null, snippetCount: snippets.length, tokenCount: tokens, lastUpdate: now }
                : v
            )
          }]
        })
        // Postgres: the new generation's foreign key to the (removed) version fails, a defect.
        if (!written) return yield* Effect.die(new Error(`IndexStore.write: no version ${versionId}`))
        return tokens
      })

      const requeue = (versionId: string, options: { readonly withdrawDefault?: boolean } = {}) =>
        updateVersion(versionId, (v) => ({
          ...v,
          state: v.state === "indexing" ? "queued" : v.state,
          pendingDefault: v.pendingDefault === true && options.withdrawDefault !== true
        }))

      const markFailed = (versionId: string, category: ErrorCategory) =>
        updateVersion(versionId, (v) => v.state === "indexing" ? { ...v, state: "failed", errorCategory: category } : v)

      const unfinished = Effect.map(Ref.get(index), (state) =>
        state.versions.flatMap((v): Array<UnfinishedVersion> => {
          const listed = listedVersionState(v)
          return listed === "queued" || listed === "indexing"
            ? [{ libraryId: `${v.libraryId}/${v.version}`, version: v.version, state: listed }]
            : []
        }))

      const remove = (id: string, version: string | undefined) =>
        Ref.modify(index, (state): [boolean, MemoryIndexState] => {
          if (version === undefined) {
            if (!state.libraries.has(id)) return [false, state]
            const libraries = new Map(state.libraries)
            libraries.delete(id)
            return [true, { ...state, libraries, versions: state.versions.filter((v) => v.libraryId !== id) }]
          }
          const kept = state.versions.filter((v) => !(v.libraryId === id && v.version === version))
          if (kept.length === state.versions.length) return [false, state]
          const library = state.libraries.get(id)!
          const remaining = kept.filter((v) => v.libraryId === id)
          const libraries = new Map(state.libraries)
          if (remaining.length === 0) libraries.delete(id)
          else if (library.defaultVersion === version) {
            const newest = [...remaining].reverse()
            const next = newest.find((v) => v.state === "ready") ?? newest[0]!
            libraries.set(id, { ...library, defaultVersion: next.version })
          }
          return [true, { ...state, libraries, versions: kept }]
        })

      const list = Effect.map(Ref.get(index), (state) =>
        [...state.libraries.values()].sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0).map((found): LibraryListing => ({
          id: found.id,
          title: found.title,
          source: found.location,
          defaultVersion: found.defaultVersion,
          rules: found.rules ?? [],
          versions: state.versions.filter((v) => v.libraryId === found.id).map((v) => ({
            version: v.version,
            state: listedVersionState(v),
            errorCategory: v.errorCategory,
            snippets: v.snippetCount,
            tokens: v.tokenCount,
            lastUpdate: v.lastUpdate
          }))
        })))

      const isEmpty = Effect.map(Ref.get(index), (state) => state.libraries.size === 0)

      const promote = (source: SourceRecord) =>
        Ref.update(index, (state) => {
          const found = state.libraries.get(source.libraryId)
          if (found === undefined) return state
          const libraries = new Map(state.libraries)
          libraries.set(source.libraryId, { ...fromSource(source), trustScore: found.trustScore })
          const versions = state.versions.map((v) => v.libraryId === source.libraryId && v.pendingDefault === true ? { ...v, pendingDefault: false } : v)
          return { ...state, libraries, versions }
        })

      return IndexStore.of({
        register,
        claim,
        enqueue,
        library,
        startIndexing,
        write,
        requeue,
        markFailed,
        unfinished,
        remove,
        list,
        isEmpty,
        promote
      })
    })
  ).pipe(Layer.provide(MemoryIndex.layer))
}
