/**
 * Test helpers: a real HTTP destination on loopback that records every request, and a running queue
 * (HTTP on an ephemeral port + worker) on a fresh migrated database.
 */
import { readAnswer, TestDatabase } from "@svc/platform/testing"
import { Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import { HttpServer } from "effect/http"
import * as Http from "node:http"
import type { QueueSettings } from "../src/QueueConfig.ts"
import { QueueConfig } from "../src/QueueConfig.ts"
import * as Service from "../src/Service.ts"
import * as Stores from "../src/store/Stores.ts"
import { contractSettings, StoreTime } from "./contracts/StoreTime.ts"

export interface Received {
  readonly method: string
  readonly path: string
  readonly url: string
  readonly headers: Http.IncomingHttpHeaders
  readonly body: Buffer
  readonly at: number
}

export interface Reply {
  readonly status?: number
  readonly headers?: Record<string, string>
  readonly body?: string | Buffer
  /** Answer only after this many ms. */
  readonly delayMs?: number
}

/** A destination server: records requests; `reply(path, fn)` decides answers (default 200 "ok"). */
export class Destination extends Context.Service<Destination, {
  readonly baseUrl: string
  readonly received: Array<Received>
  readonly on: (path: string, reply: (request: Received, count: number) => Reply) => void
  readonly requests: (path: string) => ReadonlyArray<Received>
  /** Waits (polling, live clock) until `path` received at least `count` requests. */
  readonly waitFor: (path: string, count: number, timeout?: Duration.Input) => Effect.Effect<ReadonlyArray<Received>>
}>()("test/Destination") {
  static readonly layer = Layer.effect(
    Destination,
    Effect.gen(function*() {
      const received: Array<Received> = []
      const handlers = new Map<string, (request: Received, count: number) => Reply>()
      const server = Http.createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (chunk: Buffer) => chunks.push(chunk))
        req.on("end", () => {
          const url = req.url ?? "/"
          const path = url.split("?")[0]!
          const request: Received = {
            method: req.method ?? "",
            path,
            url,
            headers: req.headers,
            body: Buffer.concat(chunks),
            at: Date.now()
          }
          received.push(request)
          const count = received.filter((r) => r.path === path).length
          const reply = handlers.get(path)?.(request, count) ?? {}
          const send = () => {
            if (res.destroyed) return
            res.writeHead(reply.status ?? 200, { "content-type": "text/plain", ...reply.headers })
            res.end(reply.body ?? "ok")
          }
          if (reply.delayMs === undefined) send()
          else setTimeout(send, reply.delayMs)
        })
      })
      yield* Effect.acquireRelease(
        Effect.callback<void>((resume) => {
          server.listen(0, "127.0.0.1", () => resume(Effect.void))
        }),
        () =>
          Effect.callback<void>((resume) => {
            server.closeAllConnections()
            server.close(() => resume(Effect.void))
          })
      )
      const port = (server.address() as { port: number }).port
      const requests = (path: string) => received.filter((r) => r.path === path)
      return Destination.of({
        baseUrl: `http://127.0.0.1:${port}`,
        received,
        on: (path, reply) => void handlers.set(path, reply),
        requests,
        waitFor: (path, count, timeout = "20 seconds") =>
          poll(
            Effect.sync(() => requests(path)),
            (list) => list.length >= count,
            timeout,
            () => `${path} received ${requests(path).length} requests, expected ${count}`
          )
      })
    })
  )
}

export const TOKEN = "test-token-0123456789"

/** Settings for fast tests: short retries and polls, loopback destinations allowed. */
export const testSettings: Partial<QueueSettings> = {
  token: Option.some(Redacted.make(TOKEN)),
  allowPrivate: true,
  retryBase: Duration.millis(100),
  retryMaxDelay: Duration.seconds(5),
  pollInterval: Duration.millis(200),
  leaseMargin: Duration.seconds(2)
}

/** The queue's base URL (HTTP on an ephemeral port). */
export class QueueUrl extends Context.Service<QueueUrl, string>()("test/QueueUrl") {}

/** A running queue on a fresh database, its base URL, its stores, and a destination server. */
export const queueLayer = (overrides: Partial<QueueSettings> = {}) => {
  const config = QueueConfig.layerWith({ ...testSettings, ...overrides })
  const running = Service.layerNoDeps({ port: 0, host: "127.0.0.1" })
  const url = Layer.effect(
    QueueUrl,
    Effect.map(HttpServer.HttpServer, ({ address }) =>
      `http://127.0.0.1:${address._tag === "UnixPathAddress" ? 0 : address.port}`)
  ).pipe(Layer.provide(running))
  return Layer.mergeAll(url, Destination.layer).pipe(
    Layer.provideMerge(Stores.layer),
    Layer.provideMerge(config),
    Layer.provideMerge(TestDatabase.layer())
  )
}

/** fetch against the queue with the token. */
export const call = (path: string, init: RequestInit & { readonly token?: string | null } = {}) =>
  Effect.gen(function*() {
    const base = yield* QueueUrl
    const headers = new Headers(init.headers)
    if (init.token !== null) headers.set("authorization", `Bearer ${init.token ?? TOKEN}`)
    return yield* readAnswer(yield* Effect.promise(() => fetch(base + path, { ...init, headers })))
  })

/** Publish to `destination` (a URL or group name) with headers; returns status and JSON body. */
export const publish = (
  destination: string,
  options: { readonly body?: string | Uint8Array; readonly headers?: Record<string, string>; readonly query?: string; readonly token?: string | null } = {}
) =>
  call(`/v2/publish/${destination}${options.query === undefined ? "" : `?${options.query}`}`, {
    method: "POST",
    body: (options.body ?? "hello") as BodyInit,
    headers: options.headers ?? {},
    token: options.token === undefined ? TOKEN : options.token
  })

/** Polls GET /v2/messages/:id until `until` holds. */
export const waitForMessage = (id: string, until: (message: any) => boolean, timeout: Duration.Input = "20 seconds") =>
  poll(Effect.map(call(`/v2/messages/${id}`), (r) => r.body), until, timeout, () => `message ${id} did not reach the state`)

/** Runs `effect` every 20 ms (live clock) until `until` holds; dies after `timeout`. */
export const poll = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  until: (a: A) => boolean,
  timeout: Duration.Input,
  what: () => string
): Effect.Effect<A, E, R> =>
  Effect.gen(function*() {
    const deadline = Date.now() + Duration.toMillis(Duration.fromInputUnsafe(timeout))
    while (true) {
      const value = yield* effect
      if (until(value)) return value
      if (Date.now() > deadline) return yield* Effect.die(new Error(what()))
      yield* Effect.sleep("20 millis")
    }
  })

/**
 * Every store on a fresh migrated database, with a `StoreTime` that moves its stored times (what the
 * Postgres runs of the store contracts get; a new database per test).
 */
export const postgresStoresWith = (overrides: Partial<QueueSettings>) =>
  Layer.merge(Stores.layer, StoreTime.postgres).pipe(
    Layer.provide(QueueConfig.layerWith({ ...contractSettings, ...overrides })),
    Layer.provide(TestDatabase.layer())
  )

export const postgresStores = postgresStoresWith({})
