/**
 * Calling the application's upload route (`src/shared/protocol.ts`): one POST of a JSON message, its
 * JSON answer, or its refusal rebuilt as the route's own BlobError. Every phase talks to the route
 * through this one function, so they all retry, time out and read refusals the same way.
 *
 * @module
 */
import { Effect } from "effect"
import { BlobError } from "../../shared/BlobError.ts"
import type { AnswerCheck } from "./answers.ts"
import { PLATFORM_CAP_HINT, Transient } from "./failures.ts"
import type { UploadSession } from "./session.ts"

/**
 * One call of the route, retried while it is transient (no answer, a stall, 5xx/408/429 without the
 * route's JSON). The answer is checked against its kind's shape (`check`) before any phase reads it: a
 * wrongly shaped answer is request_failed naming the field, not retried (it would be wrong again). A
 * refusal is never retried either: it would be refused again.
 */
export const callRoute = <A>(
  session: UploadSession,
  body: Record<string, unknown>,
  what: string,
  check: AnswerCheck<A>
): Effect.Effect<A, BlobError> => {
  const { options, stallTimeout } = session
  return session.withRetries(
    what,
    Effect.tryPromise({
      // headers and body in one promise: a route that sends headers and then nothing is a stall too
      try: async (signal) => {
        const response = await session.fetch(options.route, {
          method: "POST",
          headers: { "content-type": "application/json", ...options.headers },
          body: JSON.stringify(options.routeName === undefined ? body : { ...body, route: options.routeName }),
          signal
        })
        return { ok: response.ok, status: response.status, text: await response.text() }
      },
      catch: () => new Transient(0)
    }).pipe(
      // an unanswered call is given up (the request aborted) and retried like no answer at all
      Effect.timeoutOrElse({ duration: stallTimeout, orElse: () => Effect.fail(new Transient(0)) }),
      Effect.flatMap(({ ok, status, text }): Effect.Effect<A, BlobError | Transient> => {
        if (!ok) return Effect.fail(routeRefusal(status, text) ?? new Transient(status))
        let json: unknown
        try {
          json = JSON.parse(text)
        } catch {
          return Effect.fail(new BlobError("request_failed", { status: 502, message: `The upload route answered ${what} with something other than JSON` }))
        }
        const problem = check.problem(json)
        return problem === undefined ? Effect.succeed(json as A) : Effect.fail(
          new BlobError("request_failed", {
            status: 502,
            message: `The upload route answered ${what} with something that is not a valid ${check.kind} answer: ${problem}`
          })
        )
      })
    )
  )
}

/** The refusal in a route's error answer: its BlobError JSON, or a platform's 413; undefined: retry it. */
const routeRefusal = (status: number, text: string): BlobError | undefined => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  if (typeof json === "object" && json !== null && typeof (json as { code?: unknown }).code === "string") {
    try {
      return BlobError.fromJSON(json)
    } catch {
      // not one of ours: judged by status below
    }
  }
  if (status === 413) return new BlobError("too_large", { message: "The upload request was refused as too large (413)", hint: PLATFORM_CAP_HINT })
  if (status === 408 || status === 429 || status >= 500) return undefined
  // a refusal from what stands in front of the route (the server's own 400/405, a proxy's 403) says
  // why in its own words: kept, so that "answered 400" does not hide "x is not valid UTF-8"
  const reason = refusalText(json, text)
  return new BlobError("request_failed", { status, message: `The upload route answered ${status}${reason === undefined ? "" : `: ${reason}`}` })
}

/** The reason in a refusal that is not a BlobError: its JSON `message` (or `error`), or a short plain text. */
const refusalText = (json: unknown, text: string): string | undefined => {
  const field = typeof json === "object" && json !== null
    ? [(json as { message?: unknown }).message, (json as { error?: unknown }).error].find((value) => typeof value === "string")
    : undefined
  // an HTML error page says nothing a message should carry
  const plain = json === undefined && !/^\s*</.test(text) ? text : undefined
  const reason = (field ?? plain)?.replace(/\s+/g, " ").trim()
  if (reason === undefined || reason === "") return undefined
  return reason.length > MAX_REASON ? `${reason.slice(0, MAX_REASON)}…` : reason
}

const MAX_REASON = 200
