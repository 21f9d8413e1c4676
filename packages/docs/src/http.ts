/**
 * HTTP: the `DocsApi` handlers (REST API v2). The context endpoint answers text or JSON by `type`, and
 * 202 with the version's state (queued, indexing, failed) while it has no index yet, so it writes its
 * responses itself.
 *
 * `DocsAuth` (Auth.ts) runs before them: it refuses wrong keys, applies the rate limits and provides
 * the caller, whose team settings (if any) restrict what search and context may see.
 */
import { openApiRoute } from "@svc/platform"
import {
  type Caller,
  DocsApi,
  DocsCaller,
  docsOpenApi,
  InvalidRequest,
  type LibraryIndexing,
  settingsActive,
  type TeamSettings
} from "@svc/schema"
import { Effect, Layer } from "effect"
import { HttpServerRespondable, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { Search } from "./Search.ts"
import { renderRules } from "./ranking/Answer.ts"
import { idPartsProblem } from "./sources/Source.ts"
import { render, SEPARATOR } from "./Splitter.ts"

const json = (body: unknown, status = 200) =>
  HttpServerResponse.text(JSON.stringify(body), { status, contentType: "application/json" })

/** The caller's team settings, when a key with settings calls. */
const accessOf = (caller: Caller): TeamSettings | undefined =>
  caller._tag === "ApiKey" && settingsActive(caller.settings) ? caller.settings : undefined

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
      Effect.gen(function*() {
        const access = accessOf(yield* DocsCaller)
        const results = yield* search.libraries(query.libraryName, query.query, access)
        // spec/2: reports that settings are active, not whether they left anything out.
        return { results, searchFilterApplied: access !== undefined }
      }))
  })
)

const ContextHandlers = HttpApiBuilder.group(
  DocsApi,
  "context",
  Effect.fn(function*(handlers) {
    const search = yield* Search
    return handlers.handle("context", ({ query }) =>
      Effect.gen(function*() {
        // an id the indexer could never have made (a part . or .., over 100 characters): 400, not 404
        const parts = idPartsProblem(query.libraryId)
        if (parts !== undefined) {
          return yield* HttpServerRespondable.toResponse(
            new InvalidRequest({ issues: [{ in: "query", parameter: "libraryId", problem: `${query.libraryId.slice(0, 200)} is not a library id: ${parts}` }] })
          )
        }
        // Context7 v2's `topic` focuses the answer: its words join the question's (alone, it is the question)
        const question = [query.query, query.topic].filter((part) => part !== undefined && part.trim() !== "").join(" ") || undefined
        const answer = yield* search.context({
          libraryId: query.libraryId,
          query: question,
          tokens: query.tokens,
          page: query.page,
          access: accessOf(yield* DocsCaller)
        })
        if (answer._tag === "Indexing") {
          const body: LibraryIndexing = {
            code: "library_indexing",
            message: answer.state === "failed"
              ? `${answer.libraryId} could not be indexed yet (its last run failed); try again after a refresh`
              : answer.state === "queued"
              ? `${answer.libraryId} is queued for indexing; try again in a moment`
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
            // the question answered: the query and the topic's words, as ranked
            query: question ?? null,
            totalTokens: answer.totalTokens,
            ...(answer.rules.length === 0 ? {} : { rules: answer.rules }),
            snippets: answer.snippets
          })
        }
        const snippets = answer.snippets.length === 0
          ? [
            (query.page ?? 1) > 1
              ? `Page ${query.page} of ${answer.libraryId} holds no more snippets: the earlier pages hold them all.`
              : `No snippet of ${answer.libraryId} fits in ${query.tokens} tokens: ask with a larger tokens value.`
          ]
          : answer.snippets.map((snippet) => render({ ...snippet, body: snippet.content }))
        const text = [...(answer.rules.length === 0 ? [] : [renderRules(answer.libraryId, answer.rules)]), ...snippets].join(SEPARATOR)
        return HttpServerResponse.text(text, { contentType: "text/plain; charset=utf-8" })
      }))
  })
)

/** The API's handlers; they need `Search`. */
export const ApiHandlers = Layer.mergeAll(HealthHandlers, LibsHandlers, ContextHandlers)

/**
 * `GET /openapi.json`: `DocsApi`'s document with the routes served outside it (/ready, /rpc, the
 * document itself) merged in (`DocsOpenApi.ts` in @svc/schema, where such a route is documented).
 */
export const OpenApiRoute = openApiRoute(docsOpenApi)
