/**
 * A service's HTTP surface as tests see it: over a real socket or in-process, behind one `Client`,
 * and `get` reading an answer's status, headers, text and (when it is JSON) body.
 */
import { Context, Effect } from "effect"

export class Client extends Context.Service<Client, {
  readonly baseUrl: string
  readonly fetch: (path: string, init?: RequestInit) => Effect.Effect<Response>
}>()("@svc/platform/testing/Client") {}

/** An answer's status, headers, text and `body`: the parsed JSON, or the text when it is not JSON. */
export const readAnswer = Effect.fn(function*(response: Response) {
  const text = yield* Effect.promise(() => response.text())
  let body: any = undefined
  try {
    body = text === "" ? undefined : JSON.parse(text)
  } catch {
    body = text
  }
  return { status: response.status, headers: response.headers, text, body }
})

/** Requests `path` from the test's `Client` and reads the answer ({@link readAnswer}). */
export const get = Effect.fn(function*(path: string, init?: RequestInit) {
  const client = yield* Client
  return yield* readAnswer(yield* client.fetch(path, init))
})
