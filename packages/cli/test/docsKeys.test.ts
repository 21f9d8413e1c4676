/**
 * `svc docs keys create|list|revoke` as an operator runs them, and `svc start docs-api` honouring the
 * keys (a new key accepted with its team settings, a revoked one refused at once). Real processes on
 * a fresh database of the run's Postgres cluster.
 */
import { assert, describe, it } from "@effect/vitest"
import { freePort } from "@svc/platform"
import { TestDatabase } from "@svc/platform/testing"
import { Effect, Redacted, Schedule } from "effect"
import { spawn } from "node:child_process"
import { closeSync, openSync } from "node:fs"
import { mkdtemp, readdir } from "node:fs/promises"

const bin = new URL("../src/bin.ts", import.meta.url).pathname
const greeter = new URL("../../docs/test/fixtures/greeter", import.meta.url).pathname

const start = (args: ReadonlyArray<string>, env: Record<string, string>) => {
  let stdout = ""
  let stderr = ""
  const child = spawn(process.execPath, [bin, ...args], {
    env: { ...process.env, ...env, HOST: "127.0.0.1" },
    stdio: ["ignore", "pipe", "pipe"]
  })
  child.stdout!.on("data", (chunk) => stdout += chunk)
  child.stderr!.on("data", (chunk) => stderr += chunk)
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  return { child, stdout: () => stdout, stderr: () => stderr, exited }
}

const run = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.gen(function*() {
    const process = start(args, env)
    const code = yield* Effect.promise(() => process.exited)
    return { code, stdout: process.stdout(), stderr: process.stderr(), output: process.stdout() + process.stderr() }
  })

describe("svc docs keys", () => {
  it.live("create (printed once), list (never the key), revoke; a running docs-api honours them", () =>
    Effect.gen(function*() {
      const env = { DATABASE_URL: Redacted.value(yield* TestDatabase.freshDatabase()) }
      assert.strictEqual((yield* run(["docs", "add", greeter, "--version", "1.0.0"], env)).code, 0)

      const empty = yield* run(["docs", "keys", "list"], env)
      assert.strictEqual(empty.code, 0, empty.output)
      assert.include(empty.stdout, "No API keys yet")

      const created = yield* run(
        ["docs", "keys", "create", "--name", "ci", "--team", "acme", "--libraries", "/acme/*,/other/lib", "--sources", "folder"],
        env
      )
      assert.strictEqual(created.code, 0, created.output)
      // the key alone on stdout (KEY=$(svc docs keys create)), the description on stderr
      assert.match(created.stdout, /^svcsk_[A-Za-z0-9_-]{43}\n$/)
      const key = created.stdout.trim()
      const prefix = key.slice(0, 14)
      assert.include(created.stderr, `Created API key ${prefix}… (id `)
      assert.include(created.stderr, "libraries /acme/*,/other/lib; sources folder")
      assert.include(created.stderr, "cannot be shown again")

      const plain = yield* run(["docs", "keys", "create"], env)
      assert.strictEqual(plain.code, 0, plain.output)
      const plainKey = plain.stdout.trim()
      assert.include(plain.stderr, "all libraries, all sources")

      const listed = yield* run(["docs", "keys", "list"], env)
      assert.strictEqual(listed.code, 0, listed.output)
      assert.match(
        listed.stdout,
        new RegExp(`^${prefix}  id \\d+  "ci"  team acme  created \\S+Z  active  libraries /acme/\\*,/other/lib; sources folder$`, "m")
      )
      assert.match(listed.stdout, /^svcsk_\S{8}  id \d+  \(no name\)  team -  created \S+  active  all libraries, all sources$/m)
      assert.notInclude(listed.output, key.slice(14))
      assert.notInclude(listed.output, plainKey.slice(14))
      const json = JSON.parse((yield* run(["docs", "keys", "list", "--json"], env)).stdout)
      assert.strictEqual(json.length, 2)
      assert.notInclude(JSON.stringify(json), key.slice(14))

      const bad = yield* run(["docs", "keys", "create", "--sources", "ftp"], env)
      assert.strictEqual(bad.code, 1)
      assert.include(bad.output, `svc: Source "ftp" is not one of folder, npm, git, website, openapi`)
      // a restriction that names nothing would be a key that sees everything: refused, no key made
      for (const empty of [["--libraries="], ["--sources", " , "]]) {
        const refused = yield* run(["docs", "keys", "create", ...empty], env)
        assert.strictEqual(refused.code, 1, empty.join(" "))
        assert.match(refused.output, /names nothing: list at least one, or leave the flag out for all/)
      }
      assert.strictEqual(JSON.parse((yield* run(["docs", "keys", "list", "--json"], env)).stdout).length, 2)

      // the running API sees keys created and revoked after it started
      const port = yield* freePort()
      const server = start(["start", "docs-api"], { ...env, DOCS_PORT: String(port) })
      const search = (headers: Record<string, string>) =>
        Effect.tryPromise(() =>
          fetch(`http://127.0.0.1:${port}/api/v2/libs/search?libraryName=greeter`, { headers })
            .then(async (response) => ({ status: response.status, body: await response.json() }))
        )
      const keyed = yield* search({ authorization: `Bearer ${key}` }).pipe(
        Effect.retry({ schedule: Schedule.spaced("200 millis"), times: 100 })
      )
      assert.strictEqual(keyed.status, 200)
      assert.deepStrictEqual(keyed.body.results.map((result: any) => result.id), ["/acme/greeter"])
      assert.isTrue(keyed.body.searchFilterApplied)
      assert.isFalse((yield* search({ "x-api-key": plainKey })).body.searchFilterApplied)

      const revoked = yield* run(["docs", "keys", "revoke", prefix], env)
      assert.strictEqual(revoked.code, 0, revoked.output)
      assert.match(revoked.stdout, new RegExp(`^${prefix} \\(id \\d+\\): revoked \\S+Z\n$`))
      const refused = yield* search({ authorization: `Bearer ${key}` })
      assert.strictEqual(refused.status, 401)
      assert.strictEqual(refused.body.code, "unauthorized")
      assert.strictEqual((yield* search({ "x-api-key": plainKey })).status, 200)
      server.child.kill("SIGTERM")
      assert.strictEqual(yield* Effect.promise(() => server.exited), 0, server.stderr())
      assert.notInclude(server.stdout() + server.stderr(), key.slice(14), "the server never logs a key")

      const listedAgain = yield* run(["docs", "keys", "list"], env)
      assert.match(listedAgain.stdout, new RegExp(`^${prefix}  .*  revoked \\S+Z  `, "m"))
      const unknown = yield* run(["docs", "keys", "revoke", "svcsk_nothing1"], env)
      assert.strictEqual(unknown.code, 1)
      assert.include(unknown.output, "svc: No API key svcsk_nothing1")
    }).pipe(Effect.scoped), { timeout: 120_000 })

  it.live("a key that cannot be written (stdout on a full disk) is revoked at once, and the command fails", () =>
    Effect.gen(function*() {
      const env = { DATABASE_URL: Redacted.value(yield* TestDatabase.freshDatabase()) }
      const full = openSync("/dev/full", "w")
      const child = spawn(process.execPath, [bin, "docs", "keys", "create", "--name", "lost"], {
        env: { ...process.env, ...env },
        stdio: ["ignore", full, "pipe"]
      })
      closeSync(full)
      let stderr = ""
      child.stderr!.on("data", (chunk) => stderr += chunk)
      const code = yield* Effect.promise(() => new Promise<number | null>((resolve) => child.once("exit", resolve)))
      assert.strictEqual(code, 1, stderr)
      assert.match(stderr, /could not write the output \(ENOSPC\), so the key svcsk_[A-Za-z0-9_-]{8}… \(id \d+\) was revoked: nobody has it/)
      // one failure line, as every failure of svc (it was preceded by a bare `svc: could not write the output (ENOSPC)`)
      assert.deepStrictEqual(stderr.split("\n").filter((line) => line.startsWith("svc: ")).length, 1, stderr)
      // and not told it was created, to store it now (those lines came before the write was tried)
      assert.notInclude(stderr, "Created API key", stderr)
      assert.notInclude(stderr, "Store it now", stderr)
      const [key, ...others] = JSON.parse((yield* run(["docs", "keys", "list", "--json"], env)).stdout)
      assert.deepStrictEqual(others, [])
      assert.strictEqual(key.name, "lost")
      assert.isNotNull(key.revokedAt, "the key nobody has is revoked")
    }), { timeout: 60_000 })
})

describe("svc docs keys with DOCS_URL", () => {
  it.live("without DATABASE_URL: refused naming both, before any database starts (a key was made in a local embedded one the server never reads)", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.promise(() => mkdtemp("/tmp/svc-keys-url-"))
      const env = { DOCS_URL: "http://127.0.0.1:9", DOCS_ADMIN_TOKEN: "t", DATABASE_URL: "", EMBEDDED_POSTGRES_DIR: `${dir}/pg` }
      for (const args of [["docs", "keys", "create", "--name", "ci"], ["docs", "keys", "list"], ["docs", "keys", "revoke", "svcsk_AbCd1234"]]) {
        const result = yield* run(args, env)
        assert.strictEqual(result.code, 1, result.output)
        assert.strictEqual(result.stdout, "", args.join(" "))
        assert.include(result.stderr, "DOCS_URL is set (http://127.0.0.1:9), but API keys are kept in the docs-api's database", args.join(" "))
        assert.include(result.stderr, "set DATABASE_URL to that database", args.join(" "))
        assert.notInclude(result.output, "Embedded Postgres", args.join(" "))
      }
      // nothing was made in the data folder's place
      assert.deepStrictEqual(yield* Effect.promise(() => readdir(dir)), [])
      // with DATABASE_URL too, the keys are that database's, as before
      const database = { DOCS_URL: "http://127.0.0.1:9", DOCS_ADMIN_TOKEN: "t", DATABASE_URL: Redacted.value(yield* TestDatabase.freshDatabase()) }
      const listed = yield* run(["docs", "keys", "list"], database)
      assert.strictEqual(listed.code, 0, listed.output)
      assert.include(listed.stdout, "No API keys yet")
    }), { timeout: 120_000 })
})
