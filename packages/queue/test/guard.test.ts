/**
 * The outbound guard over the queue's real HTTP API with `QUEUE_ALLOW_PRIVATE=false`: a table of
 * disguised internal addresses as destination, `Svc-Callback`, `Svc-Failure-Callback` (header and
 * query forms) and URL group endpoint. Each is 400 naming the parameter and the problem, and nothing
 * is stored. Names resolve through an injected resolver (no real DNS, no connection anywhere); the
 * worker is off, so nothing could be delivered even by mistake.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import type { OutboundGuard } from "@svc/platform"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Resolver } from "../src/Destinations.ts"
import { makeSender } from "../src/Delivery.ts"
import { call, publish, queueLayer } from "./support.ts"

/** What the injected resolver answers; other names do not resolve. */
const names: Record<string, ReadonlyArray<OutboundGuard.ResolvedAddress>> = {
  "loopback.test.invalid": [{ address: "127.0.0.1", family: 4 }],
  "loopback6.test.invalid": [{ address: "::1", family: 6 }],
  "compat.test.invalid": [{ address: "::7f00:1", family: 6 }],
  "sixtofour.test.invalid": [{ address: "2002:7f00:1::", family: 6 }],
  "metadata.test.invalid": [{ address: "169.254.169.254", family: 4 }],
  // public at publish; delivery would use the system's DNS, where `.invalid` never resolves
  "public.test.invalid": [{ address: "93.184.216.34", family: 4 }]
}
const resolver: OutboundGuard.Resolve = async (hostname) => {
  const found = names[hostname.toLowerCase()]
  if (found === undefined) throw Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: "ENOTFOUND" })
  return found
}

/** [disguise, what the problem must say] — each a URL a path, header or JSON body can carry. */
const disguises: ReadonlyArray<readonly [string, RegExp]> = [
  ["http://127.0.0.1:8080/hook", /127\.0\.0\.1 is in the loopback range/],
  ["http://2130706433/hook", /127\.0\.0\.1.*loopback/], // decimal
  ["http://0x7f000001/hook", /127\.0\.0\.1.*loopback/], // hex
  ["http://0x7f.1/hook", /127\.0\.0\.1.*loopback/], // hex, short
  ["http://0177.0.0.1/hook", /127\.0\.0\.1.*loopback/], // octal
  ["http://127.1/hook", /127\.0\.0\.1.*loopback/], // short
  ["http://127.0.1/hook", /127\.0\.0\.1.*loopback/],
  ["http://127.0.0.1./hook", /127\.0\.0\.1.*loopback/], // trailing dot
  ["http://0.0.0.0/hook", /unspecified/],
  ["http://10.0.0.1/hook", /private/],
  ["http://192.168.1.1/hook", /private/],
  ["http://172.31.255.255/hook", /private/],
  ["http://100.100.100.200/hook", /carrier-grade NAT/],
  ["http://169.254.169.254/latest/meta-data", /link-local/],
  ["http://[::1]/hook", /loopback/],
  ["http://[::]/hook", /unspecified/],
  ["http://[::ffff:127.0.0.1]/hook", /127\.0\.0\.1.*loopback/], // IPv4-mapped
  ["http://[::ffff:a9fe:a9fe]/hook", /169\.254\.169\.254.*link-local/],
  ["http://[::127.0.0.1]/hook", /IPv4-compatible.*127\.0\.0\.1/], // IPv4-compatible (missed before)
  ["http://[::7f00:1]:9000/hook", /IPv4-compatible.*127\.0\.0\.1/],
  ["http://[2002:7f00:1::]/hook", /6to4.*127\.0\.0\.1/], // 6to4 (missed before)
  ["http://[2002:a9fe:a9fe::1]/hook", /6to4.*169\.254\.169\.254/],
  ["http://[64:ff9b::127.0.0.1]/hook", /NAT64.*127\.0\.0\.1/], // NAT64
  ["http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook", /Teredo/],
  ["http://[fe80::1]/hook", /link-local/],
  ["http://[fd12:3456::1]/hook", /unique-local/],
  ["http://localhost/hook", /localhost is a local name/],
  ["http://localhost./hook", /local name/], // trailing dot
  ["http://app.localhost/hook", /app\.localhost is a local name/],
  ["http://nas.local/hook", /local name/],
  ["http://metadata.google.internal/computeMetadata/v1/", /local name/],
  // userinfo tricks: the queue refuses credentials in a URL before the guard looks at the host
  ["http://example.com@127.0.0.1/hook", /127\.0\.0\.1.*loopback|credentials in the URL/],
  ["http://user:pw@[::1]:8443/hook", /::1.*loopback|credentials in the URL/],
  ["http://loopback.test.invalid/hook", /resolves to an address in the loopback range/], // names that resolve inward
  ["http://loopback6.test.invalid/hook", /resolves to an address in the loopback range/],
  ["http://compat.test.invalid/hook", /resolves to an address in the IPv4-compatible range/],
  ["http://sixtofour.test.invalid/hook", /resolves to an address in the 6to4 range/],
  ["http://metadata.test.invalid/hook", /resolves to an address in the link-local range/]
]

const PUBLIC = "http://public.test.invalid/hook"

const stored = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [messages] = yield* sql<{ n: number }>`SELECT count(*)::int4 AS n FROM queue.messages`
  const [topics] = yield* sql<{ n: number }>`SELECT count(*)::int4 AS n FROM queue.topics`
  return { messages: messages!.n, topics: topics!.n }
})

const guarded = queueLayer({ allowPrivate: false, worker: false }).pipe(
  Layer.provide(Layer.succeed(Resolver, resolver))
)

layer(guarded, { timeout: 120_000, excludeTestServices: true })("QUEUE_ALLOW_PRIVATE=false over the HTTP API", (it) => {
  it.effect(`${disguises.length} disguises as destination: 400 naming the destination and why, nothing stored`, () =>
    Effect.gen(function*() {
      assert.isAtLeast(disguises.length, 30)
      const before = yield* stored
      for (const [url, why] of disguises) {
        const response = yield* publish(url)
        assert.strictEqual(response.status, 400, `${url}: ${JSON.stringify(response.body)}`)
        assert.strictEqual(response.body.code, "invalid_request")
        const issue = response.body.issues.find((i: any) => i.parameter === "destination")
        assert.isDefined(issue, `${url}: ${JSON.stringify(response.body)}`)
        assert.match(issue.problem, why, url)
        if (/ range/.test(issue.problem)) assert.match(issue.problem, /QUEUE_ALLOW_PRIVATE=true/, url)
      }
      assert.deepStrictEqual(yield* stored, before)
    }))

  it.effect("the same disguises as Svc-Callback and Svc-Failure-Callback, as header and as query parameter", () =>
    Effect.gen(function*() {
      const before = yield* stored
      for (const [url, why] of disguises) {
        for (const name of ["Svc-Callback", "Svc-Failure-Callback"]) {
          const viaHeader = yield* publish(PUBLIC, { headers: { [name]: url } })
          assert.strictEqual(viaHeader.status, 400, `${name} ${url}: ${JSON.stringify(viaHeader.body)}`)
          const issue = viaHeader.body.issues.find((i: any) => i.parameter === name)
          assert.isDefined(issue, `${name} ${url}: ${JSON.stringify(viaHeader.body)}`)
          assert.match(issue.problem, why, `${name} ${url}`)
          const viaQuery = yield* publish(PUBLIC, { query: `${name.toLowerCase()}=${encodeURIComponent(url)}` })
          assert.strictEqual(viaQuery.status, 400, `${name} ${url} (query): ${JSON.stringify(viaQuery.body)}`)
          assert.isDefined(viaQuery.body.issues.find((i: any) => i.parameter === name.toLowerCase()))
        }
      }
      assert.deepStrictEqual(yield* stored, before)
    }))

  it.effect("the same disguises as URL group endpoints: 400 naming the endpoint, no group stored", () =>
    Effect.gen(function*() {
      const before = yield* stored
      for (const [url, why] of disguises) {
        const response = yield* call("/v2/topics/guarded/endpoints", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ endpoints: [{ name: "ok", url: PUBLIC }, { name: "bad", url }] })
        })
        assert.strictEqual(response.status, 400, `${url}: ${JSON.stringify(response.body)}`)
        const issue = response.body.issues.find((i: any) => i.parameter === "endpoints[1].url")
        assert.isDefined(issue, `${url}: ${JSON.stringify(response.body)}`)
        assert.match(issue.problem, why, url)
      }
      assert.strictEqual((yield* call("/v2/topics/guarded")).status, 404)
      assert.deepStrictEqual(yield* stored, before)
    }))

  it.effect("a name resolving to public addresses is accepted (the injected resolver is what was asked)", () =>
    Effect.gen(function*() {
      const response = yield* publish(PUBLIC)
      assert.strictEqual(response.status, 201, JSON.stringify(response.body))
    }))
})

describe("delivery", () => {
  it.effect("the sender refuses a disguised loopback destination without connecting", () =>
    Effect.gen(function*() {
      const sender = makeSender({ maxSockets: 2, maxResponseBytes: 1024, allowPrivate: false })
      try {
        for (const url of ["http://[::127.0.0.1]:9/x", "http://[2002:7f00:1::]:9/x", "http://127.1:9/x", "http://localhost:9/x"]) {
          const outcome = yield* sender.send({ url, method: "POST", headers: {}, body: new Uint8Array(), timeoutMs: 2000 })
          assert.strictEqual(outcome._tag, "Failed", url)
          if (outcome._tag === "Failed") assert.match(outcome.error, /refused|private or loopback/, url)
        }
      } finally {
        sender.close()
      }
    }))
})
