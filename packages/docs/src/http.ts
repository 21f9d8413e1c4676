/**
 * HTTP: the `DocsApi` handlers (REST API v2). The context endpoint answers text or JSON by `type`, and
 * 202 while the library has no index yet, so it writes its responses itself.
 */
import { DocsApi, type LibraryIndexing } from "@svc/schema"
import { Effect, Layer } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { Search } from "./Search.ts"
import { render, SEPARATOR } from "./Splitter.ts"

const json = (body: unknown, status = 200) =>
  HttpServerResponse.text(JSON.stringify(body), { status, contentType: "application/json" })

const HealthHandlers = HttpApiBuilder.group(
  DocsApi,
  "health",
  (handlers) => handlers.handle("health", () => Effect.succeed({ status: "ok" as const }))
)

const LibsHandlers = HttpApiBuilder.group(
  DocsApi,
  "libs",
  Effect.fn(function*(handlers) {
    const search = yield* Search
    return handlers.handle("search", ({ query }) =>
      Effect.map(search.libraries(query.libraryName, query.query), (results) => ({
        results,
        // No team settings exist yet (API keys come later), so no filter is ever applied.
        searchFilterApplied: false
      })))
  })
)

const ContextHandlers = HttpApiBuilder.group(
  DocsApi,
  "context",
  Effect.fn(function*(handlers) {
    const search = yield* Search
    return handlers.handle("context", ({ query }) =>
      Effect.gen(function*() {
        const answer = yield* search.context({ libraryId: query.libraryId, query: query.query, tokens: query.tokens })
        if (answer._tag === "Indexing") {
          const body: LibraryIndexing = {
            code: "library_indexing",
            message: answer.state === "failed"
              ? `${answer.libraryId} could not be indexed yet (its last run failed); try again after a refresh`
              : `${answer.libraryId} is being indexed; try again in a moment`,
            libraryId: answer.libraryId,
            version: answer.version,
            state: answer.state
          }
          return json(body, 202)
        }
        if (query.type === "json") {
          return json({
            libraryId: answer.libraryId,
            version: answer.version,
            query: query.query ?? null,
            totalTokens: answer.totalTokens,
            snippets: answer.snippets
          })
        }
        const text = answer.snippets.length === 0
          ? `No snippet of ${answer.libraryId} fits in ${query.tokens} tokens: ask with a larger tokens value.`
          : answer.snippets.map((snippet) => render({ ...snippet, body: snippet.content })).join(SEPARATOR)
        return HttpServerResponse.text(text, { contentType: "text/plain; charset=utf-8" })
      }))
  })
)

/** The API's handlers; they need `Search`. */
export const ApiHandlers = Layer.mergeAll(HealthHandlers, LibsHandlers, ContextHandlers)
