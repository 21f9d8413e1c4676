/**
 * The first contact of a new user, end to end: `npm start` (what it runs: `node packages/cli/src/bin.ts
 * start all`) on a fresh data folder, every service answering within 60 s, one README request per
 * service, a result captured from stdout while the suite runs, Ctrl-C, a taken MCP port, and a second
 * start that finds the first one's data. Every port is moved by its variable (below the ephemeral
 * range), so the suite never collides with anything on the machine.
 */
import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { spawnablePorts, tempDir } from "@svc/platform/testing"
import { Effect, Redacted, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import * as Http from "node:http"
import * as path from "node:path"
import { finished, healthy, occupy, started, svc } from "./svcProcess.ts"

const fetchJson = (url: string, init?: RequestInit) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    const text = await response.text()
    let body: any = text
    try {
      body = JSON.parse(text)
    } catch {
      // not JSON
    }
    return { status: response.status, body, text }
  })

describe("smoke", () => {
  it.live("npm start on a fresh data folder: every service up, README requests, scriptable CLI, Ctrl-C, a taken port, a second start finds the data", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("svc-smoke-")
      const [svcPort, listingsPort, queuePort, docsPort, mcpPort, uploadsPort] = (yield* spawnablePorts(6)) as [
        number,
        number,
        number,
        number,
        number,
        number
      ]
      const env: Record<string, string> = {
        HOST: "127.0.0.1",
        EMBEDDED_POSTGRES_DIR: path.join(dir, "postgres"),
        OBJECT_STORAGE_DIR: path.join(dir, "object-storage"),
        SVC_PORT: String(svcPort),
        LISTINGS_PORT: String(listingsPort),
        QUEUE_PORT: String(queuePort),
        DOCS_PORT: String(docsPort),
        MCP_PORT: String(mcpPort),
        UPLOADS_PORT: String(uploadsPort),
        ADMIN_TOKEN: "smoke-admin",
        QUEUE_TOKEN: "smoke-queue",
        QUEUE_ALLOW_PRIVATE: "true",
        // fast: no documentation indexed at start, no image cache (the uploads demo still starts its radosgw)
        DOCS_DEFAULT_LIBRARIES: "none",
        OFFER_IMAGES_STORAGE: "off",
        LOG_LEVEL: "info"
      }
      const ports = [svcPort, listingsPort, queuePort, docsPort, mcpPort, uploadsPort]
      const base = (port: number) => `http://127.0.0.1:${port}`

      // -- first start --------------------------------------------------------------------------
      const first = yield* started(["start", "all"], env)
      // the status server answers 503 until every service is up: once its /health answers 200, every
      // service does, without a retry
      const before: Array<{ status: number; body: unknown; retryAfter: string | null }> = []
      yield* Effect.promise(async () => {
        for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((ok) => setTimeout(ok, 100))) {
          const response = await fetch(`${base(svcPort)}/health`).catch(() => undefined)
          if (response?.status === 200) return
          if (response !== undefined) {
            before.push({ status: response.status, body: await response.json(), retryAfter: response.headers.get("retry-after") })
          }
        }
      })
      yield* healthy([svcPort], first, "1 second")
      for (const answer of before) {
        assert.deepStrictEqual(answer, {
          status: 503,
          body: { code: "service_unavailable", message: "The server is starting or stopping" },
          retryAfter: "1"
        })
      }
      for (const port of ports) {
        const health = yield* fetchJson(`${base(port)}/health`)
        assert.strictEqual(health.status, 200, `${port} when the status server answered:\n${first.output()}`)
      }

      const services = yield* fetchJson(`${base(svcPort)}/services`)
      // each with the port it listens on here, not its default
      assert.deepStrictEqual(
        services.body.services.map((service: { name: string; port: number }) => [service.name, service.port]),
        [["listings", listingsPort], ["queue", queuePort], ["docs-api", docsPort], ["mcp", mcpPort], ["uploads", uploadsPort]]
      )
      for (const service of services.body.services) assert.notMatch(service.description, /port \d/, "no default port in a description")
      // the MCP server honours HOST (it listened on 0.0.0.0 before)
      assert.match(first.stderr(), new RegExp(`message="Listening on http://127\\.0\\.0\\.1:${mcpPort}" service=mcp\n`))
      assert.notMatch(first.stderr(), /Listening on http:\/\/0\.0\.0\.0/)
      assert.strictEqual(first.stdout(), "", "a service's logs are not results: stderr")

      // listings
      const offers = yield* fetchJson(`${base(listingsPort)}/offers?limit=2`)
      assert.strictEqual(offers.status, 200, offers.text)
      assert.isArray(offers.body.offers)
      const ingest = yield* fetchJson(`${base(listingsPort)}/admin/ingest?wait=true`, {
        method: "POST",
        headers: { authorization: "Bearer smoke-admin" }
      })
      assert.strictEqual(ingest.status, 200, ingest.text)
      assert.isArray(ingest.body.runs)
      assert.notInclude(JSON.stringify(ingest.body.runs), `"started"`)

      // queue: deliver a GET to the status server, then look at the message
      const published = yield* fetchJson(`${base(queuePort)}/v2/publish/${base(svcPort)}/health`, {
        method: "POST",
        headers: { authorization: "Bearer smoke-queue", "Svc-Method": "GET", "Svc-Retries": "2" }
      })
      assert.strictEqual(published.status, 201, published.text)
      const messageId: string = published.body.messageId
      const delivered = yield* fetchJson(`${base(queuePort)}/v2/messages/${messageId}`, {
        headers: { authorization: "Bearer smoke-queue" }
      }).pipe(
        Effect.repeat({ schedule: Schedule.spaced("200 millis"), until: (answer) => answer.body?.state === "delivered" }),
        Effect.timeout("30 seconds")
      )
      assert.strictEqual(delivered.body.state, "delivered")

      // docs: a key made with the CLI while the suite runs; stdout is the key and nothing else
      const keys = svc(["docs", "keys", "create", "--name", "ci"], env)
      assert.strictEqual(yield* finished(keys), 0, keys.stderr())
      assert.match(keys.stdout(), /^svcsk_[A-Za-z0-9_-]+\n$/, "KEY=$(svc docs keys create) captures the key only")
      const key = keys.stdout().trim()
      const search = yield* fetchJson(`${base(docsPort)}/api/v2/libs/search?libraryName=he&query=decode`, {
        headers: { authorization: `Bearer ${key}` }
      })
      assert.strictEqual(search.status, 200, search.text)
      assert.deepStrictEqual(search.body.results, [])

      // mcp: /ping, and a tool call that reaches the docs API on its moved DOCS_PORT (DOCS_API_URL unset)
      const ping = yield* fetchJson(`${base(mcpPort)}/ping`)
      assert.deepStrictEqual(ping.body, { status: "ok", message: "pong" })
      const tool = yield* fetchJson(`${base(mcpPort)}/mcp`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name: "resolve-library-id", arguments: { libraryName: "he", query: "decode entities" } }
        })
      })
      assert.strictEqual(tool.status, 200, tool.text)
      // "No indexed library matches" is the API's answer; not "could not be reached"
      assert.include(tool.text, "No indexed library matches", `${tool.text}\n${first.stderr()}`)

      // uploads: the demo page
      const page = yield* Effect.promise(() => fetch(`${base(uploadsPort)}/`).then(async (r) => ({ status: r.status, text: await r.text() })))
      assert.strictEqual(page.status, 200)
      assert.include(page.text.toLowerCase(), "<html")
      // the upload route answers any method itself, in the BlobError model
      const put = yield* Effect.promise(() =>
        fetch(`${base(uploadsPort)}/api/upload/files`, { method: "PUT", headers: { "content-type": "application/json" }, body: "{}" })
          .then(async (r) => ({ status: r.status, body: await r.json() as { code: string; status: number; message: string } }))
      )
      assert.deepStrictEqual(put, { status: 400, body: { ...put.body, code: "invalid_input", status: 400, message: "Upload routes take POST, not PUT" } })
      // requests no Fetch Request can carry (undici refuses TRACE and a Host with a user) were a 500
      const raw = (method: string, headers: Record<string, string>) =>
        Effect.promise(() =>
          new Promise<{ status: number; body: { code: string; message: string } }>((resolve, reject) => {
            const request = Http.request({ host: "127.0.0.1", port: uploadsPort, path: "/api/upload/files", method, headers }, (response) => {
              let text = ""
              response.on("data", (chunk) => text += chunk)
              response.on("end", () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }))
            })
            request.on("error", reject)
            request.end(method === "POST" ? "{}" : undefined)
          })
        )
      const trace = yield* raw("TRACE", {})
      assert.deepStrictEqual([trace.status, trace.body.code, trace.body.message], [400, "invalid_input", "Upload routes take POST, not TRACE"])
      const userHost = yield* raw("POST", { host: "user@127.0.0.1", "content-type": "application/json" })
      assert.deepStrictEqual([userHost.status, userHost.body.code], [400, "invalid_input"])

      // a second process joins the embedded database with the URL `svc db url` prints
      const dbUrl = svc(["db", "url"], env)
      assert.strictEqual(yield* finished(dbUrl), 0, dbUrl.stderr())
      const pgPort = Number(/listening on 127\.0\.0\.1:(\d+)/.exec(first.stderr())?.[1])
      assert.match(dbUrl.stdout(), new RegExp(`^postgres://postgres:[^@]+@127\\.0\\.0\\.1:${pgPort}/postgres\\n$`))
      const keyRows = yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        return yield* sql<{ name: string }>`SELECT name FROM docs.api_keys`
      }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(dbUrl.stdout().trim()), maxConnections: 1 })))
      assert.deepInclude(keyRows, { name: "ci" })

      // Ctrl-C: exit 0 within 10 s
      const stoppedAt = Date.now()
      first.child.kill("SIGINT")
      assert.strictEqual(yield* finished(first), 0, first.stderr())
      assert.match(first.stderr(), /message="Every service is up: listings, queue, docs-api, mcp, uploads"/)
      assert.isBelow(Date.now() - stoppedAt, 10_000, "Ctrl-C stops within 10 s")

      // -- the MCP port taken: one clear line, exit 1 -------------------------------------------
      yield* Effect.scoped(Effect.gen(function*() {
        yield* occupy(mcpPort)
        const busy = yield* started(["start", "all"], env)
        const code = yield* finished(busy).pipe(Effect.timeout("90 seconds"))
        assert.strictEqual(code, 1, busy.stderr())
        const failures = busy.stderr().split("\n").filter((line) => line.startsWith("svc:"))
        assert.deepStrictEqual(failures, [
          `svc: mcp cannot listen on 127.0.0.1:${mcpPort} (address in use); set MCP_PORT to another port`
        ])
        assert.notMatch(busy.stderr(), new RegExp(`:${mcpPort + 1}\\b`), "no wandering to the next port")
        assert.strictEqual(busy.stdout(), "")
      }))

      // -- a second start on the same data folder finds the data --------------------------------
      const second = yield* started(["start", "all"], env)
      yield* healthy(ports, second, "60 seconds")
      assert.notInclude(second.stderr(), "Initialising", "the data folder is reused")
      assert.match(second.stderr(), new RegExp(`listening on 127\\.0\\.0\\.1:${pgPort}\\b`), "the same Postgres port")
      const again = yield* fetchJson(`${base(queuePort)}/v2/messages/${messageId}`, { headers: { authorization: "Bearer smoke-queue" } })
      assert.strictEqual(again.status, 200, again.text)
      assert.strictEqual(again.body.state, "delivered")
      const keyed = yield* fetchJson(`${base(docsPort)}/api/v2/libs/search?libraryName=he`, { headers: { authorization: `Bearer ${key}` } })
      assert.strictEqual(keyed.status, 200, "the key made in the first run still works")
      second.child.kill("SIGTERM")
      assert.strictEqual(yield* finished(second), 0, second.stderr())
    }), { timeout: 300_000 })
})
