/**
 * The MCP HTTP server on a network: Host/Origin validation (DNS rebinding, MCP 2025-11-25 transport
 * security), the RFC 9728 metadata from the configured public URL, the body cap (413 without reading
 * past it), and per-client rate limits through the MCP server (the caller's address forwarded, signed,
 * and trusted by the API only when the signature is right). Real sockets; the rate-limit tests run
 * against the real REST API on a fresh database.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer, Redacted, Result } from "effect"
import * as Http from "node:http"
import { ADDRESS_HEADER, forwardingHeaders, SIGNATURE_HEADER, verifiedForwardedAddress } from "../src/ClientAddress.ts"
import { Indexer } from "../src/Indexer.ts"
import { McpHttpConfig, originPolicy, serializedOrigin } from "../src/mcp/McpHttp.ts"
import { Client, docsFolder, type ExactAnswer, exactRequest, socketClientWith, stack, startMcp } from "./support.ts"

/** What the raw requests below read: the status, the headers and the JSON body. */
type Answer = Omit<ExactAnswer, "text">

/** One request with exactly these headers (Host included); a body is sent as JSON, with MCP's headers. */
const request = (
  port: number,
  options: {
    readonly method?: string
    readonly path?: string
    readonly headers?: Record<string, string>
    readonly body?: unknown
    readonly localAddress?: string
  } = {}
) =>
  exactRequest(port, {
    ...options,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    headers: {
      ...(options.body === undefined ? {} : { "content-type": "application/json", accept: "application/json, text/event-stream" }),
      ...options.headers
    }
  })

const toolsList = { jsonrpc: "2.0", id: 1, method: "tools/list" }

describe("Host and Origin (DNS rebinding protection)", () => {
  it.effect("defaults: Host and Origin on localhost, 127.0.0.1 or [::1] (any port) pass; others are 403 with a JSON-RPC error", () =>
    Effect.gen(function*() {
      const port = yield* startMcp()
      const post = (headers: Record<string, string>) => request(port, { body: toolsList, headers })

      // what the conformance scenario sends: a rebinding page's Host and Origin
      const evil = yield* post({ host: "evil.example.com", origin: "http://evil.example.com" })
      assert.strictEqual(evil.status, 403)
      assert.strictEqual(evil.body.jsonrpc, "2.0")
      assert.strictEqual(evil.body.error.code, -32000)
      assert.match(evil.body.error.message, /Host header "evil\.example\.com" is not allowed.*MCP_ALLOWED_HOSTS/)
      assert.notProperty(evil.body, "result")

      // a foreign Host alone, or a foreign Origin on a local Host: refused too
      assert.strictEqual((yield* post({ host: `evil.example.com:${port}` })).status, 403)
      assert.strictEqual((yield* post({ host: "127.0.0.1.nip.io" })).status, 403)
      const foreignOrigin = yield* post({ host: `localhost:${port}`, origin: "http://evil.example.com" })
      assert.strictEqual(foreignOrigin.status, 403)
      assert.match(foreignOrigin.body.error.message, /Origin "http:\/\/evil\.example\.com" is not allowed.*MCP_ALLOWED_ORIGINS/)
      for (const origin of ["null", "http://localhost.evil.example.com", "file://", "not a url", `http://localhost:${port}/path`]) {
        assert.strictEqual((yield* post({ origin })).status, 403, origin)
      }

      // local names, any port, with or without Origin (non-browser clients send none)
      for (
        const headers of [
          {},
          { host: `localhost:${port}` },
          { host: "localhost" },
          { host: `[::1]:${port}` },
          { host: `127.0.0.1:${port}`, origin: `http://127.0.0.1:${port}` },
          { host: `localhost:${port}`, origin: "http://localhost:5173" },
          { host: `localhost:${port}`, origin: "https://[::1]:8443" }
        ]
      ) {
        const answer = yield* post(headers)
        assert.strictEqual(answer.status, 200, JSON.stringify(headers))
        assert.strictEqual(answer.body.result.tools.length, 2)
      }

      // GET/DELETE and /mcp/oauth are guarded too; /ping is not (probes use whatever name they have)
      assert.strictEqual((yield* request(port, { method: "GET", headers: { host: "evil.example.com" } })).status, 403)
      assert.strictEqual((yield* request(port, { method: "GET" })).status, 405)
      assert.strictEqual((yield* request(port, { method: "GET", path: "/mcp/oauth", headers: { host: "evil.example.com" } })).status, 403)
      assert.strictEqual((yield* request(port, { method: "GET", path: "/ping", headers: { host: "10.1.2.3:8790" } })).status, 200)
    }).pipe(Effect.scoped))

  it.effect("MCP_ALLOWED_HOSTS and MCP_ALLOWED_ORIGINS replace the defaults; the public URL's host and origin are allowed", () =>
    Effect.gen(function*() {
      const port = yield* startMcp({
        MCP_ALLOWED_HOSTS: "docs.internal, 10.0.0.5:8790",
        MCP_ALLOWED_ORIGINS: "https://app.example.com",
        MCP_PUBLIC_URL: "https://mcp.example.com"
      })
      const status = (headers: Record<string, string>) =>
        Effect.map(request(port, { body: toolsList, headers }), (answer) => answer.status)
      assert.strictEqual(yield* status({ host: "docs.internal:1234" }), 200)
      assert.strictEqual(yield* status({ host: "DOCS.internal" }), 200)
      assert.strictEqual(yield* status({ host: "10.0.0.5:8790" }), 200)
      assert.strictEqual(yield* status({ host: "10.0.0.5:8791" }), 403)
      assert.strictEqual(yield* status({ host: "mcp.example.com" }), 200)
      assert.strictEqual(yield* status({ host: `localhost:${port}` }), 403)
      assert.strictEqual(yield* status({ host: "docs.internal", origin: "https://app.example.com" }), 200)
      assert.strictEqual(yield* status({ host: "docs.internal", origin: "https://mcp.example.com" }), 200)
      assert.strictEqual(yield* status({ host: "docs.internal", origin: "http://app.example.com" }), 403)
      assert.strictEqual(yield* status({ host: "docs.internal", origin: "http://localhost:3000" }), 403)

      const open = yield* startMcp({ MCP_ALLOWED_HOSTS: "*", MCP_ALLOWED_ORIGINS: "*" })
      const evil = yield* request(open, { body: toolsList, headers: { host: "evil.example.com", origin: "http://evil.example.com" } })
      assert.strictEqual(evil.status, 200)
    }).pipe(Effect.scoped))

  it.effect("MCP_ALLOWED_HOSTS / MCP_ALLOWED_ORIGINS: an entry that could never match stops the start naming it; only commas is unset", () =>
    Effect.gen(function*() {
      const read = (env: Record<string, string>) => Effect.result(McpHttpConfig.parse(ConfigProvider.fromEnvRecord(env)))
      const refusal = (env: Record<string, string>) =>
        Effect.map(read(env), (result) => Result.isFailure(result) ? result.failure.message.replace(/\s+/g, " ") : "accepted")
      assert.match(yield* refusal({ MCP_ALLOWED_HOSTS: "docs.internal, https://docs.example.com" }), /"https:\/\/docs\.example\.com" is not a host name.*MCP_ALLOWED_HOSTS/)
      for (const hosts of ["docs.internal:99999999", "docs.internal:65536", "*.example.com"]) {
        assert.match(yield* refusal({ MCP_ALLOWED_HOSTS: hosts }), /is not a host name with an optional port \(no wildcards\).*MCP_ALLOWED_HOSTS/, hosts)
      }
      assert.match(yield* refusal({ MCP_ALLOWED_ORIGINS: "https://*.example.com" }), /MCP_ALLOWED_ORIGINS/)
      assert.match(yield* refusal({ MCP_ALLOWED_ORIGINS: "app.example.com" }), /"app\.example\.com" is not an http\(s\) origin.*MCP_ALLOWED_ORIGINS/)
      assert.match(yield* refusal({ MCP_ALLOWED_ORIGINS: "https://app.example.com/path" }), /MCP_ALLOWED_ORIGINS/)
      const lists = (env: Record<string, string>) =>
        Effect.map(read(env), (result) =>
          Result.isSuccess(result) ? [result.success.allowedHosts, result.success.allowedOrigins] : ["refused"])
      assert.deepStrictEqual(yield* lists({ MCP_ALLOWED_HOSTS: ",,,", MCP_ALLOWED_ORIGINS: " , " }), [undefined, undefined])
      assert.deepStrictEqual(yield* lists({ MCP_ALLOWED_HOSTS: "*, docs.internal:8443", MCP_ALLOWED_ORIGINS: "https://app.example.com/" }), [
        ["*", "docs.internal:8443"],
        ["https://app.example.com/"]
      ])
    }))

  it("originPolicy: names without a port match any port, with one only that port; IPv6 in brackets", () => {
    const policy = originPolicy({ publicUrl: "http://localhost:8790" })
    for (const host of ["localhost", "localhost:1", "LOCALHOST:8790", "127.0.0.1:80", "[::1]", "[::1]:8790"]) {
      assert.isTrue(policy.hostAllowed(host), host)
    }
    for (
      const host of [undefined, "", "::1", "127.0.0.2", "127.1", "localhost.", "evil.com", "localhost@evil.com", "a b", "localhost/x", "localhost:x", "localhost:99999", "localhost:65536"]
    ) {
      assert.isFalse(policy.hostAllowed(host), String(host))
    }
    const withPort = originPolicy({ allowedHosts: ["docs.internal:80", "[::1]"], publicUrl: "https://mcp.example.com" })
    assert.isTrue(withPort.hostAllowed("docs.internal:80"))
    assert.isFalse(withPort.hostAllowed("docs.internal:8080"))
    assert.isFalse(withPort.hostAllowed("docs.internal"))
    assert.isTrue(withPort.hostAllowed("[::1]:1"))
    assert.isTrue(withPort.hostAllowed("[::1]:65535"))
    assert.isTrue(withPort.hostAllowed("mcp.example.com"))
    assert.isFalse(withPort.hostAllowed("localhost"))
    assert.isTrue(policy.originAllowed(undefined))
    assert.isTrue(policy.originAllowed("http://127.0.0.1:3000"))
    assert.isFalse(policy.originAllowed("ws://localhost"))
    assert.isFalse(policy.originAllowed("null"))
    // only a serialized origin (scheme://host[:port]) is one; case is forgiven, nothing else
    for (
      const origin of [
        "http://localhost:3000/path",
        "http://localhost:3000/",
        "http://localhost:3000?x",
        "http://user@localhost:3000",
        "http://localhost:80",
        " http://localhost:3000",
        "http://localhost:3000#"
      ]
    ) {
      assert.isFalse(policy.originAllowed(origin), origin)
      assert.isFalse(originPolicy({ allowedOrigins: ["*"], publicUrl: "http://localhost:8790" }).originAllowed(origin), `* ${origin}`)
    }
    assert.isTrue(policy.originAllowed("HTTP://LOCALHOST:3000"))
    assert.strictEqual(serializedOrigin("HTTP://LOCALHOST:3000"), "http://localhost:3000")
    assert.strictEqual(serializedOrigin("https://[::1]:8443"), "https://[::1]:8443")
    assert.isUndefined(serializedOrigin("null"))
    // null: refused, unless MCP_ALLOWED_ORIGINS=* (then let through, never granted)
    assert.isTrue(originPolicy({ allowedOrigins: ["*"], publicUrl: "http://localhost:8790" }).originAllowed("null"))
  })
})

describe("RFC 9728 metadata", () => {
  it.effect("built from MCP_PUBLIC_URL (default http://localhost:<port>), never from the Host header; no authorization server", () =>
    Effect.gen(function*() {
      const port = yield* startMcp()
      for (const path of ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"]) {
        const metadata = yield* request(port, { method: "GET", path, headers: { host: "evil.example.com" } })
        assert.strictEqual(metadata.status, 200)
        assert.deepStrictEqual(metadata.body, {
          resource: `http://localhost:${port}/mcp`,
          resource_name: "svc documentation lookup (MCP)",
          bearer_methods_supported: ["header"]
        })
      }
      const configured = yield* startMcp({ MCP_PUBLIC_URL: "https://docs.example.com/" })
      const metadata = yield* request(configured, {
        method: "GET",
        path: "/.well-known/oauth-protected-resource",
        headers: { host: "evil.example.com" }
      })
      assert.strictEqual(metadata.body.resource, "https://docs.example.com/mcp")
      assert.notProperty(metadata.body, "authorization_servers")
    }).pipe(Effect.scoped))

  it.effect("an MCP_PUBLIC_URL that is not an http(s) URL fails the start", () =>
    Effect.gen(function*() {
      const started = yield* Effect.result(startMcp({ MCP_PUBLIC_URL: "javascript:alert(1)" }))
      assert.strictEqual(started._tag, "Failure")
      assert.match(String(started._tag === "Failure" ? started.failure : ""), /MCP_PUBLIC_URL/)
    }).pipe(Effect.scoped))
})

describe("the body cap (MCP_MAX_BODY_BYTES)", () => {
  const CAP = 64 * 1024

  it.effect("a Content-Length over the cap: 413 with the suite's error body, answered before the body is sent", () =>
    Effect.gen(function*() {
      const port = yield* startMcp({ MCP_MAX_BODY_BYTES: String(CAP) })
      const answer = yield* Effect.promise(() =>
        new Promise<Answer>((resolve, reject) => {
          // headers only: the 300 MB body it announces never comes
          const req = Http.request({
            host: "127.0.0.1",
            port,
            method: "POST",
            path: "/mcp",
            headers: {
              "content-type": "application/json",
              accept: "application/json, text/event-stream",
              "content-length": String(300 * 1024 * 1024)
            }
          }, (res) => {
            const chunks: Array<Buffer> = []
            res.on("data", (chunk: Buffer) => chunks.push(chunk))
            res.on("end", () => {
              resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(Buffer.concat(chunks).toString()) })
              req.destroy()
            })
          })
          req.on("error", reject)
          req.flushHeaders()
        })
      )
      assert.strictEqual(answer.status, 413)
      assert.strictEqual(answer.body.code, "payload_too_large")
      assert.match(answer.body.message, /larger than 65536 bytes \(MCP_MAX_BODY_BYTES\)/)
      assert.strictEqual(answer.headers["connection"], "close")
      // a body within the cap is served
      const small = yield* request(port, { body: { ...toolsList, params: { _meta: { padding: "x".repeat(CAP - 1000) } } } })
      assert.strictEqual(small.status, 200, JSON.stringify(small.body))
    }).pipe(Effect.scoped))

  it.effect("a chunked body over the cap: 413 while the client is still sending, the rest never read into memory", () =>
    Effect.gen(function*() {
      const port = yield* startMcp({ MCP_MAX_BODY_BYTES: String(CAP) })
      const LIMIT = 256 * 1024 * 1024 // what the client would send if nobody stopped it
      const { answer, sent, finished } = yield* Effect.promise(() =>
        new Promise<{ answer: Answer; sent: number; finished: boolean }>((resolve, reject) => {
          let answer: Answer | undefined
          let responded = false
          let sent = 0
          let finished = false
          const req = Http.request({
            host: "127.0.0.1",
            port,
            method: "POST",
            path: "/mcp",
            headers: {
              "content-type": "application/json",
              accept: "application/json, text/event-stream",
              "transfer-encoding": "chunked"
            }
          }, (res) => {
            responded = true
            const chunks: Array<Buffer> = []
            res.on("data", (chunk: Buffer) => chunks.push(chunk))
            res.on("end", () => {
              answer = { status: res.statusCode!, headers: res.headers, body: JSON.parse(Buffer.concat(chunks).toString()) }
              resolve({ answer, sent, finished })
              req.destroy()
            })
          })
          // once answered, the server may close the connection under the client's remaining writes
          req.on("error", (error) => responded ? undefined : reject(error))
          const chunk = Buffer.alloc(64 * 1024, "a")
          req.write("[\"")
          const pump = () => {
            // write until the answer comes (or everything is sent, which would mean the server read it all)
            while (!responded && sent < LIMIT) {
              sent += chunk.length
              if (!req.write(chunk)) return void req.once("drain", () => setImmediate(pump))
            }
            if (!responded) {
              finished = true
              req.end("\"]")
            }
          }
          pump()
        })
      )
      assert.strictEqual(answer.status, 413)
      assert.strictEqual(answer.body.code, "payload_too_large")
      assert.isFalse(finished, "the server answered only after the whole body was sent")
      assert.isBelow(sent, LIMIT)
      // the server closes the connection (the rest of the body is never read): the answer says so, as
      // the declared-length 413 does; it said keep-alive (timeout=5) and closed 10 ms later
      assert.strictEqual(answer.headers["connection"], "close")
      assert.isUndefined(answer.headers["keep-alive"])
    }).pipe(Effect.scoped))
})

describe("forwarding the client address", () => {
  it("a signature verifies for its address, secret and time only", () => {
    const secret = Redacted.make("s3cret")
    const now = 1_800_000_000_000
    const headers = forwardingHeaders(secret, "203.0.113.7", now)
    assert.strictEqual(verifiedForwardedAddress(secret, headers, now), "203.0.113.7")
    assert.strictEqual(verifiedForwardedAddress(secret, headers, now + 200_000), "203.0.113.7")
    assert.isUndefined(verifiedForwardedAddress(secret, headers, now + 400_000), "stale")
    assert.isUndefined(verifiedForwardedAddress(Redacted.make("other"), headers, now), "another secret")
    assert.isUndefined(verifiedForwardedAddress(secret, { ...headers, [ADDRESS_HEADER]: "203.0.113.8" }, now), "another address")
    assert.isUndefined(verifiedForwardedAddress(secret, { [ADDRESS_HEADER]: "203.0.113.7" }, now), "unsigned")
    assert.isUndefined(verifiedForwardedAddress(secret, { ...headers, [SIGNATURE_HEADER]: "garbage" }, now))
    const notAnAddress = forwardingHeaders(secret, "key:abc", now)
    assert.isUndefined(verifiedForwardedAddress(secret, notAnAddress, now), "not an IP address")
  })
})

const Seeded = Layer.effectDiscard(Effect.gen(function*() {
  const indexer = yield* Indexer
  yield* indexer.add(
    yield* docsFolder({ "README.md": "# Widgets\n\nAcme widgets render dashboards with configurable widget options.\n" }),
    { id: "/acme/widgets", version: "1.0.0" }
  )
}))

const resolveCall = (id: number) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name: "resolve-library-id", arguments: { query: "dashboards", libraryName: "widgets" } }
})

layer(Seeded.pipe(Layer.provideMerge(stack)), { timeout: 120_000 })("per-client rate limits through the MCP server", (it) => {
  it.effect("two MCP clients at different addresses each get their own anonymous limit", () =>
    Effect.gen(function*() {
      const api = Context.get(yield* Layer.build(socketClientWith({ DOCS_RATE_LIMIT_ANONYMOUS: "2" })), Client)
      const port = yield* startMcp({}, api.baseUrl)
      const call = (from: string, id: number) =>
        Effect.map(request(port, { body: resolveCall(id), localAddress: from }), (answer) => {
          assert.strictEqual(answer.status, 200)
          return answer.body.result as { readonly isError?: boolean; readonly content: Array<{ readonly text: string }> }
        })
      // client A (127.0.0.1) uses up its two requests a minute…
      for (const id of [1, 2]) assert.isUndefined((yield* call("127.0.0.1", id)).isError, `A, call ${id}`)
      const limited = yield* call("127.0.0.1", 3)
      assert.isTrue(limited.isError)
      assert.match(limited.content[0]!.text, /rate limiting these requests \(429\)/)
      // …and client B (127.0.0.2), through the same MCP server, still has its own
      for (const id of [4, 5]) {
        const served = yield* call("127.0.0.2", id)
        assert.isUndefined(served.isError, `B, call ${id}`)
        assert.include(served.content[0]!.text, "Library ID: /acme/widgets")
      }
      assert.isTrue((yield* call("127.0.0.2", 6)).isError)
    }).pipe(Effect.scoped))

  it.effect("a separately run MCP server: forwarding counts only with the API's DOCS_FORWARD_SECRET", () =>
    Effect.gen(function*() {
      const api = Context.get(
        yield* Layer.build(socketClientWith({ DOCS_RATE_LIMIT_ANONYMOUS: "1", DOCS_FORWARD_SECRET: "shared-secret-of-the-two" })),
        Client
      )
      const served = (port: number, from: string) =>
        Effect.map(request(port, { body: resolveCall(1), localAddress: from }), (answer) => answer.body.result.isError !== true)
      // another secret: the API ignores the forwarded addresses, both clients share the MCP server's bucket
      const stranger = yield* startMcp({ DOCS_FORWARD_SECRET: "another-secret-entirely" }, api.baseUrl)
      assert.isTrue(yield* served(stranger, "127.0.0.3"))
      assert.isFalse(yield* served(stranger, "127.0.0.4"))
      // the same secret: each client its own
      const partner = yield* startMcp({ DOCS_FORWARD_SECRET: "shared-secret-of-the-two" }, api.baseUrl)
      assert.isTrue(yield* served(partner, "127.0.0.5"))
      assert.isTrue(yield* served(partner, "127.0.0.6"))
      assert.isFalse(yield* served(partner, "127.0.0.6"))
    }).pipe(Effect.scoped))

  it.effect("a forwarding header sent straight to the API, unsigned or forged, is ignored: the peer address counts", () =>
    Effect.gen(function*() {
      const api = Context.get(yield* Layer.build(socketClientWith({ DOCS_RATE_LIMIT_ANONYMOUS: "2" })), Client)
      const forged = (i: number): Record<string, string> => {
        const address = `198.51.100.${i}`
        return [
          { [ADDRESS_HEADER]: address },
          { [ADDRESS_HEADER]: address, [SIGNATURE_HEADER]: `${Math.floor(Date.now() / 1000)}.${"0".repeat(64)}` },
          forwardingHeaders(Redacted.make("a guessed secret"), address)
        ][i % 3]!
      }
      const statuses: Array<number> = []
      for (let i = 0; i < 5; i++) {
        const answer = yield* api.fetch("/api/v2/libs/search?libraryName=widgets", { headers: forged(i) })
        statuses.push(answer.status)
      }
      // one bucket (127.0.0.1), however many addresses were claimed
      assert.deepStrictEqual(statuses, [200, 200, 429, 429, 429])
    }).pipe(Effect.scoped))
})
