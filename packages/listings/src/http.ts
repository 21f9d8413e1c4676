/**
 * HTTP: the `ListingsApi` handlers, and GET /images/:key (a raw route: it streams bytes).
 */
import { OutboundGuard, openApiRoute, toIssues } from "@svc/platform"
import {
  ImageNotFound,
  ImportServicesQuery,
  INGEST_QUERY_PARAMETERS,
  type IngestResult,
  INT4_MAX,
  InvalidRequest,
  isNulFree,
  ListingsApi,
  listingsOpenApi,
  MAX_PAGE_SIZE,
  OffersQuery,
  type RequestIssue
} from "@svc/schema"
import { Cache, Effect, Layer, Option, Result, Schema, Stream } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { SqlClient, SqlSchema } from "effect/sql"
import * as Zlib from "node:zlib"
import { AdminAuthLive } from "./Auth.ts"
import { ImageCacher, ImageRecord, ImageStore } from "./Images.ts"
import { ImportServices } from "./ImportServices.ts"
import { Ingest } from "./Ingest.ts"
import { ListingsConfig } from "./ListingsConfig.ts"
import { ignoredParametersWarning, type JsonAnswer, jsonAnswer } from "./OfferAnswers.ts"
import { Offers, splitList } from "./Offers.ts"
import { SourceHealthLookup } from "./SourceHealth.ts"

/** The names of the request's query parameters that are not keys of `known` (a route's query fields), each once. */
const unknownParameters = (request: HttpServerRequest.HttpServerRequest, known: object): Array<string> =>
  [...new Set(new URLSearchParams(request.url.split("?")[1] ?? "").keys())].filter((name) => !Object.hasOwn(known, name))

/** A page's `limit` and `offset` out of range; only checked without complete=true, which ignores them. */
const pageIssues = (query: { readonly limit?: number | undefined; readonly offset?: number | undefined }) => {
  const issues: Array<RequestIssue> = []
  if (query.limit !== undefined && (query.limit < 0 || query.limit > MAX_PAGE_SIZE)) {
    issues.push({ in: "query", parameter: "limit", problem: `is out of range: must be an integer from 0 to ${MAX_PAGE_SIZE}` })
  }
  if (query.offset !== undefined && query.offset < 0) {
    issues.push({ in: "query", parameter: "offset", problem: `is out of range: must be an integer from 0 to ${INT4_MAX}` })
  }
  return issues
}

/** Answers smaller than this are sent as they are: gzip would save next to nothing. */
const GZIP_MIN_BYTES = 1024

/**
 * Whether `Accept-Encoding` takes gzip: `gzip` (or `x-gzip`), else `*`, with a q-value above 0.
 * Absent or empty: no (RFC 9110 §12.5.3 allows any coding then, but a client that says nothing may
 * not decode one).
 */
export const acceptsGzip = (header: string | undefined): boolean => {
  if (header === undefined) return false
  let gzip: boolean | undefined
  let any: boolean | undefined
  for (const part of header.split(",")) {
    const [name = "", ...parameters] = part.split(";").map((piece) => piece.trim().toLowerCase())
    const q = parameters.find((parameter) => parameter.startsWith("q="))
    const weight = q === undefined ? 1 : Number(q.slice(2))
    const accepted = Number.isFinite(weight) && weight > 0
    if (name === "gzip" || name === "x-gzip") gzip = gzip === true || accepted
    else if (name === "*") any = accepted
  }
  return gzip ?? any ?? false
}

/**
 * The gzip of an answer, made once per answer object (off the event loop, in zlib's thread pool):
 * a remembered answer (Offers.ts) is the same object every time it is served, so it is compressed
 * once per offers version; it goes when the answer does.
 */
const compressed = new WeakMap<JsonAnswer, Uint8Array>()
const gzipped = (answer: JsonAnswer): Effect.Effect<Uint8Array> => {
  const known = compressed.get(answer)
  if (known !== undefined) return Effect.succeed(known)
  return Effect.callback<Uint8Array>((resume) => {
    Zlib.gzip(answer.json, (error, bytes) => {
      // gzip of bytes in memory cannot fail short of running out of memory
      if (error !== null) return resume(Effect.die(error))
      compressed.set(answer, bytes)
      resume(Effect.succeed(bytes))
    })
  })
}

/**
 * How the offers routes (GET /offers, GET /offers/:id) send their JSON, one rule for both: `ETag` (a
 * hash of the JSON) with `Cache-Control: no-cache`, so a client may keep the answer and revalidate it
 * with `If-None-Match` (304 without a body while it is unchanged); gzip when the client takes it
 * (every mobile HTTP stack does) and the answer is 1 KiB or more: JSON of offers shrinks ~5x. The gzip
 * is its own representation, so its ETag is the weak form of the same tag (either form revalidates),
 * and caches keep the two apart by `Vary: Accept-Encoding`, which every answer carries.
 */
export const sendJsonAnswer = (answer: JsonAnswer) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const gzip = answer.json.byteLength >= GZIP_MIN_BYTES && acceptsGzip(request.headers["accept-encoding"])
    const etag = gzip ? `W/${answer.etag}` : answer.etag
    const headers = { etag, "cache-control": "no-cache", vary: "Accept-Encoding" }
    if (etagMatches(request.headers["if-none-match"], answer.etag)) {
      return HttpServerResponse.empty({ status: 304, headers })
    }
    if (!gzip) return HttpServerResponse.uint8Array(answer.json, { contentType: "application/json", headers })
    return HttpServerResponse.uint8Array(yield* gzipped(answer), {
      contentType: "application/json",
      headers: { ...headers, "content-encoding": "gzip" }
    })
  })

const HealthHandlers = HttpApiBuilder.group(
  ListingsApi,
  "health",
  (handlers) => handlers.handle("health", () => Effect.succeed({ status: "ok" as const }))
)

const OffersHandlers = HttpApiBuilder.group(
  ListingsApi,
  "offers",
  Effect.fn(function*(handlers) {
    const offers = yield* Offers
    return handlers
      // The answers are the JSON of an OffersResponse or a CarOffer built as its encoded form
      // (strings, numbers, nulls), written directly: re-encoding up to 5,000 offers field by field
      // through the schema cost more than the query (tests decode answers with the schema). Both
      // are sent by one rule (sendJsonAnswer): ETag, 304 on If-None-Match, gzip when taken.
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const issues = query.complete === true ? [] : pageIssues(query)
          if (issues.length > 0) return yield* new InvalidRequest({ issues })
          const request = yield* HttpServerRequest.HttpServerRequest
          // a parameter this route does not take is named in `warnings` (not refused: a client may
          // add its own, a cache buster): a misspelt `fuelType=` or `Make=` was silently unapplied
          const ignored = unknownParameters(request, OffersQuery)
          const answer = yield* offers.search(ignored.length > 0 ? { ...query, ignoredParameters: ignored } : query)
          return yield* sendJsonAnswer(answer)
        }))
      // an app that keeps an offer (a favourite, a detail screen) revalidates it like a page: 304
      // until the offer changes (a new price, removal)
      .handle("byId", ({ params }) => Effect.flatMap(offers.byId(params.id), (offer) => sendJsonAnswer(jsonAnswer(offer))))
  })
)

const SourcesHandlers = HttpApiBuilder.group(
  ListingsApi,
  "sources",
  Effect.fn(function*(handlers) {
    const health = yield* SourceHealthLookup
    return handlers.handle("list", () => health.list)
  })
)

const ImportServicesHandlers = HttpApiBuilder.group(
  ListingsApi,
  "importServices",
  Effect.fn(function*(handlers) {
    const directory = yield* ImportServices
    return handlers.handle("list", ({ query, request }) =>
      Effect.map(directory.list(query.region), (services) => {
        // as GET /offers: a parameter the route does not take (a misspelt `regoin=`, `Region=`) is
        // named in `warnings`, not refused; it listed every company without a word
        const warning = ignoredParametersWarning(unknownParameters(request, ImportServicesQuery))
        return warning === undefined ? { services } : { services, warnings: [warning] }
      }))
  })
)

const AdminHandlers = HttpApiBuilder.group(
  ListingsApi,
  "admin",
  Effect.fn(function*(handlers) {
    const ingest = yield* Ingest
    return handlers.handle("ingest", ({ query, request }) =>
      Effect.gen(function*() {
        // a parameter this route does not take (a misspelt `?source=`, `?wiat=`) is refused: ignored,
        // the call ran every source instead of the one meant
        const unknown = [...new URLSearchParams(request.url.split("?")[1] ?? "").keys()]
          .filter((name) => !(INGEST_QUERY_PARAMETERS as ReadonlyArray<string>).includes(name))
        if (unknown.length > 0) {
          return yield* new InvalidRequest({
            issues: [...new Set(unknown.map((name) => name.slice(0, 100)))].map((parameter): RequestIssue => ({
              in: "query",
              parameter,
              problem: `is not a parameter of this route (it takes ${INGEST_QUERY_PARAMETERS.join(", ")})`
            }))
          })
        }
        const sources = splitList(query.sources)
        const handles = yield* ingest.trigger({ sources: sources.length > 0 ? sources : undefined, trigger: "manual" })
        if (query.wait !== true) return { runs: handles.map((handle) => handle.run) }
        const startedAt = Date.now()
        const runs = yield* Effect.forEach(handles, (handle) =>
          Option.match(handle.outcome, {
            onNone: (): Effect.Effect<IngestResult> =>
              Effect.succeed(
                handle.run.status === "skipped"
                  ? { sourceId: handle.run.sourceId, status: "skipped", ...(handle.run.reason ? { reason: handle.run.reason } : {}) }
                  : { sourceId: handle.run.sourceId, status: "failed" }
              ),
            onSome: (outcome) =>
              Effect.map(outcome, (outcome): IngestResult => ({
                sourceId: handle.run.sourceId,
                status: outcome.ok ? "finished" : "failed",
                outcome
              }))
          }), { concurrency: "unbounded" })
        return { runs, waitedMs: Date.now() - startedAt }
      }))
  })
)

/**
 * `GET /openapi.json`: `ListingsApi`'s document with the routes served outside it (the images, /ready,
 * /rpc, the document itself) merged in (`ListingsOpenApi.ts` in @svc/schema). Made once.
 */
export const OpenApiRoute = openApiRoute(listingsOpenApi)

/** The API's handlers; they need Offers, SourceHealthLookup, ImportServices, Ingest. */
export const ApiHandlers = Layer.mergeAll(
  HealthHandlers,
  OffersHandlers,
  SourcesHandlers,
  ImportServicesHandlers,
  AdminHandlers
).pipe(Layer.provide(AdminAuthLive))

// -----------------------------------------------------------------------------
// GET /images/:key
// -----------------------------------------------------------------------------

const KEY = /^[0-9a-f]{64}$/

/**
 * The path parameters of a route served outside `ListingsApi`, decoded by `schema` and refused as the
 * API's own routes refuse theirs (a 400 `invalid_request` with one issue per parameter, `in: "path"`,
 * by the platform's `toIssues`): `/images/%00` was a 404 echoing the NUL, `/offers/%00` a 400.
 */
const pathParams = <S extends Schema.Top & { readonly DecodingServices: never }>(schema: S) =>
  Effect.flatMap(HttpRouter.params, (params) =>
    Schema.decodeUnknownEffect(schema)(params).pipe(
      Effect.mapError((error) => new InvalidRequest({ issues: toIssues(error, "path") }))
    ))

/**
 * GET /images/:key's parameter: whatever is not a key is 404 (below), but a NUL is refused by the rule
 * every path parameter of the API follows (`isNulFree`, in `IdParam` of /offers/:id).
 */
const ImageParams = Schema.Struct({ key: Schema.String.check(isNulFree) })
const CACHED_MAX_AGE = "public, max-age=86400"

const etagMatches = (header: string | undefined, etag: string): boolean =>
  header !== undefined &&
  header.split(",").map((tag) => tag.trim().replace(/^W\//, "")).some((tag) => tag === etag || tag === "*")

/** How long the guard's verdict on an original's host is kept (a name's answer may change). */
const HOST_VERDICT_TTL = "1 minute"

/**
 * Whether the app may be sent to a host: not where the guard keeps the server itself away (an internal
 * address, a local name, a name that resolves to an internal address). A name that does not resolve
 * here is passed on: the server cannot judge it, and the app's own resolver may know it (the demo
 * offers' images are on `images.marketplace.example`). Kept a minute per host, so that a page of
 * originals (every image, with storage off) costs one lookup per host, not one per image.
 */
const hostAllowed = Cache.make({
  capacity: 10_000,
  timeToLive: HOST_VERDICT_TTL,
  requireServicesAt: "lookup",
  lookup: (hostname: string) =>
    Effect.gen(function*() {
      const { allowPrivate } = yield* ListingsConfig
      if (allowPrivate) return true
      if (OutboundGuard.requestRefusal(new URL(`http://${hostname}`), { allowPrivate }) !== undefined) return false
      const resolve = yield* OutboundGuard.Resolver
      const addresses = yield* Effect.tryPromise(() => resolve(hostname)).pipe(
        Effect.timeout("3 seconds"),
        Effect.orElseSucceed((): ReadonlyArray<OutboundGuard.ResolvedAddress> => [])
      )
      return !addresses.some((entry) => OutboundGuard.isPrivateAddress(entry.address))
    })
})

/**
 * Cached: the bytes, with ETag and Cache-Control; `If-None-Match` with that ETag: 304. Known but not
 * cached (pending, failed, rejected, or storage off): 302 to the original URL, unless its host is one
 * the guard keeps the server from ({@link hostAllowed}): 404. Unknown: 404.
 * Nothing is ever fetched here; a cached image missing from storage is made pending again and the
 * background cacher kicked.
 */
export const ImagesRoute = Layer.unwrap(Effect.map(hostAllowed, (hosts) => HttpRouter.add(
  "GET",
  "/images/:key",
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const store = yield* ImageStore
    const cacher = yield* ImageCacher
    const request = yield* HttpServerRequest.HttpServerRequest
    const { key } = yield* pathParams(ImageParams)
    if (!KEY.test(key)) return yield* new ImageNotFound({ key })
    const rows = yield* SqlSchema.findAll({
      Request: Schema.String,
      Result: ImageRecord,
      execute: (key) =>
        sql`SELECT key, original_url, status, content_type, size_bytes, etag FROM listings.images WHERE key = ${key}`
    })(key).pipe(Effect.orDie)
    const image = rows[0]
    if (image === undefined) return yield* new ImageNotFound({ key })
    // The original is passed on only where the guard would let the server itself go: a 302 to a
    // loopback or private address (a feed's image at http://127.0.0.1/…, or at a name resolving
    // there) sent the app into its own device's or network's services. Refused, the image is not found.
    const redirect = Effect.gen(function*() {
      const original = URL.parse(image.original_url)
      const allowed = original !== null && (original.protocol === "http:" || original.protocol === "https:") &&
        (yield* Cache.get(hosts, original.hostname))
      if (!allowed) return yield* new ImageNotFound({ key })
      return HttpServerResponse.redirect(image.original_url, { status: 302, headers: { "cache-control": "no-cache" } })
    })
    if (image.status !== "cached" || image.etag === null || !store.enabled) return yield* redirect
    const headers = { etag: image.etag, "cache-control": CACHED_MAX_AGE }
    if (etagMatches(request.headers["if-none-match"], image.etag)) {
      return HttpServerResponse.empty({ status: 304, headers })
    }
    const read = yield* Effect.result(store.get(key))
    if (Result.isFailure(read)) {
      yield* Effect.logWarning(`Image ${key} could not be read: ${read.failure.message}`)
      return yield* redirect
    }
    if (Option.isNone(read.success)) {
      // Recorded as cached, gone from storage: local object storage starts empty after a restart (it
      // is in memory), a bucket rule or an operator may remove objects. Pending again, so the next
      // pass caches it anew (kicked now, in the background); the original meanwhile.
      yield* sql`UPDATE listings.images SET status = 'pending', attempts = 0, last_attempt_at = NULL, etag = NULL
        WHERE key = ${key} AND status = 'cached'`.pipe(
        Effect.andThen(cacher.kick),
        Effect.catch((error) => Effect.logWarning(`Image ${key} is missing from storage and could not be queued again: ${error.message}`))
      )
      return yield* redirect
    }
    const stored = read.success.value
    return HttpServerResponse.stream(
      stored.body.pipe(Stream.orDie),
      {
        status: 200,
        headers,
        contentType: image.content_type ?? "application/octet-stream",
        ...(stored.contentLength === undefined ? {} : { contentLength: stored.contentLength })
      }
    )
  })
)))
