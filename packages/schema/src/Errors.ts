/**
 * The suite's error convention.
 *
 * Every HTTP error answer of every service is JSON
 * `{"code": "<snake_case>", "message": "<sentence>", ...details}` with the right status. Errors are
 * declared once with {@link ApiError}, which gives:
 *
 * - a `Schema.Error` class with a `_tag` (so `Effect.catchTag` works) and the `httpApiStatus`
 *   annotation (so `HttpApiBuilder` answers with that status),
 * - `code` derived from the tag (`OfferNotFound` -> `offer_not_found`) and a default `message`, both
 *   filled in by the constructor, so a throw site only passes the details: `new OfferNotFound({ id })`,
 * - no `_tag` on the wire: the tag is `Schema.tagDefaultOmit`, dropped when encoding and restored when
 *   decoding. Stripping `_tag` from bodies in the server instead would break every `HttpApiClient`
 *   that decodes these errors; omitting it in the schema keeps both sides happy. Clients tell the
 *   errors of one status apart by `code`, a literal.
 * - `HttpServerRespondable`: an error that reaches the server without being declared on the endpoint
 *   still answers with its status and body instead of an anonymous 500.
 *
 * ```ts
 * export class OfferNotFound extends ApiError<OfferNotFound>()("OfferNotFound", {
 *   status: 404,
 *   fields: { id: Schema.String },
 *   message: ({ id }) => `No offer with id ${id}`
 * }) {}
 *
 * HttpApiEndpoint.get("byId", "/offers/:id", { params: { id: Schema.String }, success: CarOffer, error: OfferNotFound })
 * // handler: return yield* new OfferNotFound({ id })  ->  404 {"code":"offer_not_found","message":"No offer with id 7","id":"7"}
 * ```
 */
import type { Cause } from "effect"
import { Context, Effect, Schema } from "effect"
import { HttpServerRespondable, HttpServerResponse } from "effect/http"
import { HttpApi } from "effect/http-api"

type SnakeCase<S extends string> = S extends `${infer Head}${infer Tail}`
  ? `${Head extends Lowercase<Head> ? Head : `_${Lowercase<Head>}`}${SnakeCase<Tail>}`
  : S

/** The `code` derived from an error tag: `OfferNotFound` -> `offer_not_found`. */
export type CodeOf<Tag extends string> = SnakeCase<Uncapitalize<Tag>>

/** Runtime twin of {@link CodeOf}. */
export const codeOf = <Tag extends string>(tag: Tag): CodeOf<Tag> =>
  tag.replace(/(?<=.)([A-Z])/g, "_$1").toLowerCase() as CodeOf<Tag>

/** The fields every error of the suite carries, plus its own details. */
export type ApiErrorFields<Tag extends string, Code extends string, Fields extends Schema.Struct.Fields> =
  & {
    readonly _tag: ReturnType<typeof Schema.tagDefaultOmit<Tag>>
    readonly code: Schema.tag<Code>
    readonly message: Schema.withConstructorDefault<Schema.String>
  }
  & Fields

/**
 * Declares an error class following the suite's convention (see the module comment).
 *
 * - `status`: the HTTP status it answers with.
 * - `message`: the default message, or a function of the error's fields; a throw site may still
 *   pass its own `message`.
 * - `code`: only when the derived one does not fit (e.g. `RouteNotFound` answers `not_found`).
 * - `fields`: the details, which also appear in the body.
 */
export const ApiError = <Self>() =>
<
  const Tag extends string,
  const Fields extends Schema.Struct.Fields = {},
  const Code extends string = CodeOf<Tag>
>(
  tag: Tag,
  options: {
    readonly status: number
    readonly message: string | ((error: Schema.Struct.Type<Fields>) => string)
    readonly code?: Code | undefined
    readonly fields?: Fields | undefined
    readonly description?: string | undefined
  }
): Schema.Class<
  Self,
  Schema.Struct<ApiErrorFields<Tag, Code, Fields>>,
  Cause.YieldableError & HttpServerRespondable.Respondable
> => {
  const code = options.code ?? codeOf(tag)
  const message = options.message
  // Typed loosely inside: the precise class type is the declared return type above.
  const Base: new(props: any, makeOptions?: any) => any = Schema.Error<Self>(tag)({
    _tag: Schema.tagDefaultOmit(tag),
    code: Schema.tag(code),
    message: Schema.String.pipe(
      Schema.withConstructorDefault(Effect.succeed(typeof message === "string" ? message : ""))
    ),
    ...options.fields
  }, {
    httpApiStatus: options.status,
    description: options.description ?? (typeof message === "string" ? message : code)
  }) as any
  class ApiErrorClass extends Base {
    constructor(props?: any, makeOptions?: any) {
      super(props, makeOptions)
      // A message computed from the fields, unless the throw site (or a decoded body) gave one.
      if (typeof message === "function" && props?.message === undefined) {
        this.message = message(this as Schema.Struct.Type<Fields>)
      }
    }
    [HttpServerRespondable.symbol]() {
      // Encoded with the class's own schema, so the body is exactly what a declared endpoint error gives.
      return Effect.flatMap(
        Schema.encodeUnknownEffect(this.constructor as Schema.Top)(this),
        (body) => HttpServerResponse.json(body, { status: options.status })
      )
    }
  }
  return ApiErrorClass as any
}

/** One bad parameter of an {@link InvalidRequest}. */
export const RequestIssue = Schema.Struct({
  /** Where the parameter is: like OpenAPI's `in`, plus `body` for the request body. */
  in: Schema.Literals(["path", "query", "header", "body"]),
  /** The parameter name, or the path of the body field (`items[0].title`); empty for the body as a whole. */
  parameter: Schema.String,
  /** What is wrong with it, with the received value where useful. */
  problem: Schema.String
})
export type RequestIssue = typeof RequestIssue.Type

/** 400: the request failed to decode. The bootstrap answers every decode failure with it. */
export class InvalidRequest extends ApiError<InvalidRequest>()("InvalidRequest", {
  status: 400,
  message: ({ issues }) =>
    issues.length === 0
      ? "Invalid request"
      : `Invalid request: ${issues.map((issue) => `${describeLocation(issue)}: ${issue.problem}`).join("; ")}`,
  fields: { issues: Schema.Array(RequestIssue) }
}) {}

const describeLocation = (issue: RequestIssue): string => {
  if (issue.parameter === "") return issue.in
  if (issue.in === "body") return `body field "${issue.parameter}"`
  return `${issue.in === "header" ? "header" : `${issue.in} parameter`} "${issue.parameter}"`
}

/** 404 for a path no route matches. Endpoint-specific "not found" errors get their own code. */
export class RouteNotFound extends ApiError<RouteNotFound>()("RouteNotFound", {
  status: 404,
  code: "not_found",
  message: "No such route"
}) {}

/** 401: missing or wrong credentials. */
export class Unauthorized extends ApiError<Unauthorized>()("Unauthorized", {
  status: 401,
  message: "Missing or invalid credentials"
}) {}

/** 503: a dependency is down, the route is disabled by configuration, or the server is shutting down. */
export class ServiceUnavailable extends ApiError<ServiceUnavailable>()("ServiceUnavailable", {
  status: 503,
  message: "Service temporarily unavailable"
}) {}

/** 500: a defect or an unexpected error. The body names only the request id; the log has the cause. */
export class InternalError extends ApiError<InternalError>()("InternalError", {
  status: 500,
  fields: { requestId: Schema.optionalKey(Schema.String) },
  message: ({ requestId }) => requestId === undefined ? "Internal error" : `Internal error (request id ${requestId})`
}) {}

const requestParseOptions = { errors: "all", reportInput: true } as const

/**
 * Annotations every `HttpApi` of the suite carries: decode *all* bad request parameters (not only
 * the first) and keep the received value, so a 400 names each bad parameter and what was sent.
 * Only the request slots: response encoding keeps the defaults.
 *
 * ```ts
 * export class ListingsApi extends HttpApi.make("listings").add(OffersGroup).annotateMerge(ApiConventions) {}
 * ```
 */
export const ApiConventions = Context.make(HttpApi.ParamsParseOptions, requestParseOptions).pipe(
  Context.add(HttpApi.QueryParseOptions, requestParseOptions),
  Context.add(HttpApi.HeadersParseOptions, requestParseOptions),
  Context.add(HttpApi.PayloadParseOptions, requestParseOptions)
)
