/**
 * Local S3-compatible object storage for development and tests.
 *
 * The real thing is Ceph radosgw on a throwaway one-node cluster, started by
 * `scripts/object-storage.sh` (real SigV4, presigned URLs, conditional writes, multipart, CORS, STS).
 * Without radosgw on the machine it falls back to `s3rver`, in a process of its own (restarted if it
 * ends), with a loud warning: s3rver does not verify SigV4 signatures and ignores conditional-write
 * headers, so nothing that depends on those may be tested against it.
 *
 * - `LocalObjectStorage.layer`: starts an instance in `OBJECT_STORAGE_DIR` (default `.data/object-storage`)
 *   for the lifetime of the layer and stops it on release.
 * - `LocalObjectStorage.layerExternal(info)`: connects to an instance started elsewhere (the vitest
 *   globalSetup starts one per test run, see `testing/objectStorageGlobalSetup.ts`).
 * - `startObjectStorage(...)`: the scoped start used by both.
 *
 * @module
 */
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3"
import { NodeServices } from "@effect/platform-node"
import { Config, Context, Effect, Layer, Option, Redacted, Schedule, Schema, Stream } from "effect"
import type { PlatformError, Scope } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import * as NodeChildProcess from "node:child_process"
import { accessSync, constants as fsConstants } from "node:fs"
import * as NodePath from "node:path"
import { fileURLToPath } from "node:url"
import { makeDirectory } from "./Directory.ts"
import { DatabaseUrl, EmbeddedPostgresDir, ObjectStorageBackendSetting, ObjectStorageDir } from "./Settings.ts"

/** Which server answers: the real radosgw, or the s3rver fallback (no signatures, no conditional writes). */
export type ObjectStorageBackend = "radosgw" | "s3rver"

/** Any failure to start, stop or talk to local object storage. The message never carries a secret. */
export class ObjectStorageError extends Schema.TaggedError<ObjectStorageError>()("ObjectStorageError", {
  message: Schema.String
}) {}

/** Plain connection facts of a running instance (serializable: vitest's `provide` carries it to workers). */
export interface ObjectStorageInfo {
  readonly endpoint: string
  readonly region: string
  readonly accessKeyId: string
  readonly secretAccessKey: string
  readonly backend: ObjectStorageBackend
  /** the instance's directory (endpoint.json, run/*.pid, log/ for radosgw; s3rver/ for the fallback) */
  readonly dir: string
}

/** `scripts/object-storage.sh`, located from this file so it works from any working directory. */
export const objectStorageScriptPath: string = fileURLToPath(
  new URL("../../../scripts/object-storage.sh", import.meta.url)
)

/** Upper bounds, on top of the script's own per-step timeouts. */
const START_TIMEOUT = "240 seconds"
const STOP_TIMEOUT = "60 seconds"

const S3RVER_ACCESS_KEY = "S3RVER" // the only key pair s3rver knows
const s3rverWarning = (reason: string) =>
  `WARNING: local object storage is s3rver (${reason}), not radosgw. ` +
  "s3rver does NOT verify SigV4 signatures (header or presigned), and its conditional writes " +
  "(If-None-Match / If-Match) are the suite's own emulation: anything relying on them is untested against S3 here. " +
  "Install the real thing with `sudo bash scripts/install-object-storage.sh`."

// --- the script ---------------------------------------------------------------------------------------

export interface ObjectStorageScriptResult {
  readonly exitCode: number
  readonly stdout: string
  readonly stderr: string
}

const collect = <E>(stream: Stream.Stream<Uint8Array, E>) => stream.pipe(Stream.decodeText(), Stream.mkString)

const lastLines = (text: string, n: number) =>
  text.split("\n").map((line) => line.trimEnd()).filter((line) => line.length > 0).slice(-n).join("\n")

/**
 * Runs `scripts/object-storage.sh <command> <dir>` and collects its output. A non-zero exit is not an
 * error here (`status` answers 1 for "not running"); failing to run the script at all is. Options:
 * `ownerPid` makes a started instance stop itself once that process is gone (default: this process).
 */
export const runObjectStorageScript = Effect.fnUntraced(function*(
  command: "start" | "stop" | "status",
  dir: string,
  options?: { readonly ownerPid?: number | undefined; readonly env?: Record<string, string> | undefined }
) {
  const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
  return yield* Effect.scoped(Effect.gen(function*() {
    const handle = yield* spawner.spawn(ChildProcess.make("bash", [objectStorageScriptPath, command, dir], {
      env: { ...options?.env, OBJECT_STORAGE_OWNER_PID: String(options?.ownerPid ?? process.pid) },
      extendEnv: true,
      stdin: "ignore"
    }))
    const [stdout, stderr, exitCode] = yield* Effect.all(
      [collect(handle.stdout), collect(handle.stderr), handle.exitCode],
      { concurrency: "unbounded" }
    )
    return { exitCode: Number(exitCode), stdout, stderr } satisfies ObjectStorageScriptResult
  })).pipe(
    Effect.mapError((error) => scriptFailure(command, error))
  )
})

/**
 * The script's failure in words. A signal that cut it short (a second Ctrl-C during shutdown) is named:
 * the platform error's own message says only "Unknown: ChildProcess.exitCode", its cause says which.
 */
export const scriptFailure = (command: string, error: PlatformError.PlatformError): ObjectStorageError =>
  new ObjectStorageError({
    message: `object-storage.sh ${command} did not finish: ${
      error.reason.cause instanceof Error ? error.reason.cause.message : error.message
    }`
  })

const EndpointJson = Schema.fromJsonString(Schema.Struct({
  endpoint: Schema.String,
  region: Schema.String,
  accessKeyId: Schema.String,
  secretAccessKey: Schema.String
}))

const stopRadosgw = (dir: string) =>
  runObjectStorageScript("stop", dir).pipe(
    Effect.flatMap((result) =>
      result.exitCode === 0 ? Effect.void : Effect.logWarning(
        `object-storage.sh stop ${dir} exited with ${result.exitCode}\n${lastLines(result.stderr, 20)}`
      )
    ),
    Effect.timeoutOrElse({
      duration: STOP_TIMEOUT,
      orElse: () => Effect.logWarning(`object-storage.sh stop ${dir} timed out`)
    }),
    Effect.catch((error) => Effect.logWarning(error.message))
  )

/** `object-storage.sh start`'s exit code for an instance another live process started: shared, not ours to stop. */
const SHARED = 10

const startRadosgw = (dir: string): Effect.Effect<
  ObjectStorageInfo,
  ObjectStorageError,
  ChildProcessSpawner.ChildProcessSpawner | Scope.Scope
> =>
  Effect.map(Effect.acquireRelease(
    Effect.gen(function*() {
      const result = yield* runObjectStorageScript("start", dir).pipe(
        Effect.timeoutOrElse({
          duration: START_TIMEOUT,
          orElse: () => Effect.fail(new ObjectStorageError({ message: `object-storage.sh start ${dir} timed out` }))
        }),
        // the script cleans up after its own failures; this covers a timeout or an interruption
        Effect.onError(() => stopRadosgw(dir))
      )
      yield* Effect.logDebug(`object-storage.sh start ${dir}:\n${result.stderr}`)
      const owned = result.exitCode !== SHARED
      if (!owned) yield* Effect.logInfo(`Local object storage in ${dir} is shared with the process that started it`)
      if (owned && result.exitCode !== 0) {
        // one line, as every failure of `svc` is: the script's own reason when it gave one (it ends
        // with what to do), else its last words; the whole of its output is in the debug log above
        const reason = lastLines(result.stderr, 40).split("\n").reverse()
          .map((line) => /\berror: (.*)$/.exec(line)?.[1]).find((found) => found !== undefined)
        return yield* new ObjectStorageError({
          message: reason === undefined
            ? `object-storage.sh start ${dir} (OBJECT_STORAGE_DIR) failed (exit ${result.exitCode}): ${lastLines(result.stderr, 3).replaceAll("\n", " | ")}`
            : `The local object storage in ${dir} could not start: ${reason}`
        })
      }
      const lastLine = result.stdout.trim().split("\n").pop() ?? ""
      // never put the decode error or the line itself in the message: it holds the secret
      const parsed = yield* Schema.decodeUnknownEffect(EndpointJson)(lastLine).pipe(
        Effect.mapError(() =>
          new ObjectStorageError({ message: `object-storage.sh start ${dir} printed no endpoint JSON on its last line` })
        ),
        // an instance this process started and cannot use is stopped; a shared one is not ours to stop
        Effect.onError(() => owned ? stopRadosgw(dir) : Effect.void)
      )
      return { info: { ...parsed, backend: "radosgw" as const, dir }, owned }
    }),
    // a shared instance lives as long as the process that started it (its watchdog stops it)
    ({ owned }) => owned ? stopRadosgw(dir) : Effect.void
  ), ({ info }) => info)

// --- the s3rver fallback --------------------------------------------------------------------------------

/** The fallback's own process (`s3rverChild.ts`). */
const s3rverChildPath = fileURLToPath(new URL("./s3rverChild.ts", import.meta.url))

/**
 * An s3rver process on `port` (0: any free one) keeping its buckets in `directory`, once it listens; it
 * is killed if the wait is interrupted. `exited` resolves with how it ended, in words.
 */
const spawnS3rver = (directory: string, port: number) =>
  Effect.callback<{ readonly child: NodeChildProcess.ChildProcess; readonly port: number; readonly exited: Promise<string> }, ObjectStorageError>(
    (resume) => {
      const child = NodeChildProcess.fork(s3rverChildPath, [directory, String(port)], {
        stdio: ["ignore", "ignore", "pipe", "ipc"],
        execArgv: []
      })
      let stderr = ""
      child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr = (stderr + chunk).slice(-4_000)))
      const exited = new Promise<string>((resolve) =>
        child.once("exit", (code, signal) => {
          const how = signal === null ? `exit code ${code}` : `signal ${signal}`
          // node prints an uncaught error's stack around it: its "Error: ..." line says what happened
          const lines = stderr.split("\n").map((line) => line.trim())
          const said = lines.find((line) => /^[A-Za-z]*Error\b/.test(line)) ?? lastLines(stderr, 1)
          resolve(said === "" ? how : `${how}: ${said}`)
        })
      )
      child.once("message", (message) => resume(Effect.succeed({ child, port: (message as { readonly port: number }).port, exited })))
      void exited.then((how) => resume(Effect.fail(new ObjectStorageError({ message: `could not start s3rver (${how})` }))))
      return Effect.sync(() => void child.kill("SIGKILL"))
    }
  )

/** Stops an s3rver process: SIGTERM, then SIGKILL after 5 s. */
const stopS3rver = (child: NodeChildProcess.ChildProcess, exited: Promise<string>) =>
  Effect.promise(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill("SIGTERM")
    const timer = setTimeout(() => child.kill("SIGKILL"), 5_000)
    await exited
    clearTimeout(timer)
  })

/**
 * s3rver in a process of its own for the lifetime of the scope, started again on the same port (so the
 * endpoint handed out stays right; its buckets are files in `dir`) whenever it ends: s3rver leaves some
 * stream errors unhandled, and one request could end the process it runs in (`s3rverChild.ts`).
 */
const startS3rver = (dir: string, reason: string): Effect.Effect<ObjectStorageInfo, ObjectStorageError, Scope.Scope> =>
  Effect.gen(function*() {
    const directory = NodePath.join(dir, "s3rver")
    yield* Effect.tryPromise({
      try: () => makeDirectory(directory),
      catch: (error) => new ObjectStorageError({ message: `could not start s3rver: ${describeError(error)}` })
    })
    let current = yield* spawnS3rver(directory, 0)
    const port = current.port
    yield* Effect.addFinalizer(() => Effect.suspend(() => stopS3rver(current.child, current.exited)))
    yield* Effect.gen(function*() {
      while (true) {
        const how = yield* Effect.promise(() => current.exited)
        yield* Effect.logWarning(`local object storage (s3rver) ended (${how}); starting it again on 127.0.0.1:${port}`)
        current = yield* spawnS3rver(directory, port).pipe(
          Effect.tapError((error) => Effect.logWarning(`local object storage (s3rver): ${error.message}; trying again`)),
          Effect.retry(Schedule.min([Schedule.exponential("200 millis"), Schedule.spaced("10 seconds")]))
        )
      }
    }).pipe(Effect.forkScoped)
    yield* Effect.logWarning(`${s3rverWarning(reason)} Listening on 127.0.0.1:${port}.`)
    return {
      endpoint: `http://127.0.0.1:${port}`,
      region: "us-east-1",
      accessKeyId: S3RVER_ACCESS_KEY,
      secretAccessKey: S3RVER_ACCESS_KEY,
      backend: "s3rver",
      dir
    }
  })

// --- start ----------------------------------------------------------------------------------------------

const onPath = (command: string): boolean =>
  (process.env["PATH"] ?? "").split(NodePath.delimiter).some((entry) => {
    if (entry === "") return false
    try {
      accessSync(NodePath.join(entry, command), fsConstants.X_OK)
      return true
    } catch {
      return false
    }
  })

/** Whether this machine can run the real thing (radosgw and the two Ceph daemons are installed). */
export const radosgwInstalled = (): boolean => ["radosgw", "ceph-mon", "ceph-osd"].every(onPath)

/**
 * Starts local object storage in `dir` for the lifetime of the scope. `backend`: `"auto"` (radosgw when
 * installed, else s3rver with a warning), `"radosgw"` (fail if it is missing) or `"s3rver"`.
 */
/**
 * Refuses an instance folder inside the embedded Postgres's data folder or around it: a start wipes
 * the instance folder's `log/` (Postgres's log folder too) and writes a Ceph cluster into it (an
 * outside sweep found both accepted silently).
 */
const apartFromPostgres = (dir: string) =>
  Effect.gen(function*() {
    if (Option.isSome(yield* DatabaseUrl)) return
    const postgres = NodePath.resolve(yield* EmbeddedPostgresDir)
    const within = (outer: string, inner: string) => {
      const relative = NodePath.relative(outer, inner)
      return !relative.startsWith("..") && !NodePath.isAbsolute(relative)
    }
    if (within(postgres, dir) || within(dir, postgres)) {
      return yield* new ObjectStorageError({
        message: `the object storage folder ${dir} and the embedded Postgres's ${postgres} overlap: ` +
          "give OBJECT_STORAGE_DIR and EMBEDDED_POSTGRES_DIR folders apart"
      })
    }
  }).pipe(Effect.catchTag("ConfigError", (error) => Effect.fail(new ObjectStorageError({ message: error.message }))))

export const startObjectStorage = (options: {
  readonly dir: string
  readonly backend?: ObjectStorageBackend | "auto" | undefined
}): Effect.Effect<ObjectStorageInfo, ObjectStorageError, ChildProcessSpawner.ChildProcessSpawner | Scope.Scope> =>
  Effect.gen(function*() {
    const dir = NodePath.resolve(options.dir)
    yield* apartFromPostgres(dir)
    const wanted = options.backend ?? "auto"
    if (wanted === "s3rver") return yield* startS3rver(dir, "OBJECT_STORAGE_BACKEND=s3rver")
    if (!radosgwInstalled()) {
      if (wanted === "radosgw") {
        return yield* new ObjectStorageError({
          message: "OBJECT_STORAGE_BACKEND=radosgw but radosgw/ceph-mon/ceph-osd are not installed " +
            "(run scripts/install-object-storage.sh as root)"
        })
      }
      return yield* startS3rver(dir, "radosgw is not installed")
    }
    const info = yield* startRadosgw(dir)
    yield* Effect.logInfo(`local object storage (radosgw) at ${info.endpoint}`)
    return info
  })

// --- the service ----------------------------------------------------------------------------------------

const describeError = (error: unknown): string => {
  if (error instanceof Error) {
    const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode
    return `${error.name}${status === undefined ? "" : ` (HTTP ${status})`}: ${error.message}`
  }
  return String(error)
}

const makeService = (info: ObjectStorageInfo): Effect.Effect<LocalObjectStorage["Service"], never, Scope.Scope> =>
  Effect.gen(function*() {
    const client = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new S3Client({
          endpoint: info.endpoint,
          region: info.region,
          forcePathStyle: true,
          credentials: { accessKeyId: info.accessKeyId, secretAccessKey: info.secretAccessKey }
        })
      ),
      (client) => Effect.sync(() => client.destroy())
    )
    // radosgw answers 200 to a repeated create by the owner, AWS says BucketAlreadyOwnedByYou, and s3rver
    // BucketAlreadyExists (it has a single account, so every existing bucket is ours)
    const alreadyOurs = (error: unknown) =>
      error instanceof Error &&
      (error.name === "BucketAlreadyOwnedByYou" || (info.backend === "s3rver" && error.name === "BucketAlreadyExists"))
    const scrub = (text: string) => text.replaceAll(info.secretAccessKey, "<redacted>")
    const createBucket = Effect.fn("LocalObjectStorage.createBucket")(function*(name: string) {
      yield* Effect.tryPromise({
        try: (signal) => client.send(new CreateBucketCommand({ Bucket: name }), { abortSignal: signal }),
        catch: (error) => error
      }).pipe(
        Effect.catch((error) =>
          alreadyOurs(error)
            ? Effect.void
            : Effect.fail(new ObjectStorageError({ message: scrub(`createBucket ${name}: ${describeError(error)}`) }))
        )
      )
    })
    return LocalObjectStorage.of({
      endpoint: info.endpoint,
      region: info.region,
      accessKeyId: info.accessKeyId,
      secretAccessKey: Redacted.make(info.secretAccessKey),
      backend: info.backend,
      client,
      createBucket
    })
  })

export class LocalObjectStorage extends Context.Service<LocalObjectStorage, {
  readonly endpoint: string
  readonly region: string
  readonly accessKeyId: string
  readonly secretAccessKey: Redacted.Redacted<string>
  readonly backend: ObjectStorageBackend
  /** an S3 client for this endpoint (path-style addressing), destroyed with the layer */
  readonly client: S3Client
  /** creates a bucket; creating one this user already owns succeeds */
  createBucket(name: string): Effect.Effect<void, ObjectStorageError>
}>()("@svc/platform/LocalObjectStorage") {
  /**
   * Starts local object storage for the lifetime of the layer, in `OBJECT_STORAGE_DIR` (default
   * `.data/object-storage`, relative to the working directory). `OBJECT_STORAGE_BACKEND`: `auto`
   * (default), `radosgw` or `s3rver`. Whatever was started is stopped on release; if the process dies
   * without releasing, the instance stops itself (watchdog on this process's pid).
   */
  static readonly layer: Layer.Layer<LocalObjectStorage, ObjectStorageError | Config.ConfigError> = Layer.unwrap(
    Effect.gen(function*() {
      const dir = yield* ObjectStorageDir
      const backend = yield* ObjectStorageBackendSetting
      return LocalObjectStorage.layerAt({ dir, backend })
    })
  )

  /**
   * The same in a given folder (relative to the working directory), for a service that keeps its own
   * instance under `OBJECT_STORAGE_DIR` (the uploads demo's `<dir>/uploads`). The rest of the
   * configuration (`DATABASE_URL`, `EMBEDDED_POSTGRES_DIR`) is read as it is.
   */
  static readonly layerAt = (options: {
    readonly dir: string
    readonly backend?: ObjectStorageBackend | "auto" | undefined
  }): Layer.Layer<LocalObjectStorage, ObjectStorageError> =>
    Layer.effect(
      LocalObjectStorage,
      Effect.flatMap(
        startObjectStorage({ dir: NodePath.resolve(process.cwd(), options.dir), backend: options.backend }),
        makeService
      )
    ).pipe(Layer.provide(NodeServices.layer))

  /** Connects to an instance that is already running (for example the test run's, from `inject`). */
  static readonly layerExternal = (info: ObjectStorageInfo): Layer.Layer<LocalObjectStorage> =>
    Layer.effect(LocalObjectStorage, makeService(info))
}
