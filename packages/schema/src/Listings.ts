/**
 * The listings backend (spec/1, DESIGN.md §5 "Listings"): its records, its HTTP API and its internal
 * RPC group. Definitions only; the server is `@svc/listings`.
 *
 * `CarOffer` is shared with the mobile client field for field: names, types and nullability follow
 * the spec's table exactly (a test in `@svc/listings` fails when they drift). Optional fields are
 * always present in responses, `null` when unknown.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, HttpApiSecurity, OpenApi } from "effect/http-api"
import { Rpc, RpcGroup } from "effect/rpc"
import { ApiConventions, ApiError, InvalidRequest, ServiceUnavailable, Unauthorized } from "./Errors.ts"
import { HealthGroup } from "./Health.ts"
import { RpcDefects } from "./RpcDefects.ts"
import {
  BoundedArray,
  DecimalParam,
  IdParam,
  INT4_MAX,
  INT4_MIN,
  IntParam,
  ListParam,
  MAX_LIST_ITEMS,
  NameParam,
  SearchTextParam,
  STRICT_REQUEST
} from "./Limits.ts"

// -----------------------------------------------------------------------------
// Records
// -----------------------------------------------------------------------------

export const Currency = Schema.Literals(["PLN", "EUR", "USD"]).annotate({ identifier: "Currency" })
export type Currency = typeof Currency.Type

/** One offer (spec/1 "CarOffer"). */
export const CarOffer = Schema.Struct({
  /** Identifier of the source. */
  sourceId: Schema.String,
  /** Stable, namespaced: `<source_id>:<native_id>` (the stored offers.id). */
  id: Schema.String,
  title: Schema.String,
  make: Schema.String,
  model: Schema.String,
  /** Listed price, in `currency`. */
  price: Schema.Finite,
  currency: Currency,
  fuel: Schema.String,
  transmission: Schema.String,
  region: Schema.String,
  /** Link to the listing at the original marketplace. */
  originalUrl: Schema.String,
  year: Schema.NullOr(Schema.Finite),
  /** Odometer reading in kilometres. */
  mileage: Schema.NullOr(Schema.Finite),
  /** Engine power in horsepower (HP), as the feeds give it. */
  power: Schema.NullOr(Schema.Finite),
  location: Schema.NullOr(Schema.String),
  latitude: Schema.NullOr(Schema.Finite),
  longitude: Schema.NullOr(Schema.Finite),
  /** `{PUBLIC_BASE_URL}/images/<key>`; may be empty. */
  images: Schema.Array(Schema.String),
  thumbnail: Schema.NullOr(Schema.String),
  /** ISO 8601. */
  updatedAt: Schema.NullOr(Schema.String),
  /** ISO 8601. */
  expiresAt: Schema.NullOr(Schema.String)
}).annotate({ identifier: "CarOffer", description: "A car offer, shared field for field with the mobile client" })
export type CarOffer = typeof CarOffer.Type

/** Element of the GET /sources result. */
export const SourceHealth = Schema.Struct({
  id: Schema.String,
  enabled: Schema.Boolean,
  offerCount: Schema.NullOr(Schema.Finite),
  lastCompletedAtEpochMs: Schema.NullOr(Schema.Finite),
  lastCompletedOk: Schema.NullOr(Schema.Boolean),
  lastOffersUpserted: Schema.NullOr(Schema.Finite)
}).annotate({ identifier: "SourceHealth" })
export type SourceHealth = typeof SourceHealth.Type

export const SourcesResponse = Schema.Struct({ sources: Schema.Array(SourceHealth) }).annotate({
  identifier: "SourcesResponse"
})
export type SourcesResponse = typeof SourcesResponse.Type

export const OfferSort = Schema.Literals(["NEWEST", "PRICE_ASC", "PRICE_DESC", "MILEAGE_ASC", "YEAR_DESC"])
export type OfferSort = typeof OfferSort.Type

export const MAX_PAGE_SIZE = 200
export const DEFAULT_PAGE_SIZE = 50
/** Rows a `complete=true` answer may hold; more is a 422, never a cut. */
export const COMPLETE_LIMIT = 5000
/** The highest price an offer may carry (Normalize); the price filters are bounded by it. */
export const MAX_PRICE = 1e10

/** The years an offer may carry (Normalize: 1886-2100), with room either side. */
const Year = IntParam({ minimum: 0, maximum: 9999 })

/**
 * GET /offers query parameters: all optional, mirroring the client's search filter. Every one is
 * bounded (see Limits.ts): no NUL, bounded lengths, numbers within what the columns hold, written in
 * decimal digits (`IntParam`, `DecimalParam`: `minYear=2e3` or `limit=+5` is a 400, not 2000 or 5).
 */
export const OffersQuery = {
  /** Free text over title, make and model: accent- and case-insensitive, word prefixes match. */
  query: Schema.optional(SearchTextParam),
  /** Equality where case, accents and punctuation do not count ("skoda" finds "Škoda"). */
  make: Schema.optional(NameParam),
  /** As `make`. */
  model: Schema.optional(NameParam),
  /** Accepted, not applied: the client filters by price after currency conversion. */
  minPrice: Schema.optional(DecimalParam({ minimum: 0, maximum: MAX_PRICE })),
  /** Accepted, not applied. */
  maxPrice: Schema.optional(DecimalParam({ minimum: 0, maximum: MAX_PRICE })),
  minYear: Schema.optional(Year),
  maxYear: Schema.optional(Year),
  maxMileageKm: Schema.optional(DecimalParam({ minimum: 0, maximum: INT4_MAX })),
  /** Comma-separated; each compares as `make` does. */
  fuelTypes: Schema.optional(ListParam()),
  transmissions: Schema.optional(ListParam()),
  regions: Schema.optional(ListParam()),
  /** Comma-separated source ids; unknown ids are named in `warnings`. */
  sources: Schema.optional(ListParam()),
  /** Default NEWEST (updatedAt desc, then id). The price sorts are not applied (NEWEST order). */
  sort: Schema.optional(OfferSort),
  /** Default true: one offer per de-duplication key. */
  dedup: Schema.optional(Schema.Boolean),
  /** true: the whole matching set in one statement, at most 5,000 rows (else 422). */
  complete: Schema.optional(Schema.Boolean),
  /**
   * Default 50, 0-200 (checked by the handler); ignored when complete=true, where any integer passes
   * (a client may always send its page size). Anything but decimal digits (a `-` allowed, for the
   * handler to name the range) is a 400 either way, and one beyond int4 (`99999999999`) tells the range
   * a page takes, not int4's.
   */
  limit: Schema.optional(IntParam({ minimum: INT4_MIN, maximum: INT4_MAX, told: `0 to ${MAX_PAGE_SIZE}` })),
  /** Default 0, from 0 (checked by the handler); ignored when complete=true, as `limit`. */
  offset: Schema.optional(IntParam({ minimum: INT4_MIN, maximum: INT4_MAX, told: `0 to ${INT4_MAX}` }))
}

export const OffersResponse = Schema.Struct({
  offers: Schema.Array(CarOffer),
  /** Every matching offer (after de-duplication), not the page length. */
  count: Schema.Finite,
  /** null normally; otherwise sentences such as "Unknown source id: foo". */
  warnings: Schema.NullOr(Schema.Array(Schema.String))
}).annotate({ identifier: "OffersResponse" })
export type OffersResponse = typeof OffersResponse.Type

/** One company of the import and logistics directory. */
export const ImportService = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  /** The region it serves (same vocabulary as CarOffer.region). */
  region: Schema.String,
  city: Schema.NullOr(Schema.String),
  /** What it does: import, transport, customs, registration, inspection, repair, financing. */
  services: Schema.Array(Schema.String),
  website: Schema.NullOr(Schema.String),
  phone: Schema.NullOr(Schema.String),
  email: Schema.NullOr(Schema.String),
  description: Schema.String
}).annotate({ identifier: "ImportService" })
export type ImportService = typeof ImportService.Type

export const ImportServicesResponse = Schema.Struct({
  services: Schema.Array(ImportService),
  /**
   * Only when there is something to say, as GET /offers' `warnings`: query parameters the route does
   * not take ("Unknown query parameter ignored: regoin"), answered as if they were not there.
   */
  warnings: Schema.optionalKey(Schema.Array(Schema.String).annotate({
    description: "Present only when there is something to say, as in GET /offers: the query parameters this route does not " +
      "take, named (\"Unknown query parameter ignored: regoin\"); the answer is what the other parameters ask"
  }))
}).annotate({
  identifier: "ImportServicesResponse"
})

// -----------------------------------------------------------------------------
// Ingest
// -----------------------------------------------------------------------------

/** What one finished run did. Counts only: raw errors stay in the server log. */
export const IngestOutcome = Schema.Struct({
  ok: Schema.Boolean,
  /** Records read from the feed. */
  offersFetched: Schema.Finite,
  /** Offers inserted or changed. */
  offersUpserted: Schema.Finite,
  /** Records that failed validation (skipped). */
  recordsRejected: Schema.Finite,
  /** Offers no longer in the feed, marked expired (only after a successful full run). */
  offersExpired: Schema.Finite,
  durationMs: Schema.Finite
}).annotate({ identifier: "IngestOutcome" })
export type IngestOutcome = typeof IngestOutcome.Type

export const IngestRun = Schema.Struct({
  sourceId: Schema.String,
  status: Schema.Literals(["started", "skipped"]),
  /** Why a run was skipped. */
  reason: Schema.optionalKey(Schema.Literals(["already_running", "disabled"])),
  /** With `wait=true`: how the run ended. */
  outcome: Schema.optionalKey(IngestOutcome)
}).annotate({ identifier: "IngestRun" })
export type IngestRun = typeof IngestRun.Type

export const IngestRuns = Schema.Struct({ runs: Schema.Array(IngestRun) }).annotate({ identifier: "IngestRuns" })
export type IngestRuns = typeof IngestRuns.Type

/** With `wait=true`, how each run ended: `finished` (outcome ok), `failed`, or `skipped` (never started). */
export const IngestResult = Schema.Struct({
  sourceId: Schema.String,
  status: Schema.Literals(["finished", "failed", "skipped"]),
  reason: Schema.optionalKey(Schema.Literals(["already_running", "disabled"])),
  outcome: Schema.optionalKey(IngestOutcome)
}).annotate({ identifier: "IngestResult" })
export type IngestResult = typeof IngestResult.Type

/** The answer of `POST /admin/ingest?wait=true` (200): every run's end, and how long the call waited. */
export const IngestResults = Schema.Struct({
  runs: Schema.Array(IngestResult),
  waitedMs: Schema.Finite
}).annotate({ identifier: "IngestResults" })
export type IngestResults = typeof IngestResults.Type

// -----------------------------------------------------------------------------
// Errors
// -----------------------------------------------------------------------------

export class OfferNotFound extends ApiError<OfferNotFound>()("OfferNotFound", {
  status: 404,
  fields: { id: Schema.String },
  message: ({ id }) => `No offer with id ${id}`
}) {}

export class ResultTooLarge extends ApiError<ResultTooLarge>()("ResultTooLarge", {
  status: 422,
  fields: { limit: Schema.Number },
  message: ({ limit }) =>
    `More than ${limit} offers match: narrow the filters, or page with limit and offset instead of complete=true`
}) {}

export class UnknownSources extends ApiError<UnknownSources>()("UnknownSources", {
  status: 400,
  fields: { sourceIds: Schema.Array(Schema.String) },
  message: ({ sourceIds }) => `Unknown source id(s): ${sourceIds.join(", ")}`
}) {}

export class ImageNotFound extends ApiError<ImageNotFound>()("ImageNotFound", {
  status: 404,
  fields: { key: Schema.String },
  message: "No image with this key"
}) {}

// -----------------------------------------------------------------------------
// API
// -----------------------------------------------------------------------------

/** `Authorization: Bearer <ADMIN_TOKEN>`; 503 when the server has no ADMIN_TOKEN. */
export class AdminAuth extends HttpApiMiddleware.Service<AdminAuth, { provides: never; requires: never }>()(
  "@svc/schema/Listings/AdminAuth",
  { security: { bearer: HttpApiSecurity.bearer }, error: [Unauthorized, ServiceUnavailable], requiredForClient: true }
) {}

/**
 * In the document, how GET /offers and GET /offers/:id answer (one rule, `sendJsonAnswer` in
 * `@svc/listings` http.ts): an ETag to revalidate with (304), gzip when the client takes it.
 */
const revalidated = OpenApi.annotations({
  transform: (operation) => {
    const header = (description: string, required = true) => ({ description, required, schema: { type: "string" } })
    const headers = {
      ETag: header("A hash of the JSON answered; the weak form W/\"…\" with gzip. Either form revalidates"),
      "Cache-Control": header("no-cache: keep the answer and revalidate it with If-None-Match"),
      Vary: header("Accept-Encoding")
    }
    return {
      ...operation,
      parameters: [
        ...(operation["parameters"] ?? []),
        {
          name: "If-None-Match",
          in: "header",
          required: false,
          description: "An ETag this route answered (strong or weak), a list of them, or *: 304 without a body while the answer is the same",
          schema: { type: "string" }
        },
        {
          name: "Accept-Encoding",
          in: "header",
          required: false,
          description: "gzip (or x-gzip, or *) with a q-value above 0: an answer of 1 KiB or more is sent gzip",
          schema: { type: "string" }
        }
      ],
      responses: {
        ...operation["responses"],
        "200": {
          ...operation["responses"]?.["200"],
          headers: { ...headers, "Content-Encoding": header("gzip, when the answer is compressed", false) }
        },
        "304": { description: "Not Modified: If-None-Match named this answer's ETag", headers }
      }
    }
  }
})

export class OffersGroup extends HttpApiGroup.make("offers").add(
  HttpApiEndpoint.get("list", "/offers", { query: OffersQuery, success: OffersResponse, error: [ResultTooLarge, InvalidRequest] })
    .annotateMerge(revalidated),
  HttpApiEndpoint.get("byId", "/offers/:id", {
    params: { id: IdParam },
    success: CarOffer,
    error: OfferNotFound
  }).annotateMerge(revalidated)
).annotateMerge(OpenApi.annotations({ title: "Offers" })) {}

export class SourcesGroup extends HttpApiGroup.make("sources").add(
  HttpApiEndpoint.get("list", "/sources", { success: SourcesResponse })
) {}

/**
 * GET /import-services query parameters. Any other is named in `warnings` (not refused, as GET /offers
 * does: a client may add its own, a cache buster); a misspelt `regoin=` listed every company silently.
 */
export const ImportServicesQuery = {
  /** Compares as GET /offers' `regions`: case, accents and punctuation do not count. */
  region: Schema.optional(NameParam)
}

export class ImportServicesGroup extends HttpApiGroup.make("importServices").add(
  HttpApiEndpoint.get("list", "/import-services", {
    query: ImportServicesQuery,
    success: ImportServicesResponse
  })
) {}

/**
 * A list of source ids that names none (`?sources=`, `?sources=%20,`, `[" "]`) is refused: it ran every
 * source, the opposite of what was asked. Leave it out for every enabled source.
 */
const NO_SOURCE_NAMED = "names no source: give source ids, or leave it out to run every enabled source"

/** The query parameters of `POST /admin/ingest`; any other is refused by the handler (a misspelt `?source=` ran every source). */
export const INGEST_QUERY_PARAMETERS = ["sources", "wait"] as const

export class AdminGroup extends HttpApiGroup.make("admin").add(
  HttpApiEndpoint.post("ingest", "/admin/ingest", {
    query: {
      /** Comma-separated source ids; default: every enabled source. */
      sources: Schema.optional(
        ListParam().check(Schema.makeFilter((text) => text.split(",").some((id) => id.trim() !== "") || NO_SOURCE_NAMED))
      ),
      /** Wait for the runs and report their outcomes. */
      wait: Schema.optional(Schema.Boolean)
    },
    // 200 with the outcomes when waited for, else 202 (started). IngestResults first: only it has
    // `waitedMs`, so an answer without it is encoded (and documented) as the 202.
    success: [IngestResults.pipe(HttpApiSchema.status(200)), IngestRuns.pipe(HttpApiSchema.status(202))],
    error: [UnknownSources, InvalidRequest]
  })
).middleware(AdminAuth) {}

export class ListingsApi extends HttpApi.make("listings")
  .add(HealthGroup)
  .add(OffersGroup)
  .add(SourcesGroup)
  .add(ImportServicesGroup)
  .add(AdminGroup)
  .annotateMerge(ApiConventions)
  .annotateMerge(OpenApi.annotations({
    title: "svc listings",
    description: "Car listings aggregated from partner feeds, with their cached images (GET /images/{key})."
  }))
{}

// -----------------------------------------------------------------------------
// Internal RPC (served at /rpc behind ADMIN_TOKEN)
// -----------------------------------------------------------------------------

/** Progress of `TriggerIngest`: first one `Run` per source, then (with `wait`) progress and outcomes. */
export const IngestEvent = Schema.Union([
  Schema.TaggedStruct("Run", { run: IngestRun }),
  Schema.TaggedStruct("Progress", {
    sourceId: Schema.String,
    offersFetched: Schema.Finite,
    offersUpserted: Schema.Finite,
    recordsRejected: Schema.Finite
  }),
  Schema.TaggedStruct("Finished", { sourceId: Schema.String, outcome: IngestOutcome })
])
export type IngestEvent = typeof IngestEvent.Type

export const TriggerIngest = Rpc.make("TriggerIngest", {
  payload: {
    sources: Schema.optionalKey(
      BoundedArray(NameParam, MAX_LIST_ITEMS).check(Schema.makeFilter((ids) => ids.some((id) => id.trim() !== "") || NO_SOURCE_NAMED))
    ),
    wait: Schema.Boolean
  },
  success: IngestEvent,
  error: UnknownSources,
  stream: true
})

export const SourceHealthRpc = Rpc.make("SourceHealth", { success: SourcesResponse })

export class ListingsRpcs extends RpcGroup.make(TriggerIngest, SourceHealthRpc).middleware(RpcDefects)
  // a misspelt key (`source` for `sources`) is refused, not an ingest of every source
  .annotateRpcs(Rpc.ParseOptions, STRICT_REQUEST) {}
