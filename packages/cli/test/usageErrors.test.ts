/**
 * A refusal of the arguments or flags given is a usage error wherever it is found: one line on stderr,
 * `svc: <problem> (see: svc <command> --help)`, exit 1, nothing on stdout. The parser's own carried the
 * pointer to the help, the commands' own refusals did not (an outside audit). Real `svc` processes.
 */
import { assert, describe, it } from "@effect/vitest"
import { tempDir } from "@svc/platform/testing"
import { Effect } from "effect"
import { spawnSync } from "node:child_process"
import * as path from "node:path"
import { bin, svcRun } from "./svcProcess.ts"

/** A queue nobody listens on: a refusal made before any call never gets to it. */
const nowhere = { QUEUE_URL: "http://127.0.0.1:9", QUEUE_TOKEN: "t", LISTINGS_URL: "http://127.0.0.1:9", ADMIN_TOKEN: "t" }

const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string, string]> = [
  [["queue", "cancel"], "name the messages to cancel: ids, a filter flag, or --all for every one", "svc queue cancel"],
  [["queue", "dlq", "delete-all"], "name the DLQ entries: ids, a filter flag, or --all for every one", "svc queue dlq delete-all"],
  [["queue", "schedules", "add", "http://example.com/", "* * * * *", "--header", "nocolon"], `--header "nocolon": expected "Name: value"`, "svc queue schedules add"],
  [
    ["queue", "schedules", "add", "http://example.com/", "* * * * *", "--header", "X-Id: 1"],
    `--header "X-Id" would not reach the destination: name it Svc-Forward-X-Id, or add --header "Svc-Header-Forward: true"`,
    "svc queue schedules add"
  ],
  [["listings", "ingest", "--source", ""], "--source names no source: give a source id", "svc listings ingest"],
  [["mcp", "--transport", "stdio", "--port", "3000"], "--port is for --transport http; stdio needs no port", "svc mcp"],
  [["mcp", "--transport", "http", "--api-key", "k"], "--api-key is for --transport stdio", "svc mcp"],
  [["docs", "add", "ftp://example.com/docs"], "ftp:// is not a source", "svc docs add"],
  // numbers in decimal digits, as the services take them (Flag.Int read 1e2 as 100, +5 as 5)
  [["queue", "events", "--count", "1e2"], `--count must be a whole number in decimal digits, not "1e2"`, "svc queue events"],
  [["queue", "dlq", "list", "--limit", "+5"], `--limit must be a whole number in decimal digits, not "+5"`, "svc queue dlq list"],
  [["mcp", "--port", "5.0"], `--port must be a whole number in decimal digits, not "5.0"`, "svc mcp"]
]

describe("a usage error found by the command", () => {
  it.live("is one line naming the problem and where the help is, exit 1, nothing on stdout", () =>
    Effect.gen(function*() {
      for (const [args, problem, command] of cases) {
        const run = yield* svcRun(args, nowhere)
        assert.strictEqual(run.code, 1, `${args.join(" ")}: ${run.output}`)
        assert.strictEqual(run.stdout, "", args.join(" "))
        const lines = run.stderr.trimEnd().split("\n")
        assert.strictEqual(lines.length, 1, run.stderr)
        assert.include(lines[0]!, problem)
        assert.match(lines[0]!, new RegExp(`^svc: .+ \\(see: ${command} --help\\)$`), run.stderr)
      }
    }), 180_000)

  it.live("svc docs keys create with a flag value the key cannot take (--sources ftp), refused before the database is opened", () =>
    Effect.gen(function*() {
      // a database nobody listens on: the refusal comes first (it opened the database, or started the embedded cluster, before)
      const env = { DATABASE_URL: "postgres://svc@127.0.0.1:9/nowhere" }
      const run = yield* svcRun(["docs", "keys", "create", "--sources", "ftp"], env)
      assert.strictEqual(run.code, 1, run.output)
      assert.strictEqual(run.stdout, "")
      assert.strictEqual(
        run.stderr,
        `svc: Source "ftp" is not one of folder, npm, git, website, openapi (see: svc docs keys create --help)\n`
      )
    }), 120_000)

  it.live("--wizard without a terminal is refused at once: it said \"Wizard cancelled.\" and exited 0, and piped keystrokes ran a command", () =>
    Effect.gen(function*() {
      const refusal = "svc: --wizard needs a terminal to ask its questions, and neither stdin nor stdout is one: " +
        "give the command with its arguments and flags instead (settings come from the environment) (see: svc --help)\n"
      for (const args of [["--wizard"], ["migrate", "--wizard"], ["db", "--wizard=true"]]) {
        const run = yield* svcRun(args)
        assert.strictEqual(run.code, 1, `${args.join(" ")}: ${run.output}`)
        assert.strictEqual(run.stdout, "", args.join(" "))
        assert.strictEqual(run.stderr, refusal, args.join(" "))
      }
      // keystrokes from a pipe: Enter chose `svc db url` and ran it
      const dir = yield* tempDir("svc-wizard-")
      const { DATABASE_URL: _, ...env } = process.env
      const piped = spawnSync(process.execPath, [bin, "db", "--wizard"], {
        input: "\r\r\r\r\r\r",
        encoding: "utf8",
        timeout: 60_000,
        env: { ...env, EMBEDDED_POSTGRES_DIR: path.join(dir, "postgres") }
      })
      assert.strictEqual(piped.status, 1, piped.stdout + piped.stderr)
      assert.strictEqual(piped.stdout, "")
      assert.strictEqual(piped.stderr, refusal)
      // after `--` it is an argument, not the flag
      const operand = yield* svcRun(["db", "url", "--", "--wizard"])
      assert.strictEqual(operand.stderr, `svc: Unexpected positional argument: "--wizard" (see: svc db url --help)\n`)
    }), 120_000)
})
