/** Shared test helpers: the docs stack on a fresh database, HTTP clients, temporary doc folders. */
import { serve, toWebHandler } from "@svc/platform"
import { Client, get, TestDatabase, tempDir } from "@svc/platform/testing"
import { ConfigProvider, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { ApiKeys } from "../src/ApiKeys.ts"
import { Indexer } from "../src/Indexer.ts"
import { Search } from "../src/Search.ts"
import { routes } from "../src/Service.ts"

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
    Layer.provide(serve(routes, { name: "docs-api", port: 0, host: "127.0.0.1" })),
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


/** Writes `files` (relative path → content) into a new temporary folder; returns its path. */
export const docsFolder = (files: Record<string, string>) =>
  Effect.gen(function*() {
    const dir = yield* tempDir("svc-docs-")
    yield* Effect.promise(async () => {
      for (const [name, content] of Object.entries(files)) {
        await fs.mkdir(path.dirname(path.join(dir, name)), { recursive: true })
        await fs.writeFile(path.join(dir, name), content)
      }
    })
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
