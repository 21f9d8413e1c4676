/**
 * The `svc` command as an operator runs it: real processes, a real embedded Postgres in a
 * temporary folder, signals.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import { spawnSync } from "node:child_process"
import { openSync } from "node:fs"
import * as fs from "node:fs/promises"
import * as Http from "node:http"
import * as path from "node:path"
import { acceptsConnections } from "@svc/platform"
import { spawnablePort, spawnablePorts, tempDir } from "@svc/platform/testing"
import { bin, finished, healthy, occupy, started, startedQueue, svc, svcRun } from "./svcProcess.ts"

/** A local HTTP server answering every request with 500: messages to it end in the DLQ. */
const failingDestination = Effect.acquireRelease(
  Effect.callback<Http.Server>((resume) => {
    const server = Http.createServer((_req, res) => res.writeHead(500).end("down"))
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
  }),
  (server) => Effect.callback<void>((resume) => {
    server.closeAllConnections()
    server.close(() => resume(Effect.void))
  })
).pipe(Effect.map((server) => `http://127.0.0.1:${(server.address() as { port: number }).port}`))

describe("svc", () => {
  it.live("--help lists the commands", () =>
    Effect.gen(function*() {
      const run = svc(["--help"], {})
      assert.strictEqual(yield* finished(run), 0)
      assert.include(run.output(), "start")
      assert.include(run.output(), "migrate")
    }))

  it.live("docs add --help names every kind of source it reads, websites and OpenAPI documents included", () =>
    Effect.gen(function*() {
      // the help named folders, git and npm only: a user coming from docs-mcp-server could not tell
      // that a documentation site (or its llms.txt) and an OpenAPI document are sources too
      const run = svc(["docs", "add", "--help"], {})
      assert.strictEqual(yield* finished(run), 0)
      for (const kind of ["folder", "git URL", "npm:<package>", "website", "llms.txt", "OpenAPI"]) assert.include(run.output(), kind)
      assert.include(run.output(), "svc docs add https://docs.acme.dev/widgets/")
      assert.include(run.output(), "svc docs add ./api/openapi.yaml")
    }))

  it.live("start all: comes up with /health, stops cleanly on Ctrl-C, and finds its data on the next start", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("svc-cli-")
      const [port, docsPort, listingsPort, queuePort, mcpPort, uploadsPort] = (yield* spawnablePorts(6)) as [number, number, number, number, number, number]
      const env = {
        EMBEDDED_POSTGRES_DIR: path.join(dir, "postgres"),
        OBJECT_STORAGE_DIR: path.join(dir, "object-storage"),
        SVC_PORT: String(port),
        DOCS_PORT: String(docsPort),
        LISTINGS_PORT: String(listingsPort),
        QUEUE_PORT: String(queuePort),
        MCP_PORT: String(mcpPort),
        UPLOADS_PORT: String(uploadsPort),
        // one small package stands for the default documentation an empty index gets
        DOCS_DEFAULT_LIBRARIES: "he"
      }

      const first = svc(["start", "all"], env)
      assert.deepStrictEqual(yield* healthy([port], first), [{ status: "ok" }])
      const services = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/services`).then((r) => r.json()))
      assert.deepStrictEqual(services.services.map((service: any) => service.name), ["listings", "queue", "docs-api", "mcp", "uploads"])
      const openapi = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/openapi.json`).then((r) => r.json()))
      assert.strictEqual(openapi.info.title, "svc status", "the status server's OpenAPI document is titled for it")
      // the empty documentation index is filled in the background
      const search = `http://127.0.0.1:${docsPort}/api/v2/libs/search?libraryName=he`
      const found = yield* Effect.promise(() => fetch(search).then((r) => r.json())).pipe(
        Effect.repeat({ until: (body: any) => body.results?.[0]?.state === "ready", schedule: Schedule.spaced("200 millis") }),
        Effect.timeout("30 seconds")
      )
      assert.strictEqual(found.results[0].id, "/mathiasbynens/he")
      const pgPort = Number(/listening on 127\.0\.0\.1:(\d+)/.exec(first.output())?.[1])
      assert.isAbove(pgPort, 0)

      const stoppedAt = Date.now()
      first.child.kill("SIGINT")
      assert.strictEqual(yield* finished(first), 0)
      assert.isBelow(Date.now() - stoppedAt, 10_000, "Ctrl-C stops within seconds")
      assert.isFalse(yield* acceptsConnections(port), "the HTTP server is gone")
      assert.isFalse(yield* acceptsConnections(pgPort), "the embedded Postgres is stopped with the suite")

      const second = svc(["start", "all"], env)
      assert.deepStrictEqual(yield* healthy([port], second), [{ status: "ok" }])
      second.child.kill("SIGTERM")
      assert.strictEqual(yield* finished(second), 0)
      assert.notInclude(second.output(), "Initialising", "the second start reuses the data directory")
    }), { timeout: 120_000 })

  it.live("a second process on the embedded database (DATABASE_URL=$(svc db url)) keeps it after the owner is killed -9 and restarted", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("svc-cli-")
      const [docsPort, queuePort, otherPort] = (yield* spawnablePorts(3)) as [number, number, number]
      const data = { EMBEDDED_POSTGRES_DIR: path.join(dir, "postgres"), DOCS_DEFAULT_LIBRARIES: "none" }
      const owner = yield* started(["start", "docs-api"], { ...data, DOCS_PORT: String(docsPort) })
      yield* healthy([docsPort], owner)
      const url = yield* svcRun(["db", "url"], data)
      assert.strictEqual(url.code, 0, url.output)
      const databaseUrl = url.stdout.trim()
      const pgPort = Number(/@127\.0\.0\.1:(\d+)\//.exec(databaseUrl)?.[1])
      assert.match(owner.output(), new RegExp(`listening on 127\\.0\\.0\\.1:${pgPort},`))
      // a running cluster is reached on its own port, as a start beside it would share it
      const other = yield* svcRun(["db", "url"], { ...data, EMBEDDED_POSTGRES_PORT: String(otherPort) })
      assert.strictEqual(other.stdout.trim(), databaseUrl, other.output)

      const queue = yield* started(["start", "queue"], {
        DATABASE_URL: databaseUrl,
        QUEUE_PORT: String(queuePort),
        QUEUE_TOKEN: "t",
        QUEUE_ALLOW_PRIVATE: "true"
      })
      yield* healthy([queuePort], queue)
      const publish = Effect.promise(() =>
        fetch(`http://127.0.0.1:${queuePort}/v2/publish/http://127.0.0.1:${docsPort}/health`, {
          method: "POST",
          headers: { authorization: "Bearer t", "Svc-Method": "GET" }
        }).then((response) => response.status)
      )
      assert.strictEqual(yield* publish, 201)

      owner.child.kill("SIGKILL")
      yield* finished(owner)
      const restarted = yield* started(["start", "docs-api"], { ...data, DOCS_PORT: String(docsPort) })
      yield* healthy([docsPort], restarted)
      assert.match(restarted.output(), new RegExp(`(listening|running) on (127\\.0\\.0\\.1:|port )${pgPort}\\b`), "the same port")
      // the queue, started once with the URL, works again without a restart of its own
      const status = yield* publish.pipe(
        Effect.repeat({ schedule: Schedule.spaced("250 millis"), until: (status) => status === 201 }),
        Effect.timeout("30 seconds")
      )
      assert.strictEqual(status, 201)
      assert.strictEqual(queue.child.exitCode, null, "the second process is still running")
    }), { timeout: 180_000 })

  it.live("migrate: runs against the embedded database and reports per schema", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("svc-cli-")
      const run = svc(["migrate"], { EMBEDDED_POSTGRES_DIR: path.join(dir, "postgres") })
      assert.strictEqual(yield* finished(run), 0, run.output())
      assert.match(run.output(), /Nothing to migrate|: (applied|up to date)/)
    }), { timeout: 60_000 })

  it.live("a usage error is one line on stderr naming the problem and where the help is, not the help page", () =>
    Effect.gen(function*() {
      for (
        const [args, problem] of [
          [["nope"], `Unknown subcommand "nope" for "svc"`],
          [["docs", "add", "./x", "--trust", "11"], "--trust must be a whole number from 0 to 10, not 11"]
        ] as const
      ) {
        const run = svc(args, {})
        assert.strictEqual(yield* finished(run), 1)
        assert.strictEqual(run.stdout(), "", "no help page")
        const lines = run.output().trimEnd().split("\n")
        assert.strictEqual(lines.length, 1, run.output())
        assert.match(lines[0]!, /^svc: .* \(see: svc.* --help\)$/)
        assert.include(lines[0]!, problem)
      }
    }), { timeout: 60_000 })

  it.live("a refusal reads as its cause: the token variable and status, or the network error", () =>
    Effect.gen(function*() {
      // A service that refuses every call the way the suite's RPC routes do: 401 with the error body.
      const refusing = yield* Effect.acquireRelease(
        Effect.callback<Http.Server>((resume) => {
          const server = Http.createServer((req, res) => {
            req.resume()
            res.writeHead(401, { "content-type": "application/json" })
            res.end(JSON.stringify({ code: "unauthorized", message: "Invalid bearer token" }))
          })
          server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
        }),
        (server) =>
          Effect.callback<void>((resume) => {
            server.closeAllConnections()
            server.close(() => resume(Effect.void))
          })
      ).pipe(Effect.map((server) => `http://127.0.0.1:${(server.address() as { port: number }).port}`))
      const nobody = `http://127.0.0.1:${yield* spawnablePort()}`

      const ingest = yield* svcRun(["listings", "ingest"], { LISTINGS_URL: refusing, ADMIN_TOKEN: "wrong" })
      assert.strictEqual(ingest.code, 1)
      assert.strictEqual(ingest.output, `svc: listings at ${refusing} refused ADMIN_TOKEN (401): Invalid bearer token\n`)
      const unreachable = yield* svcRun(["listings", "ingest"], { LISTINGS_URL: nobody, ADMIN_TOKEN: "t" })
      assert.strictEqual(unreachable.code, 1)
      assert.match(unreachable.output, new RegExp(`^svc: no answer from listings at ${nobody}: connect ECONNREFUSED [\\d.:]+\n$`))

      const docs = yield* svcRun(["docs", "list"], { DOCS_URL: refusing, DOCS_ADMIN_TOKEN: "wrong" })
      assert.strictEqual(docs.code, 1)
      assert.strictEqual(docs.output, `svc: docs-api at ${refusing} refused DOCS_ADMIN_TOKEN (401): Invalid bearer token\n`)
      const docsUnreachable = yield* svcRun(["docs", "list"], { DOCS_URL: nobody, DOCS_ADMIN_TOKEN: "t" })
      assert.strictEqual(docsUnreachable.code, 1)
      assert.match(docsUnreachable.output, new RegExp(`^svc: no answer from docs-api at ${nobody}: connect ECONNREFUSED`))
    }), { timeout: 90_000 })

  it.live("listings ingest on a service with no enabled source says so, exit 1 (it printed nothing and exited 0)", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("svc-no-source-")
      const [port, statusPort] = (yield* spawnablePorts(2)) as [number, number]
      const env = {
        EMBEDDED_POSTGRES_DIR: path.join(dir, "pg"),
        LISTINGS_PORT: String(port),
        SVC_PORT: String(statusPort),
        ADMIN_TOKEN: "no-source-admin-token",
        OFFER_IMAGES_STORAGE: "off"
      }
      const server = yield* started(["start", "listings"], env)
      yield* healthy([port], server)
      for (const args of [["listings", "ingest"], ["listings", "ingest", "--wait"]]) {
        const ingest = yield* svcRun(args, { LISTINGS_URL: `http://127.0.0.1:${port}`, ADMIN_TOKEN: env.ADMIN_TOKEN })
        assert.strictEqual(ingest.code, 1, ingest.output)
        assert.strictEqual(ingest.stdout, "")
        assert.include(ingest.stderr, `svc: listings at http://127.0.0.1:${port} started no ingest run: it has no enabled source`)
      }
    }).pipe(Effect.scoped), { timeout: 120_000 })

  it.live("a service URL or token that cannot be sent, or an argument the RPC refuses, is one line naming it and never the secret", () =>
    Effect.gen(function*() {
      const nobody = `http://127.0.0.1:${yield* spawnablePort()}`
      const cases: ReadonlyArray<readonly [ReadonlyArray<string>, Record<string, string>, string]> = [
        [["queue", "dlq", "list"], { QUEUE_URL: nobody, QUEUE_TOKEN: "tok\nX-Evil: 1" }, "svc: QUEUE_TOKEN holds a space, a line break or another character an HTTP header cannot carry\n"],
        [["queue", "dlq", "list"], { QUEUE_URL: "http://admin:hunter2@127.0.0.1:1", QUEUE_TOKEN: "t" }, "svc: QUEUE_URL must not hold a user or password (the token goes in QUEUE_TOKEN)\n"],
        [["queue", "dlq", "list"], { QUEUE_URL: "not-a-url", QUEUE_TOKEN: "t" }, "svc: QUEUE_URL must be an http(s) URL\n"],
        [["listings", "ingest"], { LISTINGS_URL: "http://admin:hunter2@127.0.0.1:1", ADMIN_TOKEN: "t" }, "svc: LISTINGS_URL must not hold a user or password (the token goes in ADMIN_TOKEN)\n"],
        [["docs", "list"], { DOCS_URL: "ftp://127.0.0.1/", DOCS_ADMIN_TOKEN: "t" }, "svc: DOCS_URL must be an http(s) URL, not ftp:\n"],
        // only whitespace is no URL: it was "must be an http(s) URL"; empty is unset (the default, or for DOCS_URL the database)
        [["queue", "dlq", "list"], { QUEUE_URL: "  ", QUEUE_TOKEN: "t" }, "svc: invalid configuration: QUEUE_URL is only whitespace: give a URL, or leave it unset\n"],
        [["listings", "ingest"], { LISTINGS_URL: "\t", ADMIN_TOKEN: "t" }, "svc: invalid configuration: LISTINGS_URL is only whitespace: give a URL, or leave it unset\n"],
        [["docs", "list"], { DOCS_URL: " ", DOCS_ADMIN_TOKEN: "t" }, "svc: invalid configuration: DOCS_URL is only whitespace: give a URL, or leave it unset\n"],
        [["mcp", "--transport", "stdio"], { DOCS_API_URL: " " }, "svc: invalid configuration: DOCS_API_URL is only whitespace: give a URL, or leave it unset\n"],
        [["queue", "groups", "get", "g".repeat(300)], { QUEUE_URL: nobody, QUEUE_TOKEN: "t" }, "svc: Invalid request: name: must be at most 200 characters long\n"]
      ]
      for (const [args, env, expected] of cases) {
        const run = yield* svcRun(args, env)
        assert.strictEqual(run.code, 1, args.join(" "))
        assert.strictEqual(run.output, expected, args.join(" "))
        assert.notInclude(run.output, "hunter2")
      }
      const noSource = yield* svcRun(["listings", "ingest", "--source", " , "], { LISTINGS_URL: nobody, ADMIN_TOKEN: "t" })
      assert.strictEqual(noSource.output, "svc: --source names no source: give a source id (svc listings ingest without --source runs every enabled one) (see: svc listings ingest --help)\n")
      // a result that cannot be written is a failure (the key of `docs keys create > file` on a full disk)
      const full = spawnSync(process.execPath, [bin, "--help"], { stdio: ["ignore", openSync("/dev/full", "w"), "pipe"], encoding: "utf8" })
      assert.strictEqual(full.status, 1)
      assert.strictEqual(full.stderr, "svc: could not write the output (ENOSPC)\n")
      // control characters are shown escaped, never sent to the terminal; a huge value is cut
      const escaped = yield* svcRun(["no\u001b[31msuch"])
      assert.include(escaped.output, "no\\u001b[31msuch")
      assert.notInclude(escaped.output, "\u001b")
      const huge = yield* svcRun(["queue", "dlq", "list", "--limit", "9".repeat(5000)])
      assert.strictEqual(huge.code, 1)
      assert.isBelow(huge.output.length, 1100)
      assert.match(huge.output, /^svc: [^\n]*\n$/)
    }), { timeout: 90_000 })

  it.live("svc mcp --transport http honours HOST and MCP_PORT, and moves up when the port is taken", () =>
    Effect.gen(function*() {
      const port = yield* spawnablePort()
      const taken = yield* Effect.acquireRelease(
        Effect.callback<Http.Server>((resume) => {
          const server = Http.createServer((_req, res) => res.end())
          server.listen(port, "127.0.0.1", () => resume(Effect.succeed(server)))
        }),
        (server) => Effect.callback<void>((resume) => {
          server.close(() => resume(Effect.void))
        })
      )
      const server = yield* started(["mcp", "--transport", "http"], { MCP_PORT: String(port), DOCS_PORT: "18789" })
      const listening = yield* Effect.sync(() => /Listening on (http:\/\/[^ "]+)/.exec(server.output())?.[1]).pipe(
        Effect.repeat({ schedule: Schedule.spaced("200 millis"), until: (url) => url !== undefined || server.child.exitCode !== null }),
        Effect.timeout("60 seconds")
      )
      assert.strictEqual(listening, `http://127.0.0.1:${port + 1}`, server.output())
      assert.include(server.output(), `Port ${port} is taken: using ${port + 1}`)
      assert.include(server.output(), "Documentation API at http://127.0.0.1:18789", "DOCS_API_URL follows DOCS_PORT and HOST")
      assert.strictEqual(server.stdout(), "", "logs on stderr")
      assert.isDefined(taken)
    }), { timeout: 90_000 })

  it.live("an unknown or unlanded service and bad configuration are one clear line and exit 1", () =>
    Effect.gen(function*() {
      const unknown = svc(["start", "nope"], {})
      assert.strictEqual(yield* finished(unknown), 1)
      assert.include(unknown.output(), `Invalid value for argument <service>: "nope"`)
      const dir = yield* tempDir("svc-migrate-")
      // refused before anything starts: the embedded cluster was started (and created) first
      for (const args of [["migrate", "nope"], ["migrate", "listings", "nope"]]) {
        const unknownSchema = svc(args, { EMBEDDED_POSTGRES_DIR: path.join(dir, "postgres") })
        assert.strictEqual(yield* finished(unknownSchema), 1)
        assert.match(
          unknownSchema.output(),
          /^svc: No service "nope" has migrations: give one of [a-z, -]*listings[a-z, -]* \(or none, for all\) \(see: svc migrate --help\)\n$/
        )
        assert.isFalse(yield* Effect.promise(() => fs.access(path.join(dir, "postgres")).then(() => true, () => false)), "no cluster made")
      }

      const badLevel = svc(["migrate"], { LOG_LEVEL: "loud" })
      assert.strictEqual(yield* finished(badLevel), 1)
      assert.include(badLevel.output(), "svc: invalid configuration")
      assert.include(badLevel.output(), "LOG_LEVEL")
      assert.notInclude(badLevel.output(), "    at ", "no stack trace")
    }), { timeout: 60_000 })

  it.live("a setting out of its range stops the start naming the variable, before any database starts, instead of a service that never works", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("svc-settings-")
      const data = { EMBEDDED_POSTGRES_DIR: path.join(dir, "pg"), OBJECT_STORAGE_DIR: path.join(dir, "os") }
      const cases: ReadonlyArray<readonly [service: string, env: Record<string, string>, expected: string]> = [
        // a worker of concurrency 0 claimed nothing: every message stayed queued
        ["queue", { QUEUE_CONCURRENCY: "0" }, `invalid configuration: Expected a value between 1 and 10000 at ["QUEUE_CONCURRENCY"]`],
        ["queue", { QUEUE_DEFAULT_RETRIES: "1000" }, "QUEUE_DEFAULT_RETRIES (1000) must be at most QUEUE_MAX_RETRIES (100)"],
        // an interval of 0 skipped runs in a loop at full CPU
        ["listings", { INGEST_INTERVAL: "0 seconds" }, `must be at least 1 second at ["INGEST_INTERVAL"]`],
        ["listings", { PUBLIC_BASE_URL: "javascript:alert(1)" }, `must be an absolute http or https URL`],
        // these three were read only after the embedded cluster had been created and migrated
        ["listings", { IMAGE_MAX_BYTES: "lots" }, `at ["IMAGE_MAX_BYTES"]`],
        ["listings", { SOURCES_FILE: path.join(dir, "missing.json") }, `SOURCES_FILE ${path.join(dir, "missing.json")} cannot be read`],
        ["queue", { QUEUE_SCHEDULE_CATCH_UP: "soon" }, `at ["QUEUE_SCHEDULE_CATCH_UP"]`],
        ["docs-api", { DOCS_RESUME_INTERVAL: "0 seconds" }, `must be at least 1 second at ["DOCS_RESUME_INTERVAL"]`],
        ["docs-api", { DOCS_RATE_LIMIT_ANONYMOUS: "0" }, `at ["DOCS_RATE_LIMIT_ANONYMOUS"]`],
        ["mcp", { DOCS_API_URL: "http://" }, `DOCS_API_URL must be an absolute http or https URL`],
        // the MCP server logged the URL it uses at start, password and all
        ["mcp", { DOCS_API_URL: "http://u:p@127.0.0.1:8789" }, `DOCS_API_URL must not hold a user name or password`],
        // an HMAC key of one space signed any forwarded address
        ["mcp", { DOCS_FORWARD_SECRET: " " }, "DOCS_FORWARD_SECRET must be at least 16 characters"],
        // checked before the object storage starts
        ["uploads", { UPLOADS_MAX_SIZE: "abc" }, `(got "abc") at ["UPLOADS_MAX_SIZE"]`],
        // refused before the cluster starts: its port would be remembered, and the clash outlive the variable
        ["queue", { QUEUE_PORT: "18788", EMBEDDED_POSTGRES_PORT: "18788" }, "EMBEDDED_POSTGRES_PORT 18788 is QUEUE_PORT's port"],
        // every port is read before anything listens (the other services answered for a moment)
        ["all", { QUEUE_PORT: "99999" }, `Expected a value between 1 and 65535 at ["QUEUE_PORT"]`],
        // two services on one port: the status server and mcp listened before listings failed "address in use"
        ["all", { LISTINGS_PORT: "18792", SVC_PORT: "18792" }, "SVC_PORT and LISTINGS_PORT are both 18792: give each service its own port"]
      ]
      for (const [service, env, expected] of cases) {
        const run = svc(["start", service], { ...data, ...env })
        assert.strictEqual(yield* finished(run), 1, run.output())
        const last = run.stderr().trim().split("\n").at(-1)!
        assert.include(last, expected)
        assert.match(last, /^svc: /)
        assert.notInclude(run.output(), "    at ", "no stack trace")
        assert.notInclude(run.output(), "Listening on", "refused before any server listens")
        assert.notInclude(run.output(), "u:p@", "a refused URL's credentials are not repeated")
        assert.notInclude(run.output(), "Embedded Postgres", "refused before the database starts")
      }
      // no case made a data folder
      assert.deepStrictEqual(yield* Effect.promise(() => fs.readdir(dir)), [])
    }), { timeout: 120_000 })

  it.live("a data folder setting naming a file says so, naming the variable, before anything starts", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("svc-folder-file-")
      const file = path.join(dir, "data")
      yield* Effect.promise(() => fs.writeFile(file, ""))
      // `db url` said "No embedded Postgres in <file> yet", `migrate` "an earlier first start … was
      // interrupted" and then ENOTDIR, `start uploads` mkdir's "Not a directory" from the object storage's script
      for (
        const [args, env, expected] of [
          [["db", "url"], { EMBEDDED_POSTGRES_DIR: file }, `EMBEDDED_POSTGRES_DIR is ${file}: a file, not a folder`],
          [["migrate"], { EMBEDDED_POSTGRES_DIR: file }, `EMBEDDED_POSTGRES_DIR is ${file}: a file, not a folder`],
          [["migrate"], { EMBEDDED_POSTGRES_DIR: path.join(file, "pg") }, `EMBEDDED_POSTGRES_DIR is ${path.join(file, "pg")}: under ${file}, a file, not a folder`],
          [["start", "uploads"], { OBJECT_STORAGE_DIR: file, UPLOADS_PORT: String(yield* spawnablePort()) }, `OBJECT_STORAGE_DIR is ${file}: a file, not a folder`]
        ] as const
      ) {
        const run = yield* svcRun(args, env)
        assert.strictEqual(run.code, 1, run.output)
        assert.strictEqual(run.stdout, "")
        assert.strictEqual(run.stderr.trim().split("\n").at(-1), `svc: invalid configuration: ${expected}; give a folder, or leave it unset for ${args[0] === "start" ? ".data/object-storage" : ".data/postgres"}`)
        assert.notInclude(run.output, "Initialising")
      }
      // nothing was made beside the file (a start left <file>.initialising and <file>.lock)
      assert.deepStrictEqual(yield* Effect.promise(() => fs.readdir(dir)), ["data"])
    }), { timeout: 120_000 })

  it.live("a service that needs no database, started alone, starts none (svc start mcp, svc start uploads)", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("svc-no-db-")
      const [mcpPort, uploadsPort] = (yield* spawnablePorts(2)) as [number, number]
      const data = { EMBEDDED_POSTGRES_DIR: path.join(dir, "pg"), OBJECT_STORAGE_DIR: path.join(dir, "os") }
      for (const [service, env, port] of [["mcp", { MCP_PORT: String(mcpPort) }, mcpPort], ["uploads", { UPLOADS_PORT: String(uploadsPort) }, uploadsPort]] as const) {
        const run = yield* started(["start", service], { ...data, ...env })
        yield* healthy([port], run)
        assert.notInclude(run.stderr(), "Embedded Postgres", service)
        assert.isFalse(yield* Effect.promise(() => fs.access(data.EMBEDDED_POSTGRES_DIR).then(() => true, () => false)), `${service} made a Postgres folder`)
      }
    }).pipe(Effect.scoped), { timeout: 120_000 })

  it.live("a start whose port is taken fails before its background work starts: no worker, no ingest", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("svc-taken-")
      const port = yield* spawnablePort()
      yield* occupy(port)
      const data = { EMBEDDED_POSTGRES_DIR: path.join(dir, "pg"), OBJECT_STORAGE_DIR: path.join(dir, "os") }
      const cases: ReadonlyArray<readonly [service: string, env: Record<string, string>, background: RegExp]> = [
        // a second queue on a taken port started its worker (and could claim messages) before it failed
        ["queue", { QUEUE_PORT: String(port), QUEUE_TOKEN: "t" }, /Queue worker started|Scheduler started/],
        ["listings", { LISTINGS_PORT: String(port), ENABLE_MOCK_SOURCE: "true", OFFER_IMAGES_STORAGE: "off" }, /Ingest of |Scheduled ingest/]
      ]
      for (const [service, env, background] of cases) {
        const run = svc(["start", service], { ...data, ...env })
        assert.strictEqual(yield* finished(run), 1, run.output())
        assert.include(run.stderr(), `cannot listen on 127.0.0.1:${port} (address in use)`)
        assert.notMatch(run.output(), background)
      }
    }).pipe(Effect.scoped), { timeout: 120_000 })

  it.live("queue dlq / groups: operate a running queue over its RPC; each failure is one line and exit 1", () =>
    Effect.gen(function*() {
      const token = "cli-queue-token"
      const destination = yield* failingDestination
      const { env } = yield* startedQueue(token)
      const queueUrl = env.QUEUE_URL

      const noGroups = yield* svcRun(["queue", "groups", "list"], env)
      assert.strictEqual(noGroups.code, 0, noGroups.output)
      assert.strictEqual(noGroups.stdout, "No URL groups.\n")

      // No retries and a destination that always fails: straight to the DLQ.
      const published = yield* Effect.promise(() =>
        fetch(`${queueUrl}/v2/publish/${destination}/orders`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "Svc-Retries": "0" },
          body: "order 1"
        }).then((response) => response.json() as Promise<{ messageId: string }>)
      )
      const dlqId = yield* Effect.tryPromise(() =>
        fetch(`${queueUrl}/v2/dlq`, { headers: { authorization: `Bearer ${token}` } })
          .then((response) => response.json() as Promise<{ messages: Array<{ dlqId: string }> }>)
          .then(({ messages }) => messages[0]?.dlqId ?? Promise.reject(new Error("not in the DLQ yet")))
      ).pipe(Effect.retry({ schedule: Schedule.spaced("200 millis"), times: 100 }))

      const list = yield* svcRun(["queue", "dlq", "list"], env)
      assert.strictEqual(list.code, 0, list.output)
      const lines = list.stdout.trimEnd().split("\n")
      assert.strictEqual(lines.length, 1, list.stdout)
      assert.match(lines[0]!, new RegExp(`^${dlqId}  POST ${destination}/orders  answered 500 after 0 retries, failed \\d{4}-`))
      const listJson = yield* svcRun(["queue", "dlq", "list", "--limit", "5", "--url", `${destination}/orders`, "--json"], env)
      assert.strictEqual(listJson.code, 0, listJson.output)
      const page = JSON.parse(listJson.stdout)
      assert.deepStrictEqual(page.messages.map((m: any) => [m.dlqId, m.messageId]), [[dlqId, published.messageId]])

      const added = yield* svcRun(["queue", "groups", "add", "orders", `${destination}/billing`, "--endpoint-name", "billing"], env)
      assert.strictEqual(added.code, 0, added.output)
      assert.strictEqual(added.stdout, `orders  1 endpoint: billing=${destination}/billing\n`)
      // spaces around the URL, as a copy-paste leaves them, are dropped (they passed the URL check, then the call failed)
      const groups = yield* svcRun(["queue", "groups", "list"], { ...env, QUEUE_URL: ` ${queueUrl} ` })
      assert.strictEqual(groups.stdout, `orders  1 endpoint: billing=${destination}/billing\n`)
      const group = yield* svcRun(["queue", "groups", "get", "orders", "--json"], env)
      assert.deepInclude(JSON.parse(group.stdout), { name: "orders", endpoints: [{ name: "billing", url: `${destination}/billing` }] })
      const groupText = yield* svcRun(["queue", "groups", "get", "orders"], env)
      assert.strictEqual(groupText.code, 0, groupText.output)
      assert.match(groupText.stdout, new RegExp(`^orders  1 endpoint: billing=${destination}/billing\n  created \\d{4}-[^\n]*, updated \\d{4}-[^\n]*\n$`))
      const deleted = yield* svcRun(["queue", "groups", "delete", "orders"], env)
      assert.strictEqual(deleted.stdout, "orders: deleted\n")
      const gone = yield* svcRun(["queue", "groups", "get", "orders"], env)
      assert.strictEqual(gone.code, 1)
      assert.strictEqual(gone.output, "svc: No URL group named orders\n")

      const retried = yield* svcRun(["queue", "dlq", "retry", dlqId], env)
      assert.strictEqual(retried.code, 0, retried.output)
      assert.strictEqual(retried.stdout, `${dlqId}: re-enqueued message ${published.messageId} (its retries start over)\n`)
      const retriedTwice = yield* svcRun(["queue", "dlq", "delete", dlqId], env)
      assert.strictEqual(retriedTwice.code, 1)
      assert.strictEqual(retriedTwice.output, `svc: No dead-letter message with id ${dlqId}\n`)

      const noToken = yield* svcRun(["queue", "dlq", "list"], { QUEUE_URL: queueUrl, QUEUE_TOKEN: undefined })
      assert.strictEqual(noToken.code, 1)
      assert.strictEqual(noToken.output, "svc: QUEUE_TOKEN is not set: the queue RPC needs it\n")
      const wrongToken = yield* svcRun(["queue", "groups", "list"], { QUEUE_URL: queueUrl, QUEUE_TOKEN: "wrong" })
      assert.strictEqual(wrongToken.code, 1)
      assert.strictEqual(wrongToken.output, `svc: the queue at ${queueUrl} refused QUEUE_TOKEN (401): Invalid bearer token\n`)
      // any other error answer is told with its status (it read "no answer … Received empty HTTP response")
      const hugeToken = yield* svcRun(["queue", "groups", "list"], { QUEUE_URL: queueUrl, QUEUE_TOKEN: "a".repeat(100_000) })
      assert.strictEqual(hugeToken.code, 1)
      assert.match(hugeToken.output, new RegExp(`^svc: the queue at ${queueUrl.replaceAll(".", "\\.")} answered 431`))
      const wrongPath = yield* svcRun(["queue", "groups", "list"], { QUEUE_URL: `${queueUrl}/nope`, QUEUE_TOKEN: "wrong" })
      assert.match(wrongPath.output, / answered 404/)
    }), { timeout: 120_000 })
})
