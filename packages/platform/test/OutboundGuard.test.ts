/**
 * The outbound guard: its decision on a table of disguised internal addresses (literal addresses, and
 * names resolved by an injected lookup: nothing here connects anywhere but 127.0.0.1), the lookup the
 * agents connect with, and the guarded fetch against local servers: refused requests never arrive,
 * every redirect hop is checked, redirects are bounded, credentials stay on their origin.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll } from "vitest"
import * as OutboundGuard from "../src/OutboundGuard.ts"

/** Names the injected lookup answers; everything else does not resolve. */
const names: Record<string, ReadonlyArray<OutboundGuard.ResolvedAddress>> = {
  "loopback.test.invalid": [{ address: "127.0.0.1", family: 4 }],
  "loopback6.test.invalid": [{ address: "::1", family: 6 }],
  "mapped.test.invalid": [{ address: "::ffff:127.0.0.1", family: 6 }],
  "metadata.test.invalid": [{ address: "169.254.169.254", family: 4 }],
  "mixed.test.invalid": [{ address: "93.184.216.34", family: 4 }, { address: "10.1.2.3", family: 4 }],
  "public.test.invalid": [{ address: "93.184.216.34", family: 4 }, { address: "2606:2800:220:1::1", family: 6 }]
}
const resolve: OutboundGuard.Resolve = async (hostname) => {
  const found = names[hostname.toLowerCase()]
  if (found === undefined) throw Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: "ENOTFOUND" })
  return found
}
const strict: OutboundGuard.GuardOptions = { allowPrivate: false, setting: "TEST_ALLOW_PRIVATE", resolve }

/** [disguise, what the refusal must mention] */
export const disguises: ReadonlyArray<readonly [string, RegExp]> = [
  ["http://127.0.0.1/", /127\.0\.0\.1 is in the loopback range/],
  ["http://2130706433/", /127\.0\.0\.1.*loopback/], // decimal
  ["http://0x7f000001/", /127\.0\.0\.1.*loopback/], // hex
  ["http://0x7f.1/", /127\.0\.0\.1.*loopback/], // hex, short
  ["http://0177.0.0.1/", /127\.0\.0\.1.*loopback/], // octal
  ["http://0177.0.0.01/", /127\.0\.0\.1.*loopback/], // octal, every part
  ["http://127.1/", /127\.0\.0\.1.*loopback/], // short
  ["http://127.0.1/", /127\.0\.0\.1.*loopback/], // short, three parts
  ["http://017700000001/", /127\.0\.0\.1.*loopback/], // octal, one part
  ["http://%31%32%37.0.0.1/", /127\.0\.0\.1.*loopback/], // percent-encoded digits
  ["http://127.0.0.1%2e/", /127\.0\.0\.1.*loopback/], // percent-encoded trailing dot
  ["http://127.0.0.1./", /127\.0\.0\.1.*loopback/], // trailing dot
  ["http://①②⑦.0.0.1/", /127\.0\.0\.1.*loopback/], // full-width digits (IDNA maps them)
  ["http://0/", /0\.0\.0\.0.*unspecified/],
  ["http://0.0.0.0:8080/", /unspecified/],
  ["http://10.0.0.1/", /private/],
  ["http://172.16.5.4/", /private/],
  ["http://192.168.1.1/", /private/],
  ["http://100.64.0.1/", /carrier-grade NAT/],
  ["http://169.254.169.254/latest/meta-data/", /link-local/], // cloud metadata
  ["http://224.0.0.1/", /multicast/],
  ["http://255.255.255.255/", /broadcast/],
  ["http://198.18.0.1/", /reserved|benchmarking/],
  ["http://[::1]/", /::1 is in the loopback range/],
  ["http://[::]/", /unspecified/],
  ["http://[::ffff:127.0.0.1]/", /127\.0\.0\.1.*loopback/], // IPv4-mapped
  ["http://[::ffff:7f00:1]/", /127\.0\.0\.1.*loopback/], // IPv4-mapped, hex
  ["http://[0:0:0:0:0:ffff:127.0.0.1]/", /127\.0\.0\.1.*loopback/], // IPv4-mapped, long
  ["http://[::ffff:a9fe:a9fe]/", /169\.254\.169\.254.*link-local/], // IPv4-mapped metadata
  ["http://[::127.0.0.1]/", /IPv4-compatible.*127\.0\.0\.1/], // IPv4-compatible
  ["http://[::7f00:1]/", /IPv4-compatible.*127\.0\.0\.1/],
  ["http://[2002:7f00:1::]/", /6to4.*127\.0\.0\.1/], // 6to4
  ["http://[2002:a00:1::1]/", /6to4.*10\.0\.0\.1/],
  ["http://[64:ff9b::127.0.0.1]/", /NAT64.*127\.0\.0\.1/], // NAT64
  ["http://[64:ff9b::a9fe:a9fe]/", /NAT64.*169\.254\.169\.254/],
  ["http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", /Teredo.*127\.0\.0\.1/], // Teredo
  ["http://[fe80::1]/", /link-local/],
  ["http://[fd00::1]/", /unique-local/],
  ["http://[fc00::1]/", /unique-local/],
  ["http://[ff02::1]/", /multicast/],
  ["http://[fec0::1]/", /non-global|deprecated|site/i],
  ["http://[100::1]/", /discard|non-global/],
  ["http://localhost/", /localhost is a local name/],
  ["http://LOCALHOST:8080/", /localhost is a local name/],
  ["http://localhost./", /local name/], // trailing dot
  ["http://api.localhost/", /api\.localhost is a local name/],
  ["http://a.b.localhost./", /local name/],
  ["http://printer.local/", /local name/],
  ["http://db.internal/", /local name/],
  ["http://metadata.google.internal/", /local name/],
  ["http://example.com@127.0.0.1/", /127\.0\.0\.1.*loopback/], // userinfo trick
  ["http://user:pass@[::1]:8080/", /::1.*loopback/],
  ["http://127.0.0.1#@example.com/", /127\.0\.0\.1.*loopback/],
  ["http://127.0.0.1\\@example.com/", /127\.0\.0\.1.*loopback/], // backslash is a path separator
  ["http://loopback.test.invalid/", /^loopback\.test\.invalid resolves to an address in the loopback range/], // names that resolve inward
  ["http://loopback6.test.invalid/", /resolves to an address in the loopback range/],
  ["http://mapped.test.invalid/", /resolves to an address in the loopback range/],
  ["http://metadata.test.invalid/", /resolves to an address in the link-local range/],
  ["http://mixed.test.invalid/", /resolves to an address in the private range/], // one inward answer is enough
  ["http://nothing.test.invalid/", /does not resolve/],
  ["file:///etc/passwd", /only http and https/],
  ["gopher://127.0.0.1:70/", /only http and https/]
]

describe("the guard's decision", () => {
  it.effect(`refuses ${disguises.length} disguises of internal addresses, naming why`, () =>
    Effect.gen(function*() {
      assert.isAtLeast(disguises.length, 30)
      for (const [url, why] of disguises) {
        const refusal = yield* OutboundGuard.refusal(url, strict)
        assert.isDefined(refusal, `${url} was not refused`)
        assert.match(refusal!, why, url)
        if (/^https?:/.test(url) && !/resolve/.test(refusal!) && !/invalid\//.test(url)) {
          assert.match(refusal!, /set TEST_ALLOW_PRIVATE=true to allow it/, url)
        }
      }
    }))

  it.effect("allows public addresses and names that resolve only to them", () =>
    Effect.gen(function*() {
      for (
        const url of [
          "http://93.184.216.34/",
          "https://8.8.8.8:8443/x",
          "http://[2606:4700::1]/",
          "http://[::ffff:8.8.8.8]/", // IPv4-mapped public address: the public address
          "http://public.test.invalid/feed.json"
        ]
      ) {
        assert.isUndefined(yield* OutboundGuard.refusal(url, strict), url)
      }
    }))

  it.effect("allowPrivate switches the address checks off, never the scheme check", () =>
    Effect.gen(function*() {
      const open = { ...strict, allowPrivate: true }
      for (const url of ["http://127.0.0.1:1/", "http://localhost/", "http://[::127.0.0.1]/", "http://10.0.0.1/"]) {
        assert.isUndefined(yield* OutboundGuard.refusal(url, open), url)
      }
      assert.match((yield* OutboundGuard.refusal("file:///etc/passwd", open))!, /only http and https/)
    }))

  it("classifies addresses by ipaddr.js range names", () => {
    assert.deepStrictEqual(OutboundGuard.classifyAddress("127.0.0.1"), {
      address: "127.0.0.1",
      range: "loopback",
      allowed: false
    })
    assert.strictEqual(OutboundGuard.classifyAddress("[::7f00:1]")?.range, "ipv4Compatible")
    assert.strictEqual(OutboundGuard.classifyAddress("[::127.0.0.1]")?.allowed, false) // ipaddr.js reads it as mapped
    assert.strictEqual(OutboundGuard.classifyAddress("2002:7f00:1::")?.range, "6to4")
    assert.strictEqual(OutboundGuard.classifyAddress("64:ff9b::7f00:1")?.range, "rfc6052")
    assert.strictEqual(OutboundGuard.classifyAddress("2001:db8::1")?.allowed, false)
    assert.strictEqual(OutboundGuard.classifyAddress("2606:4700::1")?.allowed, true)
    assert.strictEqual(OutboundGuard.classifyAddress("8.8.8.8")?.allowed, true)
    // names (and the non-canonical IPv4 forms a URL never leaves) are not addresses
    assert.isUndefined(OutboundGuard.classifyAddress("example.com"))
    assert.isUndefined(OutboundGuard.classifyAddress("127.1"))
    assert.isTrue(OutboundGuard.isPrivateAddress("[::ffff:10.0.0.1]"))
    assert.isFalse(OutboundGuard.isPrivateAddress("example.com"))
  })

  it("the agents' lookup refuses inward answers and passes public ones through", async () => {
    const lookup = OutboundGuard.lookup(strict)
    const ask = (hostname: string, options: object) =>
      new Promise<{ error: any; address: any }>((done) =>
        lookup(hostname, options as any, (error: any, address: any) => done({ error, address }))
      )
    const refused = await ask("loopback.test.invalid", { all: true })
    assert.strictEqual(refused.error?.code, "EPRIVATE")
    assert.isTrue(OutboundGuard.isRefusal(refused.error))
    assert.strictEqual((await ask("localhost", {})).error?.code, "EPRIVATE")
    const ok = await ask("public.test.invalid", { all: true })
    assert.isNull(ok.error)
    assert.deepStrictEqual(ok.address, [{ address: "93.184.216.34", family: 4 }, { address: "2606:2800:220:1::1", family: 6 }])
    const v4 = await ask("public.test.invalid", { family: 4 })
    assert.strictEqual(v4.address, "93.184.216.34")
    assert.strictEqual((await ask("nothing.test.invalid", {})).error?.code, "ENOTFOUND")
  })
})

// -----------------------------------------------------------------------------
// Requests, against two local servers (two origins)
// -----------------------------------------------------------------------------

interface Seen {
  readonly method: string
  readonly path: string
  readonly headers: Http.IncomingHttpHeaders
}

const servers: Array<{ server: Http.Server; seen: Array<Seen>; base: string; port: number }> = []
let routes: (server: number, path: string, res: Http.ServerResponse) => void = () => {}

beforeAll(async () => {
  for (let i = 0; i < 2; i++) {
    const seen: Array<Seen> = []
    const server = Http.createServer((req, res) => {
      seen.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers })
      req.resume()
      req.on("end", () => routes(i, req.url ?? "/", res))
    })
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done))
    const port = (server.address() as AddressInfo).port
    servers.push({ server, seen, base: `http://127.0.0.1:${port}`, port })
  }
})
afterAll(async () => {
  for (const { server } of servers) {
    server.closeAllConnections()
    await new Promise((done) => server.close(done))
  }
})

const reset = () => servers.forEach((s) => (s.seen.length = 0))
const a = () => servers[0]!
const b = () => servers[1]!

const redirect = (res: Http.ServerResponse, location: string, status = 302) => {
  res.writeHead(status, { location })
  res.end()
}

routes = (server, path, res) => {
  if (path.startsWith("/to/")) return redirect(res, decodeURIComponent(path.slice(4)))
  if (path === "/see-other") return redirect(res, "/ok", 303)
  if (path === "/loop") return redirect(res, "/loop")
  if (path === "/same-origin") return redirect(res, "/ok")
  res.writeHead(200, { "content-type": "text/plain" })
  res.end(`server ${server} ${path}`)
}

const credentials = {
  authorization: "Bearer secret-1",
  "x-api-key": "secret-2",
  cookie: "session=secret-3",
  "x-partner-token": "secret-4",
  accept: "application/json"
}

const failure = async (promise: Promise<unknown>): Promise<unknown> => {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error("expected the request to fail")
}

describe("the guarded fetch", () => {
  it("refuses loopback targets before connecting: nothing arrives", async () => {
    reset()
    const guarded = OutboundGuard.makeFetch(strict)
    try {
      for (
        const url of [
          `${a().base}/x.png`,
          `http://localhost:${a().port}/x.png`,
          `http://[::ffff:127.0.0.1]:${a().port}/x.png`,
          `http://2130706433:${a().port}/x.png`,
          `http://example.com@127.0.0.1:${a().port}/x.png`,
          `http://loopback.test.invalid:${a().port}/x.png` // resolved by the lookup the connection uses
        ]
      ) {
        const error = await failure(guarded.fetch(url))
        assert.isTrue(OutboundGuard.isRefusal(error), url)
      }
      assert.strictEqual(a().seen.length, 0)
    } finally {
      guarded.close()
    }
  })

  it("checks the address connected to: a name that answered public at the check and inward later (rebinding)", async () => {
    reset()
    let calls = 0
    const rebinding: OutboundGuard.Resolve = async () =>
      ++calls === 1 ? [{ address: "93.184.216.34", family: 4 }] : [{ address: "127.0.0.1", family: 4 }]
    const options = { allowPrivate: false, resolve: rebinding }
    const url = `http://rebind.test.invalid:${a().port}/secret`
    assert.isUndefined(await Effect.runPromise(OutboundGuard.refusal(url, options)))
    const guarded = OutboundGuard.makeFetch(options)
    try {
      assert.isTrue(OutboundGuard.isRefusal(await failure(guarded.fetch(url))))
      assert.strictEqual(a().seen.length, 0)
    } finally {
      guarded.close()
    }
  })

  it("connects to the address its lookup checked (a `.invalid` name reaches the server only through it)", async () => {
    reset()
    const app: OutboundGuard.Resolve = async (hostname) =>
      hostname === "app.test.invalid" ? [{ address: "127.0.0.1", family: 4 }] : resolve(hostname)
    // an explicit exception for this origin: its name's answer (loopback) is accepted
    const guarded = OutboundGuard.makeFetch({
      allowPrivate: false,
      resolve: app,
      allowOrigins: [`http://app.test.invalid:${a().port}`]
    })
    try {
      const response = await guarded.fetch(`http://app.test.invalid:${a().port}/ok`)
      assert.strictEqual(await response.text(), "server 0 /ok")
      assert.strictEqual(a().seen[0]?.headers.host, `app.test.invalid:${a().port}`)
      // the same name on another port is no exception: refused at the lookup
      assert.isTrue(OutboundGuard.isRefusal(await failure(guarded.fetch(`http://app.test.invalid:${b().port}/ok`))))
      assert.strictEqual(b().seen.length, 0)
    } finally {
      guarded.close()
    }
  })

  it("checks every redirect hop: a 302 to loopback (in any disguise) is refused, the target never asked", async () => {
    reset()
    // the first server is an explicit exception, the second is not
    const guarded = OutboundGuard.makeFetch({ ...strict, allowOrigins: [a().base] })
    try {
      const ok = await guarded.fetch(`${a().base}/ok`)
      assert.strictEqual(await ok.text(), "server 0 /ok")
      for (
        const target of [
          `${b().base}/x.png`,
          `http://localhost:${b().port}/x.png`,
          `http://[::ffff:7f00:1]:${b().port}/x.png`,
          `http://0x7f.1:${b().port}/x.png`,
          `http://loopback.test.invalid:${b().port}/x.png`
        ]
      ) {
        const error = await failure(guarded.fetch(`${a().base}/to/${encodeURIComponent(target)}`))
        assert.isTrue(OutboundGuard.isRefusal(error), target)
      }
      assert.strictEqual(b().seen.length, 0)
      const scheme = await failure(guarded.fetch(`${a().base}/to/${encodeURIComponent("file:///etc/passwd")}`))
      assert.isTrue(OutboundGuard.isRefusal(scheme))
    } finally {
      guarded.close()
    }
  })

  it("drops credentials when a redirect leaves the origin, for that hop and every later one", async () => {
    reset()
    const guarded = OutboundGuard.makeFetch({ allowPrivate: true })
    try {
      const back = `${a().base}/final`
      const viaB = `${b().base}/to/${encodeURIComponent(back)}`
      const response = await guarded.fetch(`${a().base}/to/${encodeURIComponent(viaB)}`, { headers: credentials })
      assert.strictEqual(await response.text(), "server 0 /final")
      assert.strictEqual(response.url, back)
      assert.isTrue(response.redirected)
      const first = a().seen[0]!
      assert.strictEqual(first.headers.authorization, "Bearer secret-1")
      assert.strictEqual(first.headers["x-api-key"], "secret-2")
      const atB = b().seen[0]!
      for (const name of ["authorization", "x-api-key", "cookie", "x-partner-token"]) {
        assert.isUndefined(atB.headers[name], `${name} reached the other origin`)
      }
      assert.strictEqual(atB.headers.accept, "application/json")
      const returned = a().seen[1]!
      assert.strictEqual(returned.path, "/final")
      assert.isUndefined(returned.headers.authorization, "credentials came back after leaving the origin")
      assert.isUndefined(returned.headers["x-api-key"])
    } finally {
      guarded.close()
    }
  })

  it("closes a connection left idle past idleSocketMs, though its server would keep it; never one in use", async () => {
    // a server that keeps idle connections for ten minutes and answers /slow after 1 s
    const closed: Array<number> = []
    const server = Http.createServer((req, res) => {
      const answer = () => res.end("done")
      if (req.url === "/slow") setTimeout(answer, 1_000)
      else answer()
    })
    server.keepAliveTimeout = 600_000
    server.on("connection", (socket) => socket.on("close", () => closed.push(Date.now())))
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done))
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const guarded = OutboundGuard.makeFetch({ allowPrivate: true, idleSocketMs: 300 })
    try {
      // in use for 1 s, three times the idle bound: answered, not cut
      assert.strictEqual(await (await guarded.fetch(`${base}/slow`)).text(), "done")
      const idleSince = Date.now()
      const waited = await new Promise<number>((done) => {
        const poll = setInterval(() => {
          if (closed.length > 0 || Date.now() - idleSince > 10_000) {
            clearInterval(poll)
            done(Date.now() - idleSince)
          }
        }, 20)
      })
      assert.strictEqual(closed.length, 1, `the idle connection was still open after ${waited} ms`)
    } finally {
      guarded.close()
      server.closeAllConnections()
      await new Promise((done) => server.close(done))
    }
  })

  it("keeps credentials on a same-origin redirect", async () => {
    reset()
    const guarded = OutboundGuard.makeFetch({ allowPrivate: true })
    try {
      const response = await guarded.fetch(`${a().base}/same-origin`, { headers: credentials })
      assert.strictEqual(await response.text(), "server 0 /ok")
      assert.strictEqual(a().seen[1]!.headers["x-api-key"], "secret-2")
      assert.strictEqual(a().seen[1]!.headers.authorization, "Bearer secret-1")
    } finally {
      guarded.close()
    }
  })

  it("follows at most 5 redirects; 303 turns a POST into a GET; manual returns the 3xx", async () => {
    reset()
    const guarded = OutboundGuard.makeFetch({ allowPrivate: true })
    try {
      const error = await failure(guarded.fetch(`${a().base}/loop`))
      assert.match(String((error as Error).cause), /more than 5 redirects/)
      assert.strictEqual(a().seen.length, 6)
      reset()
      const posted = await guarded.fetch(`${a().base}/see-other`, { method: "POST", body: "x=1" })
      assert.strictEqual(await posted.text(), "server 0 /ok")
      assert.deepStrictEqual(a().seen.map((s) => s.method), ["POST", "GET"])
      const manual = await guarded.fetch(`${a().base}/loop`, { redirect: "manual" })
      assert.strictEqual(manual.status, 302)
    } finally {
      guarded.close()
    }
  })

  it.effect("as effect's HttpClient: a refusal is an HttpClientError caused by OutboundRefused", () =>
    Effect.gen(function*() {
      reset()
      const client = yield* HttpClient.HttpClient
      const error = yield* client.execute(HttpClientRequest.get(`${a().base}/x.png`)).pipe(Effect.flip)
      assert.strictEqual(error._tag, "HttpClientError")
      assert.isTrue(OutboundGuard.isRefusal(error))
      assert.strictEqual(a().seen.length, 0)
    }).pipe(Effect.provide(OutboundGuard.layerHttpClient(strict))))

  it.effect("as effect's HttpClient: a Fetch provided around a request cannot replace the guarded one", () =>
    Effect.gen(function*() {
      reset()
      const client = yield* HttpClient.HttpClient
      const error = yield* client.execute(HttpClientRequest.get(`${a().base}/x.png`)).pipe(
        Effect.provideService(FetchHttpClient.Fetch, globalThis.fetch),
        Effect.flip
      )
      assert.isTrue(OutboundGuard.isRefusal(error))
      assert.strictEqual(a().seen.length, 0)
    }).pipe(Effect.provide(OutboundGuard.layerHttpClient(strict))))

  it.effect("as effect's HttpClient with private hosts allowed: answers and bodies", () =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const response = yield* client.execute(HttpClientRequest.get(`${a().base}/same-origin`))
      assert.strictEqual(response.status, 200)
      assert.strictEqual(yield* response.text, "server 0 /ok")
    }).pipe(Effect.provide(Layer.fresh(OutboundGuard.layerHttpClient({ allowPrivate: true })))))
})
