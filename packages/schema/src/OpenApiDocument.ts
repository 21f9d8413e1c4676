/**
 * What every server's `GET /openapi.json` is made of: one rule for the suite, **the document lists
 * every route the server answers, and none it does not**.
 *
 * A server answers the routes of its `HttpApi` and some it routes by hand (`GET /ready`, the internal
 * `POST /rpc`, the document itself, a service's raw routes). Those are described as `HttpApi`
 * endpoints in a second, **document-only** API (nothing in it is implemented or decoded), and
 * {@link openApiDocument} merges its paths, schemas, security schemes and tags into the served API's
 * document. Each service's module (`ListingsOpenApi.ts`, `QueueOpenApi.ts`, `DocsOpenApi.ts`,
 * `Suite.ts`) holds its document-only API: the one place to add a route served outside the API.
 * The pieces every server shares are here: {@link DocumentGroup} (the document's own route) and
 * {@link internalRpcEndpoint} (the internal RPC); `ReadinessGroup` (`GET /ready`) is in `Health.ts`.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { InvalidRequest, UnsupportedMediaType } from "./Errors.ts"

/**
 * The document of `api` with the routes of `documentOnly` merged in: its title, description and
 * routes are `api`'s. A route (method and path) in both, or a security scheme or schema of one name
 * described two ways, is an error: the server would answer one route two ways, or the document
 * would say one thing twice.
 */
export const openApiDocument = <
  Id extends string,
  Groups extends HttpApiGroup.Constraint,
  OnlyId extends string,
  OnlyGroups extends HttpApiGroup.Constraint
>(api: HttpApi.HttpApi<Id, Groups>, documentOnly: HttpApi.HttpApi<OnlyId, OnlyGroups>): OpenApi.OpenAPISpec => {
  const spec = OpenApi.fromApi(api)
  const extra = OpenApi.fromApi(documentOnly)
  for (const [path, item] of Object.entries(extra.paths)) {
    const known = spec.paths[path]
    for (const method of Object.keys(item)) {
      if (known !== undefined && Object.hasOwn(known, method)) {
        throw new Error(`OpenAPI: ${method.toUpperCase()} ${path} is both in the API and a document-only route`)
      }
    }
    spec.paths[path] = { ...known, ...item }
  }
  const merge = <A>(kind: string, into: Record<string, A>, from: Record<string, A>): Record<string, A> => {
    for (const [name, value] of Object.entries(from)) {
      if (Object.hasOwn(into, name) && JSON.stringify(into[name]) !== JSON.stringify(value)) {
        throw new Error(`OpenAPI: the ${kind} ${name} is described two ways (name one of them otherwise)`)
      }
    }
    return { ...from, ...into }
  }
  spec.components.schemas = merge("schema", spec.components.schemas, extra.components.schemas)
  spec.components.securitySchemes = merge("security scheme", spec.components.securitySchemes, extra.components.securitySchemes)
  spec.tags = [...spec.tags, ...extra.tags.filter((tag) => !spec.tags.some((known) => known.name === tag.name))]
  return spec
}

/** `GET /openapi.json`: the document itself, on every server that serves one. */
export class DocumentGroup extends HttpApiGroup.make("document").add(
  HttpApiEndpoint.get("openapi", "/openapi.json", {
    success: Schema.Record(Schema.String, Schema.Unknown).annotate({ description: "This document (OpenAPI 3.1)" })
  }).annotateMerge(OpenApi.annotations({ summary: "This OpenAPI document" }))
) {}

/** One line of an RPC body or answer (effect RPC's NDJSON protocol). */
const RpcLine = Schema.Record(Schema.String, Schema.Unknown).annotate({
  description: "One message of effect's RPC protocol per line"
})

/** A body over 16 MiB (platform `RpcHttp.ts`), refused before the rest of it is read. */
const RpcBodyTooLarge = Schema.Struct({
  code: Schema.Literal("payload_too_large"),
  message: Schema.String,
  maxBytes: Schema.Int
}).annotate({
  identifier: "RpcBodyTooLarge",
  description: "The body is over 16 MiB, the most one call may send",
  httpApiStatus: 413
})

/**
 * `POST /rpc`, a service's internal RPC (effect's `RpcClient` over HTTP, NDJSON; platform
 * `RpcHttp.ts`), for a group whose token middleware the service adds:
 * `HttpApiGroup.make("internal").add(internalRpcEndpoint(...)).middleware(AdminAuth)`. Its procedures
 * are named from `rpcs` itself, so the document follows the group.
 */
export const internalRpcEndpoint = (options: {
  /** The group's name (`ListingsRpcs`), in the summary. */
  readonly name: string
  /** The group (`ListingsRpcs`): its procedures are listed. */
  readonly rpcs: { readonly requests: ReadonlyMap<string, unknown> }
  /** Who calls it and behind which token; the procedures' list follows. */
  readonly description: string
}) =>
  HttpApiEndpoint.post("rpc", "/rpc", {
    payload: HttpApiSchema.StreamNdjson({ schema: RpcLine }).annotate({
      description: "Request messages, one JSON object a line ({\"_tag\":\"Request\",\"id\",\"tag\",\"payload\",\"headers\"}), " +
        "checked whole before any runs; at most 16 MiB; UTF-8 (a Content-Type charset other than UTF-8 is 415, unread)"
    }),
    success: HttpApiSchema.StreamNdjson({ schema: RpcLine }).annotate({
      description: "Exit and Chunk messages, one JSON object a line"
    }),
    error: [InvalidRequest, RpcBodyTooLarge, UnsupportedMediaType]
  }).annotateMerge(OpenApi.annotations({
    summary: `Internal RPC (${options.name})`,
    description: `${options.description} Procedures: ${[...options.rpcs.requests.keys()].join(", ")}.`
  }))
