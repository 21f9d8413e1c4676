/**
 * `svc mcp`: the documentation lookup's MCP server, for a coding agent.
 *
 * - `--transport http` (default): stateless Streamable HTTP on `--port` (default 8790, the next free
 *   port when taken). Keys come with each request (`Authorization: Bearer`, `X-Svc-API-Key`,
 *   `X-API-Key`), so `--api-key` is refused.
 * - `--transport stdio`: one client over stdin/stdout; the key is `--api-key` or `SVC_API_KEY`, and
 *   `--port` is refused. Logs go to stderr (stdout carries the protocol).
 *
 * Either way the tools call the REST API v2 at `DOCS_API_URL` (default http://localhost:<DOCS_PORT>).
 */
import { Mcp } from "@svc/docs"
import { launchServer } from "@svc/platform"
import { Config, Effect, Option, Redacted } from "effect"
import { Command, Flag } from "effect/cli"
import { wholeNumberFlag } from "./WholeNumberFlag.ts"
import { UsageError } from "./CommandFailed.ts"

const usage = (problem: string) => Effect.fail(new UsageError(["svc", "mcp"], problem))

export const mcp = Command.make(
  "mcp",
  {
    transport: Flag.Literals("transport", ["http", "stdio"]).pipe(
      Flag.withDescription("http: stateless Streamable HTTP on --port; stdio: one client on stdin/stdout"),
      Flag.withDefault("http" as const)
    ),
    port: wholeNumberFlag("port").pipe(
      // a port the system could not give (-1, 99999) read as "all taken" or as an unexpected error; 0, as a random one
      Flag.filter((port) => port >= 1 && port <= 65535, (port) => `--port must be a port from 1 to 65535, not ${port}`),
      Flag.withDescription(`HTTP port (default MCP_PORT or ${Mcp.DEFAULT_PORT}; the next free one is used when it is taken)`),
      Flag.optional
    ),
    apiKey: Flag.Redacted("api-key").pipe(
      Flag.withDescription("stdio only: the API key sent to the documentation API (default: SVC_API_KEY)"),
      Flag.optional
    )
  },
  Effect.fn(function*({ transport, port, apiKey }) {
    if (transport === "http") {
      if (Option.isSome(apiKey)) {
        return yield* usage(
          "--api-key is for --transport stdio; over HTTP each client sends its key in the Authorization header"
        )
      }
      return yield* launchServer(Mcp.httpLayer({ port: Option.getOrUndefined(port), nextFreePort: true }))
    }
    if (Option.isSome(port)) {
      return yield* usage("--port is for --transport http; stdio needs no port")
    }
    const fromEnv = yield* Config.option(Config.Redacted("SVC_API_KEY"))
    // a key given as nothing but whitespace (`--api-key ""`, `SVC_API_KEY="  "`) ran the server
    // anonymously without a word; an empty SVC_API_KEY is unset, as for every setting
    const blank = Option.isSome(apiKey)
      ? Redacted.value(apiKey.value).trim() === ""
      : Option.isSome(fromEnv) && Redacted.value(fromEnv.value) !== "" && Redacted.value(fromEnv.value).trim() === ""
    if (blank) {
      return yield* usage(
        `${Option.isSome(apiKey) ? "--api-key" : "SVC_API_KEY"} is empty: give the key, or leave both unset to call anonymously`
      )
    }
    // a key from a file written on Windows ends in \r: the ends' whitespace is no part of any key
    const key = Option.orElse(apiKey, () => fromEnv).pipe(Option.map((key) => Redacted.value(key).trim()), Option.getOrUndefined)
    // a header cannot carry it: every call would fail as "the documentation service could not be reached"
    if (key !== undefined && /[^\x21-\x7e]/.test(key)) {
      return yield* usage(
        "--api-key (or SVC_API_KEY) holds a space or a character a header cannot carry: give the key alone"
      )
    }
    // its logs go to stderr with every command's (Logging.layer): over stdio, stdout carries the protocol alone
    yield* Mcp.runStdio({ apiKey: key === "" ? undefined : key })
  })
).pipe(
  Command.withDescription("Run the documentation lookup's MCP server (tools resolve-library-id, query-docs)"),
  Command.withExamples([
    { command: "svc mcp --transport http --port 8790", description: "For agents connecting over HTTP" },
    { command: "svc mcp --transport stdio --api-key svcsk_...", description: "For an agent that spawns the server" }
  ])
)
