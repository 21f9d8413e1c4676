/**
 * A queue over the memory stores behind an in-memory web handler (`toWebHandler`: no socket, no
 * database, no worker), for the unit tests that talk HTTP to it. The middleware of every service
 * (`@svc/platform` Http.ts) is in front, exactly as on a socket.
 */
import type { OutboundGuard } from "@svc/platform"
import { toWebHandler } from "@svc/platform"
import { Effect, Layer, Option, Redacted } from "effect"
import type { HttpRouter } from "effect/http"
import { Resolver } from "../../src/Destinations.ts"
import { QUERY_AS_SENT, routes } from "../../src/http.ts"
import { QueueConfig } from "../../src/QueueConfig.ts"
import type { Messages } from "../../src/store/Messages.ts"
import * as Stores from "../../src/store/Stores.ts"

export const TOKEN = "unit-token-0123456789"

/** No DNS: names under example.com resolve to a public address, others do not resolve. */
const resolve: OutboundGuard.Resolve = async (hostname) => {
  if (/(^|\.)example\.com$/i.test(hostname)) return [{ address: "93.184.215.14", family: 4 }]
  throw Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: "ENOTFOUND" })
}

// The private-address guard on (as in production), with the resolver above.
const stores = Stores.layerMemory.pipe(
  Layer.provideMerge(QueueConfig.layerWith({ token: Option.some(Redacted.make(TOKEN)), allowPrivate: false })),
  Layer.merge(Layer.succeed(Resolver, resolve))
)

export interface Answer {
  readonly status: number
  /** The body parsed as JSON, or its text when it is not JSON. */
  readonly body: any
  /** The length of the body in bytes. */
  readonly size: number
}

export type Call = (path: string, init?: RequestInit & { readonly token?: string | null }) => Effect.Effect<Answer>

/** A fresh queue (memory stores) behind a web handler; `call` sends a request with the token unless `token: null`. */
export const withQueue = <A, E>(test: (call: Call) => Effect.Effect<A, E, Messages>) =>
  Effect.scoped(Effect.gen(function*() {
    const context = yield* Layer.build(stores)
    const app = routes.pipe(Layer.provideMerge(Layer.succeedContext(context)))
    // The raw publish route's per-request needs (HttpRouter's `Request<"Requires", …>` markers) are in
    // `context`, merged above; the platform's `toWebHandler` types only the router's own needs.
    const { handler, dispose } = toWebHandler(app as Layer.Layer<Layer.Success<typeof app>, never, HttpRouter.HttpRouter>, {
      name: "queue",
      queryAsSent: QUERY_AS_SENT
    })
    yield* Effect.addFinalizer(() => Effect.promise(dispose))
    const call: Call = (path, init = {}) =>
      Effect.promise(async () => {
        const headers = new Headers(init.headers)
        if (init.token !== null) headers.set("authorization", `Bearer ${init.token ?? TOKEN}`)
        const response = await handler(new Request(`http://queue.test${path}`, { ...init, headers }))
        const bytes = new Uint8Array(await response.arrayBuffer())
        const text = new TextDecoder().decode(bytes)
        let body: unknown = text
        try {
          body = text === "" ? undefined : JSON.parse(text)
        } catch {
          // not JSON: the text
        }
        return { status: response.status, body, size: bytes.length }
      })
    return yield* test(call).pipe(Effect.provideContext(context))
  }))

/** A request with `payload` as its JSON body. */
export const json = (method: string, payload: unknown): RequestInit => ({
  method,
  body: JSON.stringify(payload),
  headers: { "content-type": "application/json" }
})
