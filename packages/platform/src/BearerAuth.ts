/**
 * The suite's one operator-token check: `Authorization: Bearer <token>` against a configured secret
 * (`ADMIN_TOKEN` for listings, `QUEUE_TOKEN`, `DOCS_ADMIN_TOKEN`), used by every HTTP API and RPC
 * server that has one. The rules, written only here:
 *
 * - no token configured (unset or empty) → 503 `service_unavailable`: the surface is disabled, never
 *   open;
 * - no token presented → 401 naming the header and the variable; a wrong one → 401;
 * - the comparison is constant-time over SHA-256 digests, so neither content nor length leaks.
 *
 * The same check reaches each kind of server through one adapter each: {@link BearerAuth.httpApi} for
 * an `HttpApiMiddleware` with bearer security, {@link BearerAuth.rpc} for an `RpcMiddleware` (typed
 * refusals reach the RPC client), and {@link BearerAuth.route} for a plain route.
 */
import { ServiceUnavailable, Unauthorized } from "@svc/schema"
import { Config, Effect, Option, Redacted } from "effect"
import { HttpServerRequest } from "effect/http"
import { createHash, timingSafeEqual } from "node:crypto"
import { tokenSetting } from "./Settings.ts"

/** The token of an `Authorization: Bearer <token>` header value; undefined for another scheme or none. */
export const tokenOf = (header: string | undefined): string | undefined => {
  const match = header === undefined ? null : /^Bearer\s+(.+)$/i.exec(header.trim())
  const token = match?.[1]?.trim()
  return token === "" ? undefined : token
}

const digest = (value: string) => createHash("sha256").update(value, "utf8").digest()

export interface BearerAuth {
  /** The variable that configures the token, named in every refusal (never its value). */
  readonly variable: string
  /** Checks a presented token (undefined: none was presented). */
  readonly check: (presented: string | undefined) => Effect.Effect<void, Unauthorized | ServiceUnavailable>
  /** The `bearer` handler of an `HttpApiMiddleware` with `HttpApiSecurity.bearer`. */
  readonly httpApi: <A, E, R>(
    httpEffect: Effect.Effect<A, E, R>,
    options: { readonly credential: Redacted.Redacted<string> }
  ) => Effect.Effect<A, E | Unauthorized | ServiceUnavailable, R>
  /** An `RpcMiddleware` implementation: the token of the RPC request's `Authorization` header. */
  readonly rpc: <A, E, R>(
    effect: Effect.Effect<A, E, R>,
    options: { readonly headers: Readonly<Record<string, string | undefined>> }
  ) => Effect.Effect<A, E | Unauthorized | ServiceUnavailable, R>
  /** A route's handler behind the check. */
  readonly route: <A, E, R>(
    httpEffect: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | Unauthorized | ServiceUnavailable, R | HttpServerRequest.HttpServerRequest>
}

/**
 * The check for one configured token. `surface` names what the token opens, for the 503 message
 * ("the queue API", "operating the index over RPC").
 */
export const make = (options: {
  readonly variable: string
  readonly surface: string
  readonly token: Option.Option<Redacted.Redacted<string>>
}): BearerAuth => {
  const { variable, surface } = options
  const expected = Option.filter(options.token, (token) => Redacted.value(token) !== "").pipe(
    Option.map((token) => digest(Redacted.value(token)))
  )
  const check = (presented: string | undefined): Effect.Effect<void, Unauthorized | ServiceUnavailable> => {
    if (Option.isNone(expected)) {
      return Effect.fail(new ServiceUnavailable({ message: `${surface} is disabled: the server has no ${variable} set` }))
    }
    if (presented === undefined || presented === "") {
      return Effect.fail(new Unauthorized({ message: `Missing bearer token (Authorization: Bearer <${variable}>)` }))
    }
    return timingSafeEqual(digest(presented), expected.value)
      ? Effect.void
      : Effect.fail(new Unauthorized({ message: "Invalid bearer token" }))
  }
  return {
    variable,
    check,
    httpApi: (httpEffect, { credential }) => Effect.andThen(check(Redacted.value(credential)), httpEffect),
    rpc: (effect, { headers }) => Effect.andThen(check(tokenOf(headers["authorization"])), effect),
    route: (httpEffect) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        yield* check(tokenOf(request.headers["authorization"]))
        return yield* httpEffect
      })
  }
}

/** {@link make} with the token read from `variable` (optional: unset disables the surface). */
export const fromConfig = (variable: string, surface: string) =>
  Effect.gen(function*() {
    const token = yield* tokenSetting(variable)
    return make({ variable, surface, token })
  })
