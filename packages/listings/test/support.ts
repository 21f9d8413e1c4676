/** Shared test helpers: records, a listings stack on a fresh database, HTTP clients. */
import { toWebHandler, serve } from "@svc/platform"
import { Client, get, TestDatabase } from "@svc/platform/testing"
import { Duration, Effect, Layer, Option, Redacted, Result } from "effect"
import { type HttpClient, HttpServer } from "effect/http"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { ImageCacher, ImageStore } from "../src/Images.ts"
import { ListingsConfig } from "../src/ListingsConfig.ts"
import { type FeedRecord, normalize } from "../src/Normalize.ts"
import { OfferStore } from "../src/OfferStore.ts"
import { makeServices, routes } from "../src/Service.ts"
import { type SourceConfig, Sources } from "../src/Sources.ts"

export const ADMIN_TOKEN = "test-admin-token"

/** A valid feed record; override what the test is about. */
export { record } from "./contracts/fixtures.ts"

/** Upserts records as if `sourceId` had sent them (one batch). */
export const seed = (sourceId: string, records: ReadonlyArray<FeedRecord>) =>
  Effect.gen(function*() {
    const store = yield* OfferStore
    const rows = []
    const images = []
    for (const r of records) {
      const result = normalize(sourceId, r)
      if (Result.isFailure(result)) return yield* Effect.die(new Error(`bad fixture: ${result.failure}`))
      rows.push(result.success.row)
      images.push(...result.success.images)
    }
    for (let i = 0; i < rows.length; i += 2000) {
      yield* store.upsertBatch(sourceId, rows.slice(i, i + 2000), images.slice(0, 0))
    }
  })

export const defaultSources: ReadonlyArray<SourceConfig> = [
  { id: "alpha", adapter: "json", url: "http://127.0.0.1:9/alpha.json" },
  { id: "beta", adapter: "csv", url: "http://127.0.0.1:9/beta.csv" },
  { id: "off", adapter: "json", url: "http://127.0.0.1:9/off.json", enabled: false }
]

export interface StackOptions {
  readonly sources?: ReadonlyArray<SourceConfig>
  readonly adminToken?: string | undefined
  readonly leaseTtl?: Duration.Duration
  readonly batchSize?: number
  readonly feedMaxDuration?: Duration.Duration
  readonly answerCacheBytes?: number
  readonly imageStore?: Layer.Layer<ImageStore, any, any>
  readonly cacher?: Layer.Layer<ImageCacher, any, any>
  /** LISTINGS_ALLOW_PRIVATE: true by default here, since the tests' feeds and images are on 127.0.0.1. */
  readonly allowPrivate?: boolean
  /** The outbound client (default: the service's own, the guard configured from ListingsConfig). */
  readonly httpClient?: Layer.Layer<HttpClient.HttpClient, never, any>
}

/** The services on the current test database. */
export const services = (options: StackOptions = {}) =>
  makeServices(
    Layer.mergeAll(
      ListingsConfig.layerTest({
        adminToken: options.adminToken === undefined ? Option.none() : Option.some(Redacted.make(options.adminToken)),
        ...(options.leaseTtl ? { leaseTtl: options.leaseTtl } : {}),
        ...(options.batchSize ? { batchSize: options.batchSize } : {}),
        ...(options.feedMaxDuration ? { feedMaxDuration: options.feedMaxDuration } : {}),
        ...(options.answerCacheBytes === undefined ? {} : { answerCacheBytes: options.answerCacheBytes }),
        allowPrivate: options.allowPrivate ?? true
      }),
      Sources.layerStatic(options.sources ?? defaultSources),
      options.imageStore ?? ImageStore.layerDisabled
    ),
    options.cacher ?? ImageCacher.layerDisabled,
    ...(options.httpClient === undefined ? [] : [options.httpClient as Layer.Layer<HttpClient.HttpClient>])
  )

/** The service's routes (all but `/ready`), as it serves them. */
export const allRoutes = routes


/** A real server on 127.0.0.1:<random> serving every route, over the given services. */
export const socketClient = <E, R>(servicesLayer: Layer.Layer<any, E, R>) =>
  Layer.effect(
    Client,
    Effect.gen(function*() {
      const { address } = yield* HttpServer.HttpServer
      const baseUrl = `http://127.0.0.1:${address._tag === "UnixPathAddress" ? 0 : address.port}`
      return { baseUrl, fetch: (path, init) => Effect.promise(() => fetch(baseUrl + path, { redirect: "manual", ...init })) }
    })
  ).pipe(Layer.provide(serve(allRoutes, { name: "listings", port: 0, host: "127.0.0.1" }).pipe(Layer.provide(servicesLayer))))

/** The same routes in-process (no socket). */
export const inProcessClient = <E, R>(servicesLayer: Layer.Layer<any, E, R>) =>
  Layer.effect(
    Client,
    Effect.gen(function*() {
      const context = yield* Layer.build(servicesLayer)
      const { handler } = yield* Effect.acquireRelease(
        Effect.sync(() => toWebHandler(allRoutes.pipe(Layer.provide(Layer.succeedContext(context))) as any)),
        ({ dispose }) => Effect.promise(dispose)
      )
      return {
        baseUrl: "http://localhost",
        fetch: (path, init) => Effect.promise(() => handler(new Request(`http://localhost${path}`, init)))
      }
    })
  )


/** A node:http server on 127.0.0.1:0 for the life of the scope; returns its base URL. */
export const httpServer = (handler: Http.RequestListener) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<Http.Server>((resolve) => {
        const server = Http.createServer(handler)
        server.listen(0, "127.0.0.1", () => resolve(server))
      })
    ),
    (server) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          server.closeAllConnections()
          server.close(() => resolve())
        })
      )
  ).pipe(Effect.map((server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`))

export interface Raw {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  readonly bytes: Buffer
}

/** A request as sent, the answer as received (no decoding). */
export const raw = (path: string, headers: Record<string, string> = {}, method = "GET") =>
  Effect.gen(function*() {
    const { baseUrl } = yield* Client
    return yield* Effect.promise(() =>
      new Promise<Raw>((resolve, reject) => {
        const request = Http.request(baseUrl + path, { method, headers }, (response) => {
          const chunks: Array<Buffer> = []
          response.on("data", (chunk: Buffer) => chunks.push(chunk))
          response.on("end", () => resolve({ status: response.statusCode!, headers: response.headers, bytes: Buffer.concat(chunks) }))
          response.on("error", reject)
        })
        request.on("error", reject)
        request.end()
      })
    )
  })

export { TestDatabase }

export { Client, get }
