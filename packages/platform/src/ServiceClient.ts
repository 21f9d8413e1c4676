/**
 * The client side of an operator command (`svc listings ingest`, `svc docs … with DOCS_URL`, `svc queue
 * …`) calling a running service, and how its failures read.
 *
 * The services check the bearer token of their RPC at the HTTP level: a refusal is a plain 401/503
 * answer with the suite's error body, not an RPC message. Read as NDJSON it was "RpcClientDefect:
 * Received empty HTTP response"; an unreachable service was "HttpError: ". `bearerHttpClient` turns an
 * error answer into a `StatusCodeError` carrying the server's message, and `describeFailure` makes one
 * line of any failure: `listings at http://localhost:8787 refused ADMIN_TOKEN (401): Invalid bearer
 * token`, `no answer from listings at http://localhost:8787: connect ECONNREFUSED 127.0.0.1:8787`.
 */
import { Config, Effect, Layer, Redacted, SchemaIssue } from "effect"
import { FetchHttpClient, HttpClient, HttpClientError, HttpClientRequest } from "effect/http"
import { toIssues } from "./Http.ts"
import { serviceTargetProblem } from "./ServiceTarget.ts"

/**
 * A service's base URL from the environment (`QUEUE_URL`, `LISTINGS_URL`, `DOCS_URL`): the rule of every
 * URL setting (`Settings.urlSetting`: spaces around it dropped, only whitespace refused naming it).
 */
export { urlSetting } from "./Settings.ts"

/** The `message` of the suite's error body, or the text itself (shortened). */
const messageOf = (text: string): string | undefined => {
  try {
    const body = JSON.parse(text) as { readonly message?: unknown }
    if (typeof body.message === "string" && body.message !== "") return body.message
  } catch {
    // not JSON
  }
  const trimmed = text.trim()
  return trimmed === "" ? undefined : trimmed.length > 200 ? `${trimmed.slice(0, 197)}...` : trimmed
}

/**
 * A fetch client sending `Authorization: Bearer <token>`, failing on an error status with the server's
 * message. `transformClient` wraps the fetch client beneath that, so what it does to an answer (the
 * queue's cap on answer size) holds for the error body read here as well.
 */
export const bearerHttpClient = (
  token: Redacted.Redacted<string>,
  options?: { readonly transformClient?: ((client: HttpClient.HttpClient) => HttpClient.HttpClient) | undefined }
): Layer.Layer<HttpClient.HttpClient> =>
  Layer.effect(
    HttpClient.HttpClient,
    Effect.map(HttpClient.HttpClient, (fetchClient) =>
      (options?.transformClient?.(fetchClient) ?? fetchClient).pipe(
        HttpClient.mapRequest(HttpClientRequest.bearerToken(Redacted.value(token))),
        HttpClient.transformResponse(Effect.flatMap((response) =>
          response.status < 400
            ? Effect.succeed(response)
            : response.text.pipe(
              Effect.orElseSucceed(() => ""),
              Effect.flatMap((text) =>
                Effect.fail(
                  new HttpClientError.HttpClientError({
                    reason: new HttpClientError.StatusCodeError({
                      request: response.request,
                      response,
                      description: messageOf(text)
                    })
                  })
                )
              )
            )
        ))
      ))
  ).pipe(Layer.provide(FetchHttpClient.layer))

/** Walks `reason` / `cause` links (at most 10). */
const chain = function*(error: unknown): Generator<object> {
  for (let cause = error, depth = 0; typeof cause === "object" && cause !== null && depth < 10; depth++) {
    yield cause
    const { cause: next, reason } = cause as { readonly cause?: unknown; readonly reason?: unknown }
    cause = reason ?? next
  }
}

/** The status and the server's message of an error answer somewhere under `error`. */
export const refusalOf = (error: unknown): { readonly status: number; readonly message: string | undefined } | undefined => {
  for (const cause of chain(error)) {
    if ((cause as { readonly _tag?: unknown })._tag !== "StatusCodeError") continue
    const { description, response } = cause as { readonly response?: { readonly status?: unknown }; readonly description?: unknown }
    if (typeof response?.status === "number") {
      return { status: response.status, message: typeof description === "string" ? description : undefined }
    }
  }
  return undefined
}

/** The deepest message under an error: fetch nests the reason (ECONNREFUSED, …) several causes down. */
export const innermostMessage = (error: unknown): string | undefined => {
  let found: string | undefined
  for (const cause of chain(error)) {
    const message = (cause as { readonly message?: unknown }).message
    if (typeof message === "string" && message !== "") found = message
  }
  return found
}

/**
 * undici's codes for an answer that stopped coming: fetch gives up after 5 minutes without a byte (its
 * default, kept: an RPC that streams progress sends lines well within it, and a service that never
 * answers should not hold a terminal for ever).
 */
const SILENT_ANSWER = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"])

/**
 * One line for an operator: a refusal names the token variable and the status, a service that went
 * silent says the work may go on there, an unreachable service the network error.
 */
export const describeFailure = (
  target: { readonly service: string; readonly url: string; readonly tokenVariable: string },
  error: unknown
): string => {
  const at = `${target.service} at ${target.url}`
  const refusal = refusalOf(error)
  if (refusal !== undefined) {
    const said = refusal.message === undefined ? "" : `: ${refusal.message}`
    return refusal.status === 401 || refusal.status === 403
      ? `${at} refused ${target.tokenVariable} (${refusal.status})${said}`
      : refusal.status === 503
      ? `${at} is unavailable (503)${said}`
      : `${at} answered ${refusal.status}${said}`
  }
  if ([...chain(error)].some((cause) => SILENT_ANSWER.has(String((cause as { readonly code?: unknown }).code)))) {
    return `${at} sent nothing for 5 minutes, so the command stopped waiting; the service may still be doing the work (see its log)`
  }
  return `no answer from ${at}: ${innermostMessage(error) ?? "unknown error"}`
}

/** Why a service's URL and token cannot be sent, naming the variables, never a secret (`ServiceTarget.ts`). */
export const targetProblem = (target: {
  readonly url: string
  readonly urlVariable: string
  readonly token: string
  readonly tokenVariable: string
}): string | undefined =>
  serviceTargetProblem({ url: target.url, urlName: target.urlVariable, token: target.token, tokenName: target.tokenVariable })

/**
 * An RPC client refusing its own payload (effect's client checks it with the procedure's schema and
 * throws "Schema validation failed", a defect) as one line naming the fields, or undefined for any
 * other defect: `Invalid request: name: must be at most 200 characters long`.
 */
export const argumentProblem = (defect: unknown): string | undefined => {
  const issue = (defect as { readonly cause?: unknown } | null)?.cause
  if (!(defect instanceof Error) || !SchemaIssue.isIssue(issue)) return undefined
  const issues = toIssues({ issue } as Parameters<typeof toIssues>[0], "body")
  return `Invalid request: ${issues.map(({ parameter, problem }) => parameter === "" ? problem : `${parameter}: ${problem}`).join("; ")}`
}
