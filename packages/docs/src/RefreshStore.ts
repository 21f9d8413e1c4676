/**
 * `RefreshStore`: what the scheduled refresh (Refresher.ts) keeps in the database.
 *
 * - **The claim** (`docs.refresher`, one row): a pass over the git and npm libraries is due every
 *   `DOCS_REFRESH_INTERVAL`; `claim` gives it to one process only, however many docs-api processes
 *   share the database: the one whose conditional update moves `next_run` on. It holds a lease it
 *   renews while it works; a process that dies leaves a lease that expires, and the next due pass
 *   goes to whoever claims it then.
 * - **Revisions** (`docs.refresh_revisions`): the commit or package version each library was last
 *   read at, so a pass re-indexes only what changed.
 */
import { atDatabaseBoundary } from "@svc/platform"
import { Clock, Context, Duration, Effect, Layer, Option, Ref, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { MemoryIndex } from "./MemoryIndex.ts"

/** A library a pass looks at: a git or npm source, its stored location and default version. */
export interface RefreshableLibrary {
  readonly id: string
  readonly kind: "git" | "npm"
  readonly location: string
  readonly defaultVersion: string
}

const HolderRow = Schema.Struct({ holder: Schema.String })
const LibraryRow = Schema.Struct({
  id: Schema.String,
  source_kind: Schema.Literals(["git", "npm"]),
  source_location: Schema.String,
  default_version: Schema.String
})
const RevisionRow = Schema.Struct({ revision: Schema.String })

const millis = (duration: Duration.Duration) => Duration.toMillis(duration)

export class RefreshStore extends Context.Service<RefreshStore, {
  /**
   * Takes the pass for `holder` if it is due (first time, or `interval` after the last claim) and no
   * live lease holds it; the lease lasts `lease`. True when this holder got it.
   */
  readonly claim: (holder: string, options: { readonly interval: Duration.Duration; readonly lease: Duration.Duration }) => Effect.Effect<boolean>
  /** Extends the holder's lease by `lease` from now; false when it is not the holder any more. */
  readonly renew: (holder: string, lease: Duration.Duration) => Effect.Effect<boolean>
  /** Ends the holder's lease (the next pass is still due at its time). */
  readonly release: (holder: string) => Effect.Effect<void>
  /** The git and npm libraries, by id. */
  readonly libraries: Effect.Effect<ReadonlyArray<RefreshableLibrary>>
  /** The revision a library was last read at, if known. */
  readonly revision: (libraryId: string) => Effect.Effect<Option.Option<string>>
  /** Records the revision a library was read at (or checked to be at). */
  readonly setRevision: (libraryId: string, revision: string) => Effect.Effect<void>
}>()("@svc/docs/RefreshStore") {
  /** On Postgres (the `docs` schema migrated, 0005). */
  static readonly layer = Layer.effect(
    RefreshStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const claim = (holder: string, options: { readonly interval: Duration.Duration; readonly lease: Duration.Duration }) =>
        SqlSchema.findAll({
          Request: Schema.Void,
          Result: HolderRow,
          execute: () =>
            sql`
              INSERT INTO docs.refresher AS r (id, holder, lease_until, next_run)
              VALUES (1, ${holder}, now() + ${millis(options.lease)} * interval '1 millisecond',
                now() + ${millis(options.interval)} * interval '1 millisecond')
              ON CONFLICT (id) DO UPDATE SET
                holder = excluded.holder, lease_until = excluded.lease_until, next_run = excluded.next_run
              WHERE r.next_run <= now() AND (r.lease_until IS NULL OR r.lease_until < now())
              RETURNING holder`
        })().pipe(Effect.map((rows) => rows.length === 1))

      const renew = (holder: string, lease: Duration.Duration) =>
        SqlSchema.findAll({
          Request: Schema.Void,
          Result: HolderRow,
          execute: () =>
            sql`
              UPDATE docs.refresher SET lease_until = now() + ${millis(lease)} * interval '1 millisecond'
              WHERE id = 1 AND holder = ${holder} AND lease_until IS NOT NULL RETURNING holder`
        })().pipe(Effect.map((rows) => rows.length === 1))

      const release = (holder: string) => sql`UPDATE docs.refresher SET lease_until = NULL WHERE id = 1 AND holder = ${holder}`.pipe(Effect.asVoid)

      const libraries = SqlSchema.findAll({
        Request: Schema.Void,
        Result: LibraryRow,
        execute: () =>
          sql`SELECT id, source_kind, source_location, default_version FROM docs.libraries
              WHERE source_kind IN ('git', 'npm') ORDER BY id`
      })().pipe(Effect.map((rows) =>
        rows.map((row): RefreshableLibrary => ({ id: row.id, kind: row.source_kind, location: row.source_location, defaultVersion: row.default_version }))
      ))

      const revision = (libraryId: string) =>
        SqlSchema.findOneOption({
          Request: Schema.Void,
          Result: RevisionRow,
          execute: () => sql`SELECT revision FROM docs.refresh_revisions WHERE library_id = ${libraryId}`
        })().pipe(Effect.map(Option.map((row) => row.revision)))

      // A library removed meanwhile has no row to refer to: nothing to record then.
      const setRevision = (libraryId: string, value: string) =>
        sql`
          INSERT INTO docs.refresh_revisions (library_id, revision)
          SELECT id, ${value} FROM docs.libraries WHERE id = ${libraryId}
          ON CONFLICT (library_id) DO UPDATE SET revision = excluded.revision, checked_at = now()`.pipe(Effect.asVoid)

      return RefreshStore.of({
        claim: (holder, options) => atDatabaseBoundary(claim(holder, options)),
        renew: (holder, lease) => atDatabaseBoundary(renew(holder, lease)),
        release: (holder) => atDatabaseBoundary(release(holder)),
        libraries: atDatabaseBoundary(libraries),
        revision: (libraryId) => atDatabaseBoundary(revision(libraryId)),
        setRevision: (libraryId, value) => atDatabaseBoundary(setRevision(libraryId, value))
      })
    })
  )

  /** In memory (tests only): the claim in a `Ref` on the `Clock`, the libraries of the memory index. */
  static readonly layerMemory = Layer.effect(
    RefreshStore,
    Effect.gen(function*() {
      const index = yield* MemoryIndex
      const claimRef = yield* Ref.make<{ readonly holder: string; readonly leaseUntil: number | null; readonly nextRun: number } | null>(null)
      const revisions = yield* Ref.make(new Map<string, string>())

      const claim = (holder: string, options: { readonly interval: Duration.Duration; readonly lease: Duration.Duration }) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Ref.modify(claimRef, (current) => {
            const free = current === null || (current.nextRun <= now && (current.leaseUntil === null || current.leaseUntil < now))
            return free
              ? [true, { holder, leaseUntil: now + millis(options.lease), nextRun: now + millis(options.interval) }]
              : [false, current]
          }))

      const renew = (holder: string, lease: Duration.Duration) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Ref.modify(claimRef, (current) =>
            current !== null && current.holder === holder && current.leaseUntil !== null
              ? [true, { ...current, leaseUntil: now + millis(lease) }]
              : [false, current]))

      const release = (holder: string) =>
        Ref.update(claimRef, (current) => current !== null && current.holder === holder ? { ...current, leaseUntil: null } : current)

      const libraries = Effect.map(Ref.get(index), (state) =>
        [...state.libraries.values()]
          .filter((library) => library.kind === "git" || library.kind === "npm")
          .sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
          .map((library): RefreshableLibrary => ({
            id: library.id,
            kind: library.kind as "git" | "npm",
            location: library.location,
            defaultVersion: library.defaultVersion
          })))

      const revision = (libraryId: string) => Effect.map(Ref.get(revisions), (map) => Option.fromNullishOr(map.get(libraryId)))

      const setRevision = (libraryId: string, value: string) =>
        Effect.flatMap(Ref.get(index), (state) =>
          state.libraries.has(libraryId) ? Ref.update(revisions, (map) => new Map(map).set(libraryId, value)) : Effect.void)

      return RefreshStore.of({ claim, renew, release, libraries, revision, setRevision })
    })
  ).pipe(Layer.provide(MemoryIndex.layer))
}
