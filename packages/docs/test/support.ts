/** Shared test helpers: the docs stack on a fresh database, HTTP clients, temporary doc folders. */
import { serve, toWebHandler } from "@svc/platform"
import { Client, get, spawnablePort, TestDatabase, tempDir } from "@svc/platform/testing"
import { ConfigProvider, Context, Duration, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as Http from "node:http"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { ApiKeys } from "../src/ApiKeys.ts"
import { DocsClient } from "../src/mcp/DocsClient.ts"
import { routes as mcpRoutes } from "../src/mcp/McpHttp.ts"
import { Indexer } from "../src/Indexer.ts"
import { Search } from "../src/Search.ts"
import { MAX_HEAD_BYTES, routes } from "../src/Service.ts"

export const fixtures = new URL("./fixtures/", import.meta.url).pathname

/** Indexer, Search and ApiKeys on a fresh migrated database. */
export const stack = Layer.mergeAll(Indexer.layer, Search.layer, ApiKeys.layer).pipe(
  Layer.provideMerge(TestDatabase.layer())
)

/**
 * Rate limits high enough for tests that are not about them (a re-index under load asks hundreds of
 * times a second from one address); a test of the limits passes its own.
 */
const generousLimits = { DOCS_RATE_LIMIT_ANONYMOUS: "1000000", DOCS_RATE_LIMIT_KEYED: "1000000" }

/** Configuration variables for the server under test, over the process environment. */
const withEnv = (env: Record<string, string>) =>
  ConfigProvider.layerAdd(ConfigProvider.fromEnvRecord(env), { asPrimary: true })


/**
 * A real server on 127.0.0.1:<random> over the services already in the test's context; `env` sets its
 * configuration (e.g. `DOCS_RATE_LIMIT_ANONYMOUS`).
 */
export const socketClientWith = (env: Record<string, string>) =>
  Layer.effect(
    Client,
    Effect.gen(function*() {
      const { address } = yield* HttpServer.HttpServer
      const baseUrl = `http://127.0.0.1:${address._tag === "UnixPathAddress" ? 0 : address.port}`
      return { baseUrl, fetch: (path, init) => Effect.promise(() => fetch(baseUrl + path, init)) }
    })
  ).pipe(
    Layer.provide(serve(routes, { name: "docs-api", port: 0, host: "127.0.0.1", maxHeadBytes: MAX_HEAD_BYTES })),
    Layer.provide(withEnv(env))
  )

/** {@link socketClientWith} with rate limits no test reaches. */
export const socketClient = socketClientWith(generousLimits)

/** The same routes in-process (no socket). */
export const inProcessClient = Layer.effect(
  Client,
  Effect.gen(function*() {
    const context = yield* Effect.context<Search | ApiKeys>()
    const { handler } = yield* Effect.acquireRelease(
      Effect.sync(() =>
        toWebHandler(
          routes.pipe(Layer.provide(Layer.succeedContext(context)), Layer.provide(withEnv(generousLimits))) as any
        )
      ),
      ({ dispose }) => Effect.promise(dispose)
    )
    return {
      baseUrl: "http://localhost",
      fetch: (path, init) => Effect.promise(() => handler(new Request(`http://localhost${path}`, init)))
    }
  })
)


/** Writes `files` (relative path → content) into `dir`, making the folders they need. */
export const writeFiles = (dir: string, files: Record<string, string>) =>
  Effect.promise(async () => {
    for (const [name, content] of Object.entries(files)) {
      await fs.mkdir(path.dirname(path.join(dir, name)), { recursive: true })
      await fs.writeFile(path.join(dir, name), content)
    }
  })

/** Writes `files` (relative path → content) into a new temporary folder; returns its path. */
export const docsFolder = (files: Record<string, string>) =>
  Effect.gen(function*() {
    const dir = yield* tempDir("svc-docs-")
    yield* writeFiles(dir, files)
    return dir
  })

export { TestDatabase }

export { Client, get }

/** Git with a fixed identity and no global or system configuration read (or changed), for test repositories. */
export const gitEnv: NodeJS.ProcessEnv = {
  ...process.env,
  GIT_AUTHOR_NAME: "Docs Test",
  GIT_AUTHOR_EMAIL: "docs-test@example.com",
  GIT_COMMITTER_NAME: "Docs Test",
  GIT_COMMITTER_EMAIL: "docs-test@example.com",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_CONFIG_NOSYSTEM: "1"
}

/** Runs git in `cwd` with {@link gitEnv}; its output, trimmed. */
export const git = (cwd: string, ...args: Array<string>): string =>
  execFileSync("git", args, { cwd, env: gitEnv, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim()

/** A git repository made by {@link gitRepository}. */
export interface GitRepository {
  /** The working repository, on branch main. */
  readonly work: string
  /** The bare repository it publishes to, `<tmp>/<owner>/<name>.git`: what a test indexes. */
  readonly bare: string
  /** The short hash of the first commit. */
  readonly head: string
  /** Writes `files` into the working repository, commits everything there as `message` and publishes it; the new short hash. */
  readonly commit: (files: Record<string, string>, message: string) => Effect.Effect<string>
  /** Publishes main and the tags to the bare repository (for a tag made with `git(work, "tag", …)`). */
  readonly push: Effect.Effect<void>
}

/**
 * A working repository with `files` committed on main as "first", cloned bare to
 * `<tmp>/<owner>/<name>.git` (the library id a clone of it gets is `/<owner>/<name>`); removed when
 * the scope closes. No network: a test indexes `bare` by path or file:// URL.
 */
export const gitRepository = (owner: string, name: string, files: Record<string, string>) =>
  Effect.gen(function*() {
    // not svc-docs-git-: that is the indexer's clone folders, which git.test.ts counts
    const dir = yield* tempDir("svc-docs-repo-")
    const work = path.join(dir, "work")
    const bare = path.join(dir, owner, `${name}.git`)
    yield* writeFiles(work, files)
    git(dir, "init", "--quiet", "--initial-branch", "main", work)
    git(work, "add", ".")
    git(work, "commit", "--quiet", "-m", "first")
    git(dir, "clone", "--quiet", "--bare", work, bare)
    const push = Effect.sync(() => void git(work, "push", "--quiet", "--tags", bare, "main"))
    const commit = (files: Record<string, string>, message: string) =>
      Effect.gen(function*() {
        yield* writeFiles(work, files)
        git(work, "add", ".")
        git(work, "commit", "--quiet", "-m", message)
        yield* push
        return git(work, "rev-parse", "--short", "HEAD")
      })
    return { work, bare, head: git(work, "rev-parse", "--short", "HEAD"), commit, push } satisfies GitRepository
  })

/** A docs-api process (`node src/main.ts`) started by {@link docsProcess}. */
export interface DocsProcess {
  readonly baseUrl: string
  readonly child: ChildProcess
  /** stdout and stderr so far */
  readonly output: () => string
  /** Resolves with the exit code, or the name of the signal that ended it. */
  readonly exited: Promise<number | string>
}

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url))

/**
 * A docs-api process on `databaseUrl` (on 127.0.0.1, a free port, no default libraries, rate limits no
 * test reaches; `env` adds or overrides), once it answers `GET /health`. SIGKILLed when the scope
 * closes if it still runs.
 */
export const docsProcess = (databaseUrl: string, env: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const port = yield* spawnablePort()
    const child = yield* Effect.acquireRelease(
      Effect.sync(() =>
        spawn(process.execPath, [MAIN], {
          env: {
            ...process.env,
            ...generousLimits,
            DATABASE_URL: databaseUrl,
            DOCS_PORT: String(port),
            HOST: "127.0.0.1",
            DOCS_DEFAULT_LIBRARIES: "none",
            ...env
          },
          stdio: ["ignore", "pipe", "pipe"]
        })
      ),
      (child) =>
        Effect.promise(() =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve()
            child.once("exit", () => resolve())
            child.kill("SIGKILL")
          })
        )
    )
    let output = ""
    child.stdout!.on("data", (chunk) => (output += chunk))
    child.stderr!.on("data", (chunk) => (output += chunk))
    const exited = new Promise<number | string>((resolve) =>
      child.once("exit", (code, signal) => resolve(code ?? signal ?? "unknown"))
    )
    const baseUrl = `http://127.0.0.1:${port}`
    const health = Effect.promise(() =>
      fetch(`${baseUrl}/health`).then((response) => response.status === 200, () => false)
    )
    yield* waitFor(
      Effect.flatMap(health, (up) =>
        child.exitCode !== null || child.signalCode !== null
          ? Effect.die(new Error(`the docs-api process exited before it answered:\n${output}`))
          : Effect.succeed(up)),
      (up) => up,
      () => `the docs-api process to answer on ${baseUrl}:\n${output}`
    )
    return { baseUrl, child, output: () => output, exited } satisfies DocsProcess
  })

/**
 * Runs `check` every 50 ms until `until` holds and returns that value; dies with `what` after
 * `timeout`. In real time: a test using it runs without the test clock (`excludeTestServices`).
 */
export function waitFor<A, B extends A, E, R>(
  check: Effect.Effect<A, E, R>,
  until: (value: A) => value is B,
  what: (last: A | undefined) => string,
  timeout?: Duration.Input
): Effect.Effect<B, E, R>
export function waitFor<A, E, R>(
  check: Effect.Effect<A, E, R>,
  until: (value: A) => boolean,
  what: (last: A | undefined) => string,
  timeout?: Duration.Input
): Effect.Effect<A, E, R>
export function waitFor<A, E, R>(
  check: Effect.Effect<A, E, R>,
  until: (value: A) => boolean,
  what: (last: A | undefined) => string,
  timeout: Duration.Input = "30 seconds"
): Effect.Effect<A, E, R> {
  return Effect.gen(function*() {
    const deadline = Date.now() + Duration.toMillis(Duration.fromInputUnsafe(timeout))
    let last: A | undefined
    while (Date.now() < deadline) {
      last = yield* check
      if (until(last)) return last
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.die(new Error(`timed out after ${Duration.format(Duration.fromInputUnsafe(timeout))} waiting for ${what(last)}`))
  })
}

/**
 * The MCP HTTP server on 127.0.0.1:<free port> with `env` (its configuration), calling the docs API at
 * `apiUrl` (default: a port nothing listens on, for tests that never reach it); its port, for the scope.
 */
export const startMcp = (env: Record<string, string> = {}, apiUrl = "http://127.0.0.1:9") =>
  Effect.gen(function*() {
    const context = yield* Layer.build(
      serve(mcpRoutes, { name: "mcp", port: 0, host: "127.0.0.1" }).pipe(
        Layer.provide(DocsClient.layer({ baseUrl: apiUrl, timeout: "5 seconds", retries: 0 })),
        Layer.provide(ConfigProvider.layerAdd(ConfigProvider.fromEnvRecord(env), { asPrimary: true }))
      )
    )
    const { address } = Context.get(context, HttpServer.HttpServer)
    return address._tag === "UnixPathAddress" ? 0 : address.port
  })

/** An answer to {@link exactRequest}: the body as text, and as JSON when it is JSON. */
export interface ExactAnswer {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  readonly text: string
  readonly body: any
}

/**
 * One request on a real socket to 127.0.0.1:`port` with exactly `headers` and `Host` (a header whose
 * value is `undefined` is not sent), the body sent as is: node adds nothing but its framing.
 */
export const exactRequest = (
  port: number,
  options: {
    readonly method?: string
    readonly path?: string
    readonly headers?: Record<string, string | undefined>
    readonly body?: string | Uint8Array | undefined
    readonly localAddress?: string | undefined
  } = {}
) =>
  Effect.promise(() =>
    new Promise<ExactAnswer>((resolve, reject) => {
      const headers: Record<string, string> = {}
      for (const [name, value] of Object.entries({ host: `127.0.0.1:${port}`, ...options.headers })) {
        if (value !== undefined) headers[name] = value
      }
      const req = Http.request({
        host: "127.0.0.1",
        port,
        method: options.method ?? "POST",
        path: options.path ?? "/mcp",
        headers,
        ...(options.localAddress === undefined ? {} : { localAddress: options.localAddress })
      }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (chunk: Buffer) => chunks.push(chunk))
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8")
          let body: unknown = undefined
          try {
            body = text === "" ? undefined : JSON.parse(text)
          } catch {}
          resolve({ status: res.statusCode!, headers: res.headers, text, body })
        })
      })
      req.on("error", reject)
      req.end(options.body)
    })
  )
