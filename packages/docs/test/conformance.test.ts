/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`) against the MCP HTTP server,
 * started here on a free 127.0.0.1 port with the real REST API (and a database with one library)
 * behind it: every server scenario of the 2025-11-25 revision that applies to a stateless server with
 * two tools and nothing else. Which scenarios apply, and why the others do not: packages/docs/README.md
 * ("Conformance"). Each scenario runs as its own `conformance server --scenario <name>` process (on
 * this Node, `process.execPath`), writing its results into a temporary folder; every check must pass.
 */
import { assert, layer } from "@effect/vitest"
import { serve } from "@svc/platform"
import { tempDir } from "@svc/platform/testing"
import { Context, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { execFile } from "node:child_process"
import * as fs from "node:fs/promises"
import { createRequire } from "node:module"
import * as path from "node:path"
import { Indexer } from "../src/Indexer.ts"
import { DocsClient } from "../src/mcp/DocsClient.ts"
import { routes as mcpRoutes } from "../src/mcp/McpHttp.ts"
import { Client, docsFolder, socketClient, stack } from "./support.ts"

/** The server scenarios that apply (see the README for the others). */
export const APPLICABLE_SCENARIOS = [
  "server-initialize",
  "ping",
  "tools-list",
  "dns-rebinding-protection"
] as const

const bin = path.join(
  path.dirname(createRequire(import.meta.url).resolve("@modelcontextprotocol/conformance/package.json")),
  "dist/index.js"
)

interface Check {
  readonly id: string
  readonly status: string
  readonly errorMessage?: string
}

/** Runs one scenario; its exit code, output and the checks it saved. */
const runScenario = (url: string, scenario: string, outputDir: string) =>
  Effect.gen(function*() {
    const run = yield* Effect.promise(() =>
      new Promise<{ code: number; output: string }>((resolve) => {
        execFile(
          process.execPath,
          [bin, "server", "--url", url, "--scenario", scenario, "--output-dir", outputDir],
          { timeout: 60_000, env: { ...process.env, NO_COLOR: "1" } },
          (error, stdout, stderr) =>
            resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : -1, output: stdout + stderr })
        )
      })
    )
    const checks = yield* Effect.promise(async () => {
      const found: Array<Check> = []
      for (const entry of await fs.readdir(outputDir, { recursive: true })) {
        // <outputDir>/server-<scenario>-<time>/checks.json
        if (path.basename(String(entry)) === "checks.json" && String(entry).startsWith(`server-${scenario}-`)) {
          found.push(...JSON.parse(await fs.readFile(path.join(outputDir, String(entry)), "utf8")) as Array<Check>)
        }
      }
      return found
    })
    return { ...run, checks }
  })

class McpUrl extends Context.Service<McpUrl, string>()("test/McpUrl") {}

const Seeded = Layer.effectDiscard(Effect.gen(function*() {
  const indexer = yield* Indexer
  yield* indexer.add(
    yield* docsFolder({
      "README.md": "# Widgets\n\nAcme widgets render dashboards with configurable widget options and themes.\n"
    }),
    { id: "/acme/widgets", version: "1.0.0" }
  )
}))

/** The MCP HTTP server on 127.0.0.1:<free port>, calling the REST API under test. */
const McpLive = Layer.unwrap(Effect.gen(function*() {
  const api = yield* Client
  return Layer.effect(
    McpUrl,
    Effect.gen(function*() {
      const { address } = yield* HttpServer.HttpServer
      return `http://127.0.0.1:${address._tag === "UnixPathAddress" ? 0 : address.port}/mcp`
    })
  ).pipe(
    Layer.provide(
      serve(mcpRoutes, { name: "mcp", port: 0, host: "127.0.0.1" }).pipe(
        Layer.provide(DocsClient.layer({ baseUrl: api.baseUrl, timeout: "10 seconds" }))
      )
    )
  )
}))

const TestLayer = McpLive.pipe(
  Layer.provideMerge(socketClient),
  Layer.provideMerge(Seeded),
  Layer.provideMerge(stack)
)

layer(TestLayer, { excludeTestServices: true, timeout: 180_000 })("MCP conformance (2025-11-25 server scenarios)", (it) => {
  for (const scenario of APPLICABLE_SCENARIOS) {
    it.effect(scenario, () =>
      Effect.gen(function*() {
        const url = yield* McpUrl
        const outputDir = yield* tempDir("svc-conformance-")
        const { code, output, checks } = yield* runScenario(url, scenario, outputDir)
        assert.isAbove(checks.length, 0, `no checks saved by ${scenario}:\n${output}`)
        const failed = checks.filter((check) => check.status !== "SUCCESS" && check.status !== "INFO")
        assert.deepStrictEqual(
          failed.map((check) => `${check.id}: ${check.status} ${check.errorMessage ?? ""}`),
          [],
          output
        )
        assert.strictEqual(code, 0, output)
      }))
  }
})
