/**
 * The docs API's OpenAPI document (`GET /openapi.json` on docs-api): `DocsApi`'s, plus the routes
 * docs-api serves outside it, described as `HttpApi` endpoints **for the document only** (nothing here
 * is implemented or decoded):
 *
 * - `GET /ready`: readiness, the platform's route (`Readiness.route`, the database probed);
 * - `POST /rpc`: the internal RPC group `DocsRpcs` (NDJSON, behind DOCS_ADMIN_TOKEN), what
 *   `svc docs add|refresh|remove|list` call with `DOCS_URL`;
 * - `GET /openapi.json`: this document.
 *
 * A route docs-api serves outside `DocsApi` is documented by adding its endpoint to
 * {@link DocsRawRoutesApi} (merged by `OpenApiDocument.ts`, the suite's one rule): that is the one
 * place. `test/openapiDocument.test.ts` in `@svc/docs` compares the routes the server's router holds
 * with the document's operations.
 */
import { HttpApi, HttpApiGroup, HttpApiMiddleware, HttpApiSecurity, OpenApi } from "effect/http-api"
import { DocsApi, DocsRpcs } from "./Docs.ts"
import { ServiceUnavailable, Unauthorized } from "./Errors.ts"
import { ReadinessGroup } from "./Health.ts"
import { DocumentGroup, internalRpcEndpoint, openApiDocument } from "./OpenApiDocument.ts"

/**
 * `DOCS_ADMIN_TOKEN` on `POST /rpc`, for the document only (the route checks it itself, `rpc.ts`).
 * Its scheme is `adminToken`: `bearer` in this document is an API key of the REST API.
 */
export class DocsAdminAuth extends HttpApiMiddleware.Service<DocsAdminAuth, { provides: never; requires: never }>()(
  "@svc/schema/DocsOpenApi/DocsAdminAuth",
  {
    security: {
      adminToken: HttpApiSecurity.bearer.pipe(
        HttpApiSecurity.annotate(OpenApi.Description, "DOCS_ADMIN_TOKEN (operating the index; not an API key)")
      )
    },
    error: [Unauthorized, ServiceUnavailable]
  }
) {}

export class DocsInternalRpcGroup extends HttpApiGroup.make("internal").add(
  internalRpcEndpoint({
    name: "DocsRpcs",
    rpcs: DocsRpcs,
    description: "Not for apps: what `svc docs add|refresh|remove|list` do against a running docs-api (DOCS_URL). " +
      "Behind DOCS_ADMIN_TOKEN (unset: every call is refused, 503). Adding and refreshing stream the run's progress, " +
      "then Done."
  })
).middleware(DocsAdminAuth).annotateMerge(OpenApi.annotations({ title: "Internal" })) {}

/** Only for its OpenAPI document (see the module comment). */
export const DocsRawRoutesApi = HttpApi.make("docsRawRoutes")
  .add(ReadinessGroup)
  .add(DocsInternalRpcGroup)
  .add(DocumentGroup)

/** The docs document: `DocsApi`'s with the routes of {@link DocsRawRoutesApi} merged in. */
export const docsOpenApi = (): OpenApi.OpenAPISpec => openApiDocument(DocsApi, DocsRawRoutesApi)
