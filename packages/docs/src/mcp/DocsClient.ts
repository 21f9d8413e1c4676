/**
 * The MCP server's way to the REST API v2: an `HttpApiClient` derived from the shared `DocsApi`
 * definition (so the two cannot drift), with the caller's API key forwarded, transient failures
 * (network errors, 5xx) retried with a jittered backoff, and every call bounded by 60 seconds
 * (spec/2 "Limits"). Over HTTP the caller's address goes along too, signed with the forwarding secret
 * (`ClientAddress.ts`), so the API rate-limits each MCP client on its own. Failures come back as one `DocsApiFailure` whose `kind` the tools turn into a
 * sentence for the agent.
 */
import { DocsApi, type LibraryIndexing, type LibrarySearchResponse } from "@svc/schema"
import { Context, Duration, Effect, Layer, Schedule, Schema } from "effect"
import { FetchHttpClient, HttpClient, HttpClientError, HttpClientRequest } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import { ForwardSecret, forwardingHeaders } from "../ClientAddress.ts"

/** Why a call to the REST API did not give an answer. */
export class DocsApiFailure extends Schema.TaggedError<DocsApiFailure>()("DocsApiFailure", {
  kind: Schema.Literals(["bad_request", "unauthorized", "not_found", "rate_limited", "timeout", "unavailable", "failed"]),
  /** HTTP status, when the API answered. */
  status: Schema.optional(Schema.Number),
  /** Seconds, from `Retry-After` (rate_limited). */
  retryAfter: Schema.optional(Schema.Number),
  message: Schema.String
}) {}

/**
 * The API key of the MCP request being served (HTTP: from its headers; stdio: `--api-key`); `""` for
 * a key header that holds none (the API refuses it, 401), `undefined` for none at all (anonymous).
 */
export const CallerApiKey = Context.Reference<string | undefined>("@svc/docs/mcp/CallerApiKey", {
  defaultValue: () => undefined
})

/**
 * The address of the MCP client being served (HTTP only; stdio has none): forwarded to the API, signed,
 * so its anonymous rate limit is this client's own rather than the MCP server's.
 */
export const CallerAddress = Context.Reference<string | undefined>("@svc/docs/mcp/CallerAddress", {
  defaultValue: () => undefined
})

export type ContextAnswer =
  | { readonly _tag: "Text"; readonly text: string }
  | { readonly _tag: "Indexing"; readonly indexing: LibraryIndexing }

export interface DocsClientOptions {
  /** Where the REST API v2 listens, e.g. `http://localhost:8789`. */
  readonly baseUrl: string
  /** Per call, retries included (default 60 seconds). */
  readonly timeout?: Duration.Input | undefined
  /** Retries of a transient failure (default 2). */
  readonly retries?: number | undefined
}

/** "60 seconds", "300 ms": for sentences an agent reads. */
const spoken = (duration: Duration.Duration) => {
  const ms = Duration.toMillis(duration)
  return ms >= 1000 ? `${ms / 1000} seconds` : `${ms} ms`
}

const statusOf = (error: unknown): number | undefined =>
  HttpClientError.isHttpClientError(error) ? error.response?.status : undefined

/** Network errors and 5xx are worth another attempt; a 4xx is an answer. */
const isTransient = (error: unknown): boolean => {
  if (!HttpClientError.isHttpClientError(error)) return false
  const status = error.response?.status
  return status === undefined ? error.reason._tag === "TransportError" : status >= 500
}

/**
 * The `message` of an undeclared 4xx answer's JSON body (the suite's `{code, message}`: a 400 names the
 * bad parameter), at most 300 characters; undefined when there is none.
 */
const messageOf = (error: unknown): Effect.Effect<string | undefined> => {
  const response = HttpClientError.isHttpClientError(error) ? error.response : undefined
  if (response === undefined || response.status < 400 || response.status >= 500) return Effect.succeed(undefined)
  return response.json.pipe(
    Effect.map((body) =>
      typeof body === "object" && body !== null && typeof (body as { message?: unknown }).message === "string"
        ? (body as { message: string }).message.slice(0, 300)
        : undefined
    ),
    Effect.orElseSucceed(() => undefined)
  )
}

const toFailure = (error: unknown, bodyMessage?: string | undefined): DocsApiFailure => {
  if (error instanceof DocsApiFailure) return error
  // errors DocsApi declares arrive decoded into their classes (the suite's `{code, message, ...}`)
  const declared = typeof error === "object" && error !== null && "code" in error
    ? error as { readonly code: unknown; readonly message?: unknown; readonly retryAfter?: unknown }
    : undefined
  switch (declared?.code) {
    case "invalid_request":
      return new DocsApiFailure({ kind: "bad_request", status: 400, message: String(declared.message) })
    case "library_not_found":
      return new DocsApiFailure({ kind: "not_found", status: 404, message: String(declared.message) })
    case "unauthorized":
      return new DocsApiFailure({ kind: "unauthorized", status: 401, message: String(declared.message) })
    case "rate_limited":
      return new DocsApiFailure({
        kind: "rate_limited",
        status: 429,
        ...(typeof declared.retryAfter === "number" ? { retryAfter: declared.retryAfter } : {}),
        message: String(declared.message)
      })
  }
  const status = statusOf(error)
  if (status === 401 || status === 403) {
    return new DocsApiFailure({ kind: "unauthorized", status, message: "The documentation API refused the API key" })
  }
  if (status === 404) return new DocsApiFailure({ kind: "not_found", status, message: "Not found" })
  if (status === 429) {
    const header = HttpClientError.isHttpClientError(error) ? error.response?.headers["retry-after"] : undefined
    const retryAfter = header !== undefined && /^\d+$/.test(header) ? Number(header) : undefined
    return new DocsApiFailure({
      kind: "rate_limited",
      status,
      ...(retryAfter === undefined ? {} : { retryAfter }),
      message: "The documentation API rate limited the request"
    })
  }
  // any other 4xx (400 undeclared, 413, 414, 431...): the request is at fault, another try is no use
  if (status !== undefined && status >= 400 && status < 500) {
    return new DocsApiFailure({ kind: "bad_request", status, message: bodyMessage ?? "no reason given" })
  }
  if (status !== undefined) {
    return new DocsApiFailure({ kind: "failed", status, message: `The documentation API answered ${status}` })
  }
  if (HttpClientError.isHttpClientError(error) && error.reason._tag === "TransportError") {
    return new DocsApiFailure({ kind: "unavailable", message: "The documentation API could not be reached" })
  }
  return new DocsApiFailure({
    kind: "failed",
    message: "The documentation API gave an answer this server could not read"
  })
}

export class DocsClient extends Context.Service<DocsClient, {
  readonly searchLibraries: (
    libraryName: string,
    query: string | undefined
  ) => Effect.Effect<LibrarySearchResponse, DocsApiFailure>
  /**
   * The `type=txt` context for a question (within `tokens`, default the API's; `page` n: the n-th
   * budget of snippets), or the 202 "still indexing" answer.
   */
  readonly context: (
    libraryId: string,
    query: string | undefined,
    options?: { readonly tokens?: number | undefined; readonly page?: number | undefined }
  ) => Effect.Effect<ContextAnswer, DocsApiFailure>
}>()("@svc/docs/mcp/DocsClient") {
  /** Needs an `HttpClient`. */
  static readonly layerNoDeps = (options: DocsClientOptions) =>
    Layer.effect(
      DocsClient,
      Effect.gen(function*() {
        const timeout = Duration.fromInputUnsafe(options.timeout ?? "60 seconds")
        const forwardSecret = yield* ForwardSecret
        const api = yield* HttpApiClient.make(DocsApi, {
          baseUrl: options.baseUrl.replace(/\/+$/, ""),
          // the key and address of the request being served, read per call (one client serves every caller)
          transformClient: HttpClient.mapRequestEffect((request) =>
            Effect.gen(function*() {
              const key = yield* CallerApiKey
              const address = yield* CallerAddress
              const keyed = key === undefined ? request : HttpClientRequest.bearerToken(request, key)
              return address === undefined
                ? keyed
                : HttpClientRequest.setHeaders(keyed, forwardingHeaders(forwardSecret, address))
            })
          )
        })
        const call = <A>(effect: Effect.Effect<A, unknown>): Effect.Effect<A, DocsApiFailure> =>
          effect.pipe(
            Effect.retry({
              schedule: Schedule.exponential("200 millis").pipe(Schedule.jittered),
              times: options.retries ?? 2,
              while: isTransient
            }),
            Effect.timeoutOrElse({
              duration: timeout,
              orElse: () =>
                Effect.fail(new DocsApiFailure({
                  kind: "timeout",
                  message: `The documentation API did not answer within ${spoken(timeout)}`
                }))
            }),
            Effect.catch((error) => Effect.flatMap(messageOf(error), (message) => Effect.fail(toFailure(error, message))))
          )
        return DocsClient.of({
          searchLibraries: (libraryName, query) =>
            call(api.libs.search({ query: { libraryName, ...(query === undefined ? {} : { query }) } })),
          context: (libraryId, query, { page, tokens } = {}) =>
            call(api.context.context({
              query: {
                libraryId,
                type: "txt",
                ...(query === undefined ? {} : { query }),
                ...(tokens === undefined ? {} : { tokens }),
                ...(page === undefined ? {} : { page })
              }
            })).pipe(
              Effect.map((answer): ContextAnswer =>
                typeof answer === "string"
                  ? { _tag: "Text", text: answer }
                  : "code" in answer && answer.code === "library_indexing"
                  ? { _tag: "Indexing", indexing: answer as LibraryIndexing }
                  // asked for txt: a JSON answer means a newer API; show it rather than fail
                  : { _tag: "Text", text: JSON.stringify(answer, null, 2) }
              )
            )
        })
      })
    )

  static readonly layer = (options: DocsClientOptions) =>
    DocsClient.layerNoDeps(options).pipe(Layer.provide(FetchHttpClient.layer))
}
