/**
 * The listings OpenAPI document (`GET /openapi.json`): `ListingsApi`'s, plus the routes the service
 * serves outside it, described as `HttpApi` endpoints **for the document only** (nothing here is
 * implemented or decoded):
 *
 * - `GET /images/{key}`: streams a cached image or redirects to its original (`@svc/listings`
 *   http.ts serves it by hand: it answers bytes from object storage, not JSON);
 * - `GET /ready`: readiness, the platform's route (`Readiness.route`);
 * - `POST /rpc`: the internal RPC group `ListingsRpcs` (NDJSON, behind ADMIN_TOKEN), what
 *   `svc listings ingest` calls;
 * - `GET /openapi.json`: this document.
 *
 * A route listings serves outside `ListingsApi` is documented by adding its endpoint to
 * {@link ListingsRawRoutesApi} (merged by `OpenApiDocument.ts`, the suite's one rule): that is the one place (routes added to `ListingsApi` itself are in the
 * document already). `test/openapi.test.ts` in `@svc/listings` compares the routes the service's
 * router holds with the document's operations.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { InvalidRequest } from "./Errors.ts"
import { ReadinessGroup } from "./Health.ts"
import { AdminAuth, ImageNotFound, ListingsApi, ListingsRpcs } from "./Listings.ts"
import { DocumentGroup, internalRpcEndpoint, openApiDocument } from "./OpenApiDocument.ts"

/** The content types a cached image may have (the only ones the cacher stores). */
export const CACHED_IMAGE_TYPES = ["image/jpeg", "image/png", "image/webp", "image/gif", "image/avif"] as const

const header = (description: string) => Schema.String.annotate({ description })

export class ImagesGroup extends HttpApiGroup.make("images").add(
  HttpApiEndpoint.get("image", "/images/:key", {
    params: {
      key: Schema.String.annotate({
        description: "Hex SHA-256 of the image's original URL (64 lowercase hex digits), as an offer's `images` and " +
          "`thumbnail` give it; anything else is 404 (a NUL character: 400)"
      })
    },
    headers: {
      "if-none-match": Schema.optional(header("The ETag of a cached image kept by the client: 304 while it is unchanged"))
    },
    success: [
      HttpApiSchema.WithHeaders(
        HttpApiSchema.StreamUint8Array({ contentType: CACHED_IMAGE_TYPES }),
        { etag: header("Identifies the stored bytes"), "cache-control": header("public, max-age=86400") }
      ),
      HttpApiSchema.WithHeaders(
        HttpApiSchema.Empty(302).annotate({
          description: "Known but not cached (pending, failed, rejected, storage off or the object gone): the original URL. " +
            "An original the server may not reach itself (an internal address or name) is 404 instead"
        }),
        { location: header("The image's original URL"), "cache-control": header("no-cache") }
      ),
      HttpApiSchema.WithHeaders(
        HttpApiSchema.Empty(304).annotate({ description: "Not Modified: If-None-Match named the cached image's ETag" }),
        { etag: header("The cached image's ETag"), "cache-control": header("public, max-age=86400") }
      )
    ],
    error: [ImageNotFound, InvalidRequest]
  }).annotateMerge(OpenApi.annotations({
    summary: "An offer's image",
    description: "Never fetches anything: images are cached in the background after an ingest, only for URLs a source feed gave.",
    // the stream's own description is not carried to its response
    transform: (operation) => ({
      ...operation,
      responses: {
        ...operation["responses"],
        "200": {
          ...operation["responses"]?.["200"],
          description: "The cached image, streamed from object storage, with its stored content type"
        }
      }
    })
  }))
).annotateMerge(OpenApi.annotations({ title: "Images" })) {}

export class ListingsInternalRpcGroup extends HttpApiGroup.make("internal").add(
  internalRpcEndpoint({
    name: "ListingsRpcs",
    rpcs: ListingsRpcs,
    description: "Not for apps: the admin surface `svc listings ingest` uses. Behind ADMIN_TOKEN like POST /admin/ingest. " +
      "TriggerIngest {sources?: string[], wait: boolean} streams Run, Progress and Finished events; " +
      "SourceHealth answers the GET /sources record."
  })
).middleware(AdminAuth).annotateMerge(OpenApi.annotations({ title: "Internal" })) {}

/** Only for its OpenAPI document (see the module comment). */
export const ListingsRawRoutesApi = HttpApi.make("listingsRawRoutes")
  .add(ImagesGroup)
  .add(ReadinessGroup)
  .add(ListingsInternalRpcGroup)
  .add(DocumentGroup)

/**
 * The listings document: `ListingsApi`'s (its title, description, routes and schemas) with the
 * routes of {@link ListingsRawRoutesApi} merged in.
 */
export const listingsOpenApi = (): OpenApi.OpenAPISpec => openApiDocument(ListingsApi, ListingsRawRoutesApi)
