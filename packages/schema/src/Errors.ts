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

/**
 * 400: the request failed to decode. The bootstrap answers every decode failure with it.
 *
 * Its `message` spells out every issue (the CLI and the promise clients show only the message),
 * and `issues` lists them again for programs. So that a refusal stays small whatever the request
 * (a batch with 90,000 unknown keys was answered with 21.5 MB), it carries at most
 * {@link MAX_ISSUES} issues, then one more saying how many were left out, and it cuts long
 * parameter names (a body's keys are the caller's) and problems. Every service's refusals are made
 * here, so the caps hold for all of them; they are idempotent, so a refusal decoded by a client and
 * passed on (the RPC does) keeps its count.
 */
const InvalidRequestBase = ApiError<InvalidRequest>()("InvalidRequest", {
  status: 400,
  message: ({ issues }) =>
    issues.length === 0
      ? "Invalid request"
      : `Invalid request: ${issues.map((issue) => `${describeLocation(issue)}: ${issue.problem}`).join("; ")}`,
  fields: { issues: Schema.Array(RequestIssue) }
})

export class InvalidRequest extends InvalidRequestBase {
  constructor(props: ConstructorParameters<typeof InvalidRequestBase>[0], options?: ConstructorParameters<typeof InvalidRequestBase>[1]) {
    super(Array.isArray(props?.issues) ? { ...props, issues: capIssues(props.issues) } : props, options)
  }
}

/** How many issues an {@link InvalidRequest} lists before one more issue counts those left out. */
export const MAX_ISSUES = 20

/** How much of a parameter's name, and of a problem, an {@link InvalidRequest} repeats. */
export const MAX_PARAMETER_LENGTH = 200
export const MAX_PROBLEM_LENGTH = 500

/** `text` cut to `max` characters (a surrogate pair is not split), ending with "…" when cut. */
const cut = (text: string, max: number): string => {
  if (text.length <= max) return text
  const end = /[\ud800-\udbff]/.test(text.charAt(max - 2)) ? max - 2 : max - 1
  return `${text.slice(0, end)}…`
}

const capIssue = (issue: RequestIssue): RequestIssue =>
  issue.parameter.length <= MAX_PARAMETER_LENGTH && issue.problem.length <= MAX_PROBLEM_LENGTH ? issue : {
    in: issue.in,
    parameter: cut(issue.parameter, MAX_PARAMETER_LENGTH),
    problem: cut(issue.problem, MAX_PROBLEM_LENGTH)
  }

/**
 * The first {@link MAX_ISSUES} issues, and one more counting the rest. A list one longer than the
 * cap is kept whole (the count would take the place of the issue it counts), so a capped list is
 * left as it is.
 */
const capIssues = (issues: ReadonlyArray<RequestIssue>): ReadonlyArray<RequestIssue> => {
  if (issues.length <= MAX_ISSUES + 1) return issues.map(capIssue)
  const left = issues.length - MAX_ISSUES
  return [
    ...issues.slice(0, MAX_ISSUES).map(capIssue),
    { in: issues[MAX_ISSUES]!.in, parameter: "", problem: `${left} more issues are not listed: a refusal names the first ${MAX_ISSUES}` }
  ]
}

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

/**
 * 415: a request body the route cannot read as sent: a JSON body whose `Content-Type` names a charset
 * other than UTF-8 (`@svc/platform` `JsonBody.charsetProblem` words the message), or a media type the
 * route does not take. Refused before the body is read.
 */
export class UnsupportedMediaType extends ApiError<UnsupportedMediaType>()("UnsupportedMediaType", {
  status: 415,
  message: "The request body's Content-Type is not supported: send application/json in UTF-8"
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
