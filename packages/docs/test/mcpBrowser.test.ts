/**
 * CORS as a browser enforces it: Debian's Chromium (through playwright-core, as the blob tests drive it)
 * opens a page on one origin and runs the MCP SDK's own Streamable HTTP client there (bundled with
 * esbuild) against the MCP HTTP server on another. At an allowed origin the client connects (its
 * preflights, the initialize POST, the GET it sends for a stream and reads as 405) and lists the tools;
 * at an origin the server does not allow, the browser stops it. Without Chromium the tests fail with
 * what to install (`scripts/install-browser.sh`).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { existsSync } from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { fileURLToPath } from "node:url"
import { type Browser, chromium } from "playwright-core"
import { startMcp } from "./support.ts"

const CHROMIUM = "/usr/bin/chromium"
const entry = fileURLToPath(new URL("./browser/mcpClientPage.ts", import.meta.url))

let browser: Browser | undefined
let launchFailure: unknown
let pages: Http.Server | undefined
let pageOrigin = ""
let clientCode = ""

beforeAll(async () => {
  const esbuild = await import("esbuild")
  const built = await esbuild.build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    format: "iife",
    platform: "browser",
    target: "es2022",
    logLevel: "silent"
  })
  clientCode = built.outputFiles[0]!.text
  // the page's origin: http://localhost:<port>, a default-allowed origin; the MCP server is on 127.0.0.1
  pages = await new Promise<Http.Server>((resolve) => {
    const server = Http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>MCP client</title>")
    })
    server.listen(0, "127.0.0.1", () => resolve(server))
  })
  pageOrigin = `http://localhost:${(pages.address() as AddressInfo).port}`
  try {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`Chromium is not installed at ${CHROMIUM}: run \`bash scripts/install-browser.sh\` first`)
    }
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
    })
  } catch (error) {
    launchFailure = error
  }
})

afterAll(async () => {
  await browser?.close()
  await new Promise<void>((resolve) => pages === undefined ? resolve() : pages.close(() => resolve()))
})

/** The MCP HTTP server on 127.0.0.1:<free port> with `env`; its `/mcp` URL. */
const startMcpAt = (env: Record<string, string> = {}) =>
  Effect.map(startMcp(env), (port) => `http://127.0.0.1:${port}/mcp`)

/** A page on {@link pageOrigin} with the bundled client, closed with the scope. */
const openPage = Effect.gen(function*() {
  if (launchFailure !== undefined || browser === undefined) return yield* Effect.die(launchFailure)
  const page = yield* Effect.acquireRelease(
    Effect.promise(() => browser!.newPage()),
    (page) => Effect.promise(() => page.close())
  )
  yield* Effect.promise(() => page.goto(`${pageOrigin}/`))
  yield* Effect.promise(() => page.addScriptTag({ content: clientCode }))
  return page
})

describe("MCP over HTTP from a browser page (CORS)", () => {
  it.effect("at an allowed origin the SDK's client connects and lists the tools; the answers' headers it may read, it reads", () =>
    Effect.gen(function*() {
      const url = yield* startMcpAt()
      const page = yield* openPage
      const tools = yield* Effect.promise(() =>
        page.evaluate(([url]) => (globalThis as any).listTools(url, "svcsk_browser") as Promise<Array<string>>, [url] as const)
      )
      assert.deepStrictEqual(tools, ["resolve-library-id", "query-docs"])
      // a plain fetch with the headers a client sends: served, and the exposed headers readable
      const fetched = yield* Effect.promise(() =>
        page.evaluate(async ([url]) => {
          const response = await fetch(url, {
            method: "POST",
            headers: {
              "content-type": "application/json",
              accept: "application/json, text/event-stream",
              "mcp-protocol-version": "2025-11-25",
              "x-svc-api-key": "svcsk_browser"
            },
            body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" })
          })
          return { status: response.status, requestId: response.headers.get("x-request-id"), body: await response.json() }
        }, [url] as const)
      )
      assert.strictEqual(fetched.status, 200)
      assert.isString(fetched.requestId)
      assert.deepStrictEqual(fetched.body, { jsonrpc: "2.0", id: 1, result: {} })
    }).pipe(Effect.scoped))

  it.effect("at an origin the server does not allow, the browser stops the client at the preflight", () =>
    Effect.gen(function*() {
      const url = yield* startMcpAt({ MCP_ALLOWED_ORIGINS: "https://app.example.com" })
      const page = yield* openPage
      const failure = yield* Effect.promise(() =>
        page.evaluate(
          ([url]) =>
            ((globalThis as any).listTools(url, "svcsk_browser") as Promise<unknown>).then(
              () => "connected",
              (error: unknown) => String(error)
            ),
          [url] as const
        )
      )
      assert.match(failure, /Failed to fetch|TypeError/)
    }).pipe(Effect.scoped))
})
