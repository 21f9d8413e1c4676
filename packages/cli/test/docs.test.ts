/**
 * `svc docs` as an operator runs it: add a folder and an npm package, list, refresh, remove, and
 * `svc start docs-api` serving what was added. Real processes on a real embedded Postgres.
 */
import { assert, describe, it } from "@effect/vitest"
import { freePort } from "@svc/platform"
import { tempDir } from "@svc/platform/testing"
import { Effect, Schedule } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

const bin = new URL("../src/bin.ts", import.meta.url).pathname
const greeter = new URL("../../docs/test/fixtures/greeter", import.meta.url).pathname

const start = (args: ReadonlyArray<string>, env: Record<string, string>) => {
  let output = ""
  let stdout = ""
  const child = spawn(process.execPath, [bin, ...args], {
    env: { ...process.env, ...env, HOST: "127.0.0.1" },
    stdio: ["ignore", "pipe", "pipe"]
  })
  child.stdout!.on("data", (chunk) => {
    output += chunk
    stdout += chunk
  })
  child.stderr!.on("data", (chunk) => output += chunk)
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  return { child, output: () => output, stdout: () => stdout, exited }
}

const run = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.gen(function*() {
    const process = start(args, env)
    const code = yield* Effect.promise(() => process.exited)
    return { code, output: process.output(), stdout: process.stdout() }
  })

describe("svc docs", () => {
  it.live("add, list, refresh, remove, and start docs-api serving the result", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("svc-cli-docs-")
      const env = { EMBEDDED_POSTGRES_DIR: path.join(dir, "postgres") }

      const added = yield* run(["docs", "add", greeter, "--version", "1.0.0"], env)
      assert.strictEqual(added.code, 0, added.output)
      // progress on stderr, the result alone on stdout
      assert.include(added.output, `Indexing /acme/greeter 1.0.0 from ${greeter}\n`)
      assert.include(added.output, "  [1/4] README.md: 3 snippets\n")
      assert.include(added.output, "  [4/4] docs/languages.md:")
      assert.match(added.output, /Stored \d+ snippets \(\d+ tokens\)\n/)
      assert.match(added.stdout, /^\/acme\/greeter\/1\.0\.0 is ready: 4 files, \d+ snippets\n$/)

      const npm = yield* run(["docs", "add", "npm:he"], env)
      assert.strictEqual(npm.code, 0, npm.output)
      assert.match(npm.stdout, /\/mathiasbynens\/he\/[\d.]+ is ready/)

      const list = yield* run(["docs", "list"], env)
      assert.strictEqual(list.code, 0, list.output)
      assert.match(list.stdout, /^\/acme\/greeter {2}greeter {2}\(.*fixtures\/greeter\)\n {2}1\.0\.0 \(default\) {2}ready {2}\d+ snippets? {2}\d+ tokens? {2}updated \S+\n\/mathiasbynens\/he {2}he {2}\(npm:he\)\n/m)

      const refreshed = yield* run(["docs", "refresh", "/acme/greeter"], env)
      assert.strictEqual(refreshed.code, 0, refreshed.output)
      assert.include(refreshed.stdout, "/acme/greeter/1.0.0 is ready")

      const failed = yield* run(["docs", "add", "npm:not-installed-anywhere"], env)
      assert.strictEqual(failed.code, 1)
      assert.include(failed.output, "svc: npm package not-installed-anywhere is not installed")
      assert.notInclude(failed.output, "    at ")

      const badTrust = yield* run(["docs", "add", greeter, "--trust", "11"], env)
      assert.strictEqual(badTrust.code, 1)
      assert.include(badTrust.output, "--trust must be a whole number from 0 to 10, not 11")
      assert.notInclude(badTrust.output, "Indexing")
      const badTitle = yield* run(["docs", "add", greeter, "--title", " "], env)
      assert.strictEqual(badTitle.code, 1)
      assert.include(badTitle.output, "--title must be 1 to 200 characters")
      assert.notInclude(badTitle.output, "Indexing")
      // `npm run svc` runs in the repository's root: a relative path is read from where npm was called (INIT_CWD)
      const relative = yield* run(["docs", "add", "greeter", "--id", "/acme/relative"], { ...env, INIT_CWD: path.dirname(greeter) })
      assert.strictEqual(relative.code, 0, relative.output)
      assert.include(relative.output, `Indexing /acme/relative 1.2.0 from ${greeter}\n`)
      // a ./ path that is not there is named where the caller looked, not in the repository's root
      const missing = yield* run(["docs", "add", "./no-such-docs"], { ...env, INIT_CWD: path.dirname(greeter) })
      assert.strictEqual(missing.code, 1)
      assert.include(missing.output, `svc: ${path.join(path.dirname(greeter), "no-such-docs")} does not exist\n`)
      // a title (from the operator or a package.json) is listed with its control characters escaped, never raw
      const colour = yield* run(["docs", "add", greeter, "--id", "/acme/colour", "--title", "\u001b[31mred"], env)
      assert.strictEqual(colour.code, 0, colour.output)
      const listed = yield* run(["docs", "list"], env)
      assert.include(listed.stdout, "/acme/colour  \\u001b[31mred  (")
      assert.notInclude(listed.stdout, "\u001b")

      const port = yield* freePort()
      const server = start(["start", "docs-api"], { ...env, DOCS_PORT: String(port) })
      const answer = yield* Effect.tryPromise(() =>
        fetch(`http://127.0.0.1:${port}/api/v2/context?libraryId=/acme/greeter&query=switch%20language&type=json`)
          .then((response) => response.json())
      ).pipe(Effect.retry({ schedule: Schedule.spaced("200 millis"), times: 100 }))
      assert.strictEqual(answer.libraryId, "/acme/greeter/1.0.0")
      assert.strictEqual(answer.snippets[0].title, "Switching the language")
      server.child.kill("SIGTERM")
      assert.strictEqual(yield* Effect.promise(() => server.exited), 0, server.output())

      const removed = yield* run(["docs", "remove", "/acme/greeter"], env)
      assert.strictEqual(removed.code, 0, removed.output)
      assert.include(removed.stdout, "/acme/greeter: removed")
      const again = yield* run(["docs", "remove", "/acme/greeter"], env)
      assert.strictEqual(again.code, 1)
      assert.include(again.output, "svc: No library /acme/greeter")
    }), { timeout: 120_000 })

  it.live("with DOCS_URL the commands operate a running docs-api over its RPC, behind DOCS_ADMIN_TOKEN", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("svc-cli-docs-rpc-")
      const port = yield* freePort()
      const env = { EMBEDDED_POSTGRES_DIR: path.join(dir, "postgres"), DOCS_DEFAULT_LIBRARIES: "none" }
      // folder sources over the RPC only under DOCS_SOURCE_ROOTS (packages/docs/test/rpc.test.ts)
      const server = start(["start", "docs-api"], {
        ...env,
        DOCS_PORT: String(port),
        DOCS_ADMIN_TOKEN: "operator-secret",
        DOCS_SOURCE_ROOTS: path.dirname(greeter)
      })
      yield* Effect.tryPromise(() => fetch(`http://127.0.0.1:${port}/health`).then((r) => r.json())).pipe(
        Effect.retry({ schedule: Schedule.spaced("200 millis"), times: 100 })
      )
      // the operator's side has no database settings at all: everything goes through the server
      const remote = { DOCS_URL: `http://127.0.0.1:${port}`, DOCS_ADMIN_TOKEN: "operator-secret", EMBEDDED_POSTGRES_DIR: path.join(dir, "unused") }

      const added = yield* run(
        ["docs", "add", greeter, "--version", "2.0.0", "--title", "Greeter handbook", "--description", "Greetings, politely"],
        remote
      )
      assert.strictEqual(added.code, 0, added.output)
      assert.include(added.output, `Indexing /acme/greeter 2.0.0 from ${greeter}\n`)
      assert.include(added.output, "  [1/4] README.md: 3 snippets\n")
      assert.match(added.stdout, /^\/acme\/greeter\/2\.0\.0 is ready: 4 files, \d+ snippets\n$/)

      const list = yield* run(["docs", "list"], remote)
      assert.strictEqual(list.code, 0, list.output)
      // --title and --description travel with the RPC
      assert.match(list.stdout, /^\/acme\/greeter {2}Greeter handbook {2}\(.*fixtures\/greeter\)\n {2}2\.0\.0 \(default\) {2}ready {2}\d+ snippets/)
      const found = yield* Effect.promise(() =>
        fetch(`http://127.0.0.1:${port}/api/v2/libs/search?libraryName=greeter`).then((r) => r.json()))
      assert.strictEqual(found.results[0].description, "Greetings, politely")
      const answer = yield* Effect.promise(() =>
        fetch(`http://127.0.0.1:${port}/api/v2/context?libraryId=/acme/greeter&query=switch%20language&type=json`).then((r) => r.json()))
      assert.strictEqual(answer.libraryId, "/acme/greeter/2.0.0")

      const refreshed = yield* run(["docs", "refresh", "/acme/greeter"], remote)
      assert.strictEqual(refreshed.code, 0, refreshed.output)
      assert.include(refreshed.stdout, "/acme/greeter/2.0.0 is ready")

      const failed = yield* run(["docs", "add", "npm:not-installed-anywhere"], remote)
      assert.strictEqual(failed.code, 1)
      assert.match(failed.output, /^svc: npm package not-installed-anywhere is not installed [^\n]*\n$/)
      // the caller of the RPC is not told the server's folders (it was "from /srv/… up", and the absolute package folder)
      assert.notInclude(failed.output, process.cwd())
      const npm = yield* run(["docs", "add", "npm:he"], remote)
      assert.strictEqual(npm.code, 0, npm.output)
      assert.match(npm.output, /Indexing \/[^ ]+ [^ ]+ from node_modules\/he\n/)
      assert.strictEqual((yield* run(["docs", "remove", "/mathiasbynens/he"], remote)).code, 0)

      const wrongToken = yield* run(["docs", "list"], { ...remote, DOCS_ADMIN_TOKEN: "guess" })
      assert.strictEqual(wrongToken.code, 1)
      assert.match(wrongToken.output, /^svc: docs-api at http:\/\/127\.0\.0\.1:\d+ refused DOCS_ADMIN_TOKEN \(401\): .*\n$/)
      const noToken = yield* run(["docs", "list"], { DOCS_URL: remote.DOCS_URL })
      assert.strictEqual(noToken.code, 1)
      assert.include(noToken.output, "DOCS_ADMIN_TOKEN is needed")

      const removed = yield* run(["docs", "remove", "/acme/greeter"], remote)
      assert.strictEqual(removed.code, 0, removed.output)
      assert.include(removed.stdout, "/acme/greeter: removed")
      const empty = yield* run(["docs", "list"], remote)
      assert.include(empty.stdout, "No libraries yet")

      server.child.kill("SIGTERM")
      assert.strictEqual(yield* Effect.promise(() => server.exited), 0, server.output())
      assert.notInclude(server.output(), "operator-secret")
    }), { timeout: 120_000 })

  it.live("a docs-api without DOCS_ADMIN_TOKEN refuses the RPC", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("svc-cli-docs-rpc-")
      const port = yield* freePort()
      const server = start(["start", "docs-api"], {
        EMBEDDED_POSTGRES_DIR: path.join(dir, "postgres"), DOCS_DEFAULT_LIBRARIES: "none", DOCS_PORT: String(port)
      })
      yield* Effect.tryPromise(() => fetch(`http://127.0.0.1:${port}/health`).then((r) => r.json())).pipe(
        Effect.retry({ schedule: Schedule.spaced("200 millis"), times: 100 })
      )
      const refused = yield* Effect.promise(() =>
        fetch(`http://127.0.0.1:${port}/rpc`, { method: "POST", headers: { authorization: "Bearer anything" }, body: "{}" }))
      assert.strictEqual(refused.status, 503)
      assert.include((yield* Effect.promise(() => refused.json())).message, "no DOCS_ADMIN_TOKEN")
      server.child.kill("SIGTERM")
      assert.strictEqual(yield* Effect.promise(() => server.exited), 0, server.output())
    }), { timeout: 60_000 })

  it.live("a source that can never be one is refused before a database is opened", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("svc-cli-docs-")
      const postgres = path.join(dir, "postgres")
      for (const [source, said] of [
        ["gopher://docs.invalid/widgets", "svc: gopher:// is not a source: give a folder, a git URL"],
        ["ext::sh -c touch% /tmp/pwned", "svc: ext:: (git's remote-helper syntax) is not a source"]
      ] as const) {
        const refused = yield* run(["docs", "add", source], { EMBEDDED_POSTGRES_DIR: postgres })
        assert.strictEqual(refused.code, 1, refused.output)
        assert.include(refused.output, said)
        assert.strictEqual(refused.stdout, "")
      }
      // no embedded cluster was created for it (before, one was initialised and migrated first: ~7 s)
      assert.isFalse(fs.existsSync(postgres))
    }), { timeout: 60_000 })
})
