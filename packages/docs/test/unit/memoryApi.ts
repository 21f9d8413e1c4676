/**
 * The docs REST API v2 over the memory layers, in-process (no socket, no database): what the fast
 * tier's handler and MCP tests call. Each `memoryApi` is a fresh index, keys and rate limiter.
 */
import { apiRoutes, toWebHandler } from "@svc/platform"
import { DocsApi } from "@svc/schema"
import { Effect, Layer } from "effect"
import { FetchHttpClient } from "effect/http"
import { ApiKeys } from "../../src/ApiKeys.ts"
import { DocsAuthLive } from "../../src/Auth.ts"
import { ApiHandlers, OpenApiRoute } from "../../src/http.ts"
import { IndexStore } from "../../src/IndexStore.ts"
import { DocsClient } from "../../src/mcp/DocsClient.ts"
import { Search } from "../../src/Search.ts"

/** The services the API needs, in memory; one build shares one index between the store and Search. */
export const memoryServices = Layer.mergeAll(Search.layerMemory, IndexStore.layerMemory, ApiKeys.layerMemory)

/**
 * The API's handlers over the services in the context: `fetch` (a web `fetch` answered in-process)
 * and `get(path, init)` as an Effect.
 */
export const memoryApi = Effect.gen(function*() {
  const services = yield* Effect.context<Search | ApiKeys>()
  const { handler } = yield* Effect.acquireRelease(
    Effect.sync(() =>
      toWebHandler(
        Layer.merge(apiRoutes({ api: DocsApi, handlers: ApiHandlers }), OpenApiRoute).pipe(
          Layer.provide(DocsAuthLive),
          Layer.provide(Layer.succeedContext(services))
        )
      )
    ),
    ({ dispose }) => Effect.promise(dispose)
  )
  const fetch: typeof globalThis.fetch = (input, init) => handler(new Request(input, init))
  return {
    fetch,
    get: (path: string, init?: RequestInit) => Effect.promise(() => fetch(`http://docs.test${path}`, init))
  }
})

/** The MCP tools' `DocsClient`, its HTTP requests answered by {@link memoryApi}'s handler. */
export const memoryDocsClient = Layer.unwrap(Effect.gen(function*() {
  const { fetch } = yield* memoryApi
  return DocsClient.layerNoDeps({ baseUrl: "http://docs.test", retries: 0 }).pipe(
    Layer.provide(FetchHttpClient.layer),
    Layer.provide(Layer.succeed(FetchHttpClient.Fetch, fetch))
  )
}))
