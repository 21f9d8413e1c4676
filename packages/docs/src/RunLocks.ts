/**
 * Run locks: how a run of a version (an add, a refresh, a resume) tells every other process that it
 * is alive, and how a run whose process died is told from one still going.
 *
 * Each run holds a Postgres **session-level advisory lock** keyed by its version's row id,
 * `pg_try_advisory_lock(RUN_LOCK_NAMESPACE, id)`, for as long as it runs. The locks of a process are
 * held by one connection of its own (the *lock session*, outside the pool: a pool would hand the
 * session, lock and all, to the next statement, and a run holding a pooled connection each could take
 * the whole pool), opened when the process's first run starts and closed when its last one ends. A
 * process that is killed (SIGKILL, a crash, the OOM killer) loses its connection, and Postgres drops
 * its locks with it: a version in state `indexing` whose lock is free is a run that died. Such a
 * version is listed as `queued` (it waits for a process to take it up, as an interrupted run does) —
 * {@link listedState} — and a docs-api takes it up within `DOCS_RESUME_INTERVAL`
 * (DefaultLibraries.ts). Taking a lock never waits: a run whose version's lock is held elsewhere is
 * refused (`VersionBusy`, naming the holder), a resume leaves the version to the run that holds it.
 *
 * Within one process the lock session is shared, and Postgres lets a session take a lock it already
 * holds; so the process keeps its own set of the versions it runs, and a second run of one of them
 * in the same process is refused too.
 *
 * Caveats, also in the README: a lock session reaches Postgres directly (a transaction-mode pooler
 * such as PgBouncer's would lose session locks); a machine that vanishes (rather than a process that
 * dies) keeps its locks until Postgres notices the dead connection (its TCP keepalive settings); and
 * should the lock session itself break while runs go on, the process opens a new one and takes their
 * locks again — one taken meanwhile by another process's resume means two runs of the version, which
 * costs work, never a wrong answer (a re-index is atomic: IndexStore.ts).
 */
import { PgConnection } from "@effect/sql-pg"
import { Effect, Exit, type Redacted, Scope, Semaphore } from "effect"
import type { SqlClient, SqlError } from "effect/sql"
import * as os from "node:os"

/**
 * The first key of every docs version's run lock, `docs` in ASCII: other advisory locks of the
 * database (the migrations' `hashtext(...)` keys are one-key locks) never meet it.
 */
export const RUN_LOCK_NAMESPACE = 0x646f6373

/**
 * The second key: the version's row id (a `bigserial`; ids past 2^31 share a key with the id 2^31
 * below, which at worst makes one of two runs wait for the other's end).
 */
export const runLockKey = (versionId: string): number => Number(BigInt(versionId) % 2147483648n)

/**
 * The state a version is listed with (`svc docs list`, search, context's 202): its stored state,
 * except that `indexing` with no run lock held — its run's process died — is `queued`, waiting to be
 * taken up. The versions row must be in scope as `v` (a missing one, of an outer join, stays NULL).
 * Only an `indexing` row looks at the lock table.
 */
export const listedState = (sql: SqlClient.SqlClient) =>
  sql`CASE WHEN v.state IS DISTINCT FROM 'indexing' THEN v.state WHEN EXISTS (
      SELECT 1 FROM pg_catalog.pg_locks l
      WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
        AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = current_database())
        AND l.classid = ${RUN_LOCK_NAMESPACE}::oid AND l.objid = (v.id % 2147483648)::oid
    ) THEN 'indexing' ELSE 'queued' END`

/** The lock session's `application_name`, so that another process can name the holder. */
const APPLICATION_NAME = `svc-docs ${process.pid}@${os.hostname()}`.slice(0, 63)

/**
 * Who holds a version's run lock, in words (`process 4242 on build-1`), from the holder's session;
 * undefined when nobody does any more.
 */
export const describeHolder = (sql: SqlClient.SqlClient, versionId: string) =>
  Effect.map(
    sql<{ readonly application_name: string | null; readonly pid: number }>`
      SELECT a.application_name, l.pid FROM pg_catalog.pg_locks l
      LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
        AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = current_database())
        AND l.classid = ${RUN_LOCK_NAMESPACE}::oid AND l.objid = ${runLockKey(versionId)}::oid
      LIMIT 1`,
    (rows): string | undefined => {
      const row = rows[0]
      if (row === undefined) return undefined
      const named = /^svc-docs (\d+)@(.+)$/.exec(row.application_name ?? "")
      return named === null ? `database session ${row.pid}` : `process ${named[1]} on ${named[2]}`
    }
  )

/** What {@link RunLocks.take} found. */
export type Taken = "taken" | "held here" | "held elsewhere"

export interface RunLocks {
  /**
   * Takes a version's run lock for this process, without waiting: `held here` when a run of this
   * process holds it, `held elsewhere` when another process's does. Uninterruptible (a lock taken
   * is always recorded, to be released).
   */
  readonly take: (versionId: string) => Effect.Effect<Taken, SqlError.SqlError>
  /** Releases it (closing the lock session when it was the process's last). Never fails. */
  readonly release: (versionId: string) => Effect.Effect<void>
}

/** The run locks of this process, on lock sessions to `url`; the session is closed with the scope. */
export const make = Effect.fnUntraced(function*(url: Redacted.Redacted<string>) {
  const mutex = yield* Semaphore.make(1)
  const held = new Set<string>()
  let session: { readonly connection: PgConnection.PgConnection; readonly scope: Scope.Closeable } | undefined

  const TRY = "SELECT pg_try_advisory_lock($1, $2) AS locked"
  const tryLock = (connection: PgConnection.PgConnection, versionId: string) =>
    Effect.map(connection.query(TRY, [RUN_LOCK_NAMESPACE, runLockKey(versionId)]), (result) => result.rows[0]?.["locked"] === true)

  const close = Effect.suspend(() => {
    const open = session
    session = undefined
    return open === undefined ? Effect.void : Scope.close(open.scope, Exit.void)
  })

  const open = Effect.gen(function*() {
    if (session !== undefined) return session.connection
    const scope = yield* Scope.make()
    const connection = yield* PgConnection.make({ url, applicationName: APPLICATION_NAME, keepAlive: "1 minute" }).pipe(
      Scope.provide(scope),
      Effect.onError(() => Scope.close(scope, Exit.void))
    )
    session = { connection, scope }
    // A session opened while runs hold locks: the previous one broke, and their locks went with it.
    for (const versionId of held) {
      if (!(yield* tryLock(connection, versionId))) {
        yield* Effect.logWarning(
          `Docs run lock of version ${versionId} was lost with its database session and taken by another process: two runs of it go on (the later switch wins)`
        )
      }
    }
    return connection
  })

  // A statement that fails leaves the session in doubt: it is closed, the next use opens another.
  const onSession = <A>(use: (connection: PgConnection.PgConnection) => Effect.Effect<A, SqlError.SqlError>) =>
    Effect.flatMap(open, use).pipe(Effect.tapError(() => close))

  yield* Effect.addFinalizer(() => mutex.withPermit(close))

  const take = (versionId: string) =>
    mutex.withPermit(Effect.gen(function*() {
      if (held.has(versionId)) return "held here" as const
      const locked = yield* onSession((connection) => tryLock(connection, versionId))
      if (!locked) {
        if (held.size === 0) yield* close
        return "held elsewhere" as const
      }
      held.add(versionId)
      return "taken" as const
    })).pipe(Effect.uninterruptible)

  // Unlocked before the session closes: a closed session's locks go only once its backend has ended,
  // a moment later, and until then another process would find the version still held.
  const release = (versionId: string) =>
    mutex.withPermit(Effect.gen(function*() {
      if (!held.delete(versionId)) return
      // no session: it broke, and the lock went with it
      const open = session
      if (open === undefined) return
      yield* open.connection.query("SELECT pg_advisory_unlock($1, $2)", [RUN_LOCK_NAMESPACE, runLockKey(versionId)]).pipe(
        Effect.catch(() => close)
      )
      if (held.size === 0) yield* close
    })).pipe(Effect.uninterruptible)

  return { take, release } satisfies RunLocks
})
