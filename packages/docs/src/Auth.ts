/**
 * `DocsAuth` (declared on `DocsApi` in `@svc/schema`): who is calling, and whether they may call now.
 *
 * - **Key**: `Authorization: Bearer <key>`, `X-Svc-API-Key` or `X-API-Key` (spec/2). No header at
 *   all is an anonymous caller (allowed, lower limit). A header that is present but holds no key, a
 *   malformed key, an unknown or a revoked one, or headers holding two different keys, is 401
 *   `unauthorized` — before any data is
 *   read, and the message never echoes the key.
 * - **Rate limits**: a token bucket per key, and per client address for anonymous callers, refilled
 *   over a minute: `DOCS_RATE_LIMIT_ANONYMOUS` (default 60) and `DOCS_RATE_LIMIT_KEYED` (default 600)
 *   requests per minute, bursts up to that many. Over it: 429 `rate_limited` with `retryAfter` and a
 *   `Retry-After` header (seconds). effect's own `RateLimiter` over an in-memory store bounded to
 *   `DOCS_RATE_LIMIT_CLIENTS` keys (RateLimitStore.ts), so the limits are **per instance**: two
 *   docs-api processes behind one address each allow the full rate.
 *   The key is checked first: a refused key is 401 even while its address is rate limited (it still
 *   counts against that address's anonymous bucket).
 * - **Client address**: the address the MCP server forwarded, when signed with the forwarding secret
 *   (`ClientAddress.ts`; so every MCP user keeps an anonymous bucket of their own); else the socket's
 *   peer; with `DOCS_TRUST_PROXY=true`, the last `X-Forwarded-For` entry (the one the proxy in front
 *   of us appended: earlier ones are whatever the client sent).
 *
 * The handlers get the caller as `DocsCaller`, which carries the key's team settings.
 */
import { ownCopy } from "@svc/platform/OwnCopy"
import { type Caller, DocsAuth, DocsCaller, RateLimited, Unauthorized } from "@svc/schema"
import { Config, Duration, Effect, Layer, Option, type Redacted, Schema } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { RateLimiter } from "effect/persistence"
import { ApiKeys } from "./ApiKeys.ts"
import { ForwardSecret, verifiedForwardedAddress } from "./ClientAddress.ts"
import { layerBoundedStore } from "./RateLimitStore.ts"

/** `DOCS_RATE_LIMIT_CLIENTS`'s default: 16-37 MB of buckets at most, measured (README "API keys, rate limits and team settings"). */
export const DEFAULT_RATE_LIMIT_CLIENTS = 100_000

/**
 * The longest address a bucket is keyed by: an IP address is at most 45 characters (IPv6 with an IPv4
 * tail), 100 leaves room for a zone or a port a proxy appends; a longer `X-Forwarded-For` entry is not
 * an address, and its bucket would otherwise hold a header's worth of bytes.
 */
const MAX_ADDRESS_KEY = 100
/**
 * The bucket key of an address, copied out of the header it was cut from: a cut of a string (`slice`,
 * `split`, `trim`) can keep the whole string alive, so a bucket keyed by `1.2.3.4` cut from a 16 KiB
 * `X-Forwarded-For` held those 16 KiB for as long as the bucket lived (measured: 8 KiB a request).
 */
const addressBucket = (address: string) => ownCopy(`address:${address.slice(0, MAX_ADDRESS_KEY)}`)

const RequestsPerMinute = (name: string, fallback: number) =>
  Config.schema(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)), name).pipe(Config.withDefault(fallback))

/** The configuration of {@link DocsAuthLive}. */
export const DocsAuthConfig = Config.all({
  /** Requests per minute of an anonymous client address. */
  anonymous: RequestsPerMinute("DOCS_RATE_LIMIT_ANONYMOUS", 60),
  /** Requests per minute of one API key. */
  keyed: RequestsPerMinute("DOCS_RATE_LIMIT_KEYED", 600),
  /** How many client addresses and keys the limiter remembers (RateLimitStore.ts): past it the least recently seen is forgotten. */
  clients: Config.schema(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)), "DOCS_RATE_LIMIT_CLIENTS").pipe(
    Config.withDefault(DEFAULT_RATE_LIMIT_CLIENTS)
  ),
  /** Take the client address from `X-Forwarded-For` (only behind a proxy that sets it). */
  trustProxy: Config.Boolean("DOCS_TRUST_PROXY").pipe(Config.withDefault(false)),
  /** Verifies the client address the MCP server forwards (`DOCS_FORWARD_SECRET`). */
  forwardSecret: ForwardSecret
})

const WINDOW = Duration.minutes(1)

/**
 * The key the request presents: undefined when it carries none of the three headers, "" when they
 * hold no usable key or more than one. Two headers with different keys (a valid bearer beside a
 * wrong X-API-Key passed on the bearer alone), or one header sent twice (node joins the lines with
 * ", ", and a key holds no comma), leave which key counts to a guess: refused, as a wrong key is.
 */
export const presentedKey = (headers: Readonly<Record<string, string | undefined>>): string | undefined => {
  const authorization = headers["authorization"]
  // Another scheme (Basic, a bare key) is a wrongly supplied key, not an anonymous call.
  const bearer = authorization === undefined ? undefined : /^Bearer[ \t]+(\S*)[ \t]*$/i.exec(authorization.trim())?.[1] ?? ""
  const given = [bearer, headers["x-svc-api-key"]?.trim(), headers["x-api-key"]?.trim()].filter((key) => key !== undefined)
  const [key] = given
  if (key === undefined) return undefined
  return given.every((other) => other === key) && !key.includes(",") ? key : ""
}

/**
 * The peer address, or the proxy-appended `X-Forwarded-For` entry when the proxy is trusted; a
 * client address forwarded by the MCP server wins when `forwardSecret` verifies its signature.
 */
export const clientAddress = (
  request: HttpServerRequest.HttpServerRequest,
  trustProxy: boolean,
  forwardSecret?: Redacted.Redacted<string> | undefined
): string => {
  if (forwardSecret !== undefined) {
    const forwarded = verifiedForwardedAddress(forwardSecret, request.headers)
    if (forwarded !== undefined) return forwarded
  }
  if (trustProxy) {
    const forwarded = request.headers["x-forwarded-for"]?.split(",").map((entry) => entry.trim()).filter((e) => e !== "")
    const last = forwarded?.[forwarded.length - 1]
    if (last !== undefined) return last
  }
  // In-process (tests, toWebHandler) there is no socket: those callers share one bucket.
  return Option.getOrElse(request.remoteAddress, () => "unknown")
}

const refused = (message: string) => Effect.fail(new Unauthorized({ message }))

/** 429, written here rather than failed with, so it can carry the `Retry-After` header. */
const tooMany = (retryAfter: Duration.Duration) => {
  const seconds = Math.max(1, Math.ceil(Duration.toSeconds(retryAfter)))
  return Effect.map(
    Schema.encodeEffect(RateLimited)(new RateLimited({ retryAfter: seconds })).pipe(Effect.orDie),
    (body) => HttpServerResponse.jsonUnsafe(body, { status: 429, headers: { "retry-after": String(seconds) } })
  )
}

/** `DocsAuth` with limits from {@link DocsAuthConfig}; needs `ApiKeys`. One limiter per layer build. */
export const DocsAuthLive = Layer.effect(
  DocsAuth,
  Effect.gen(function*() {
    const config = yield* DocsAuthConfig
    const keys = yield* ApiKeys
    const limiter = yield* RateLimiter.RateLimiter

    const identify = Effect.fn("DocsAuth.identify")(function*(request: HttpServerRequest.HttpServerRequest) {
      const presented = presentedKey(request.headers)
      if (presented === undefined) {
        return { _tag: "Anonymous", address: clientAddress(request, config.trustProxy, config.forwardSecret) } satisfies Caller as Caller
      }
      if (presented === "") {
        return yield* refused("The headers hold no API key, or more than one: send one, as Authorization: Bearer svcsk_..., X-Svc-API-Key or X-API-Key")
      }
      const record = yield* keys.authenticate(presented)
      if (Option.isNone(record)) {
        return yield* refused("The API key is not valid (unknown, malformed or revoked); create one with svc docs keys create")
      }
      const { id, name, prefix, settings, team } = record.value
      return { _tag: "ApiKey", id, prefix, name, team, settings } satisfies Caller as Caller
    })

    /** Takes a token from a bucket; how long until the next one when there is none left. */
    const limit = (bucket: { readonly key: string; readonly limit: number }) =>
      Effect.flatMap(
        Effect.result(limiter.consume({ algorithm: "token-bucket", window: WINDOW, ...bucket })),
        (consumed): Effect.Effect<Duration.Duration | undefined> => {
          if (consumed._tag === "Success") return Effect.succeed(undefined)
          const reason = consumed.failure.reason
          return reason._tag === "RateLimitExceeded"
            ? Effect.succeed(reason.retryAfter)
            : Effect.die(consumed.failure) // the in-memory store does not fail otherwise
        }
      )

    return DocsAuth.of((httpEffect) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const identified = yield* Effect.result(identify(request))
        if (identified._tag === "Failure") {
          // The key is checked before any limit: a wrong key is 401, also while its address is limited
          // (a 429 would tell the caller to wait and retry the same wrong key). It still takes a token
          // from its address's bucket, so guesses use up that address's anonymous budget.
          const address = clientAddress(request, config.trustProxy, config.forwardSecret)
          yield* limit({ key: addressBucket(address), limit: config.anonymous })
          return yield* Effect.fail(identified.failure)
        }
        const caller = identified.success
        const retryAfter = yield* limit(
          caller._tag === "Anonymous"
            ? { key: addressBucket(caller.address), limit: config.anonymous }
            : { key: `key:${caller.id}`, limit: config.keyed }
        )
        if (retryAfter !== undefined) return yield* tooMany(retryAfter)
        return yield* Effect.provideService(httpEffect, DocsCaller, caller)
      })
    )
  })
).pipe(
  Layer.provide(RateLimiter.layer),
  // fresh: each server counts on its own, even when two are built in one process (tests)
  Layer.provide(Layer.fresh(Layer.unwrap(Effect.map(DocsAuthConfig, ({ clients }) => layerBoundedStore(clients)))))
)
