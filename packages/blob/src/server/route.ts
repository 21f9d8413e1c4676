/**
 * Upload routes: a route definition served as a plain `(request: Request) => Promise<Response>` handler,
 * usable from any Node or web framework (and from an effect `HttpRouter` through
 * `HttpServerRequest.toWeb` / `HttpServerResponse.fromWeb`).
 *
 * Every message is a JSON POST: a request whose `Content-Type` names another media type is refused 415
 * (`request_failed`, naming `application/json`) unread; one without a `Content-Type` is read as JSON, as
 * the suite's other JSON APIs read it.
 *
 * Protocol (see `shared/protocol.ts`): `begin` runs `onBeforeUpload`, checks type and size, and answers a
 * presigned PUT (one URL, or one per part for large files; content type and length are signed) plus a
 * completion token — HMAC-SHA256 over route, path, size, content type, upload id, nonce and expiry.
 * `complete` verifies the token (`forbidden` when invalid, for another route, or expired), completes a
 * multipart upload, checks the stored object (missing -> `not_found`; other size or type ->
 * `signature_mismatch`; leading bytes contradicting the type -> `content_type_not_allowed`; the object is
 * deleted in those cases), then runs `onUploadComplete` (a throw deletes the object first, then the
 * error is answered). Completion is single-use (`route/completion.ts`): a completion record created with
 * `If-None-Match: *` in the route's bucket lets one `complete` of an upload do this, across requests and
 * instances; a repeat answers what the first answered, without running the hook again. `resume`
 * re-signs an upload already begun from its token alone (expired URLs; a multipart upload picked up
 * again, with the parts storage holds listed by ListParts) and answers a new token with the same claims;
 * never for an upload already completed.
 *
 * Failures resolve in the spec's order: `onError` first (a Response it returns is the answer, a BlobError
 * is answered as JSON); else a thrown BlobError as itself; else an application error with a `status` (or
 * `statusCode`) from 400 to 599 by the status table (other statuses: `request_failed` keeping the status);
 * anything else is rethrown unchanged (an application bug).
 *
 * The pieces live in `route/`: `types` (options, hook arguments), `prepare` (a route's options checked,
 * defaults, body cap), `request` (the media type, the capped body, the decoded message), `completionToken`,
 * `completion` (the single-use completion record), `failure` (resolution order), `begin`, `complete`,
 * `resume`, and `node` (`toNodeListener`). This file is the handler that dispatches to them.
 *
 * @module
 */
import { Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { BlobError } from "../shared/BlobError.ts"
import { parseOptionalSize } from "../shared/size.ts"
import { begin } from "./route/begin.ts"
import { complete } from "./route/complete.ts"
import { resolveFailure } from "./route/failure.ts"
import { DEFAULT_MAX_BODY_SIZE, type PreparedRoute, prepareRoute } from "./route/prepare.ts"
import { bodyTooLarge, decodeUploadRequest, pathSegmentName, readCappedBody, unsupportedMediaType } from "./route/request.ts"
import { resume } from "./route/resume.ts"
import type { UploadHandler, UploadHandlerOptions, UploadRouteOptions } from "./route/types.ts"

export type * from "./route/types.ts"
export { COMPLETIONS_PREFIX } from "./route/completion.ts"
export { signCompletionToken, verifyCompletionToken } from "./route/completionToken.ts"
export { errorResponse, toBlobError } from "./route/failure.ts"
export { toNodeListener } from "./route/node.ts"
export { DEFAULT_MAX_BODY_SIZE } from "./route/prepare.ts"
export { readCappedBody } from "./route/request.ts"

/**
 * A handler for several named routes. The route is the body's `route` field, else the last segment of the
 * request path (`POST /api/upload/avatar`); an unknown route answers not_found.
 */
export const createUploadHandler = (options: UploadHandlerOptions): UploadHandler => {
  if (typeof options !== "object" || options === null || typeof options.routes !== "object") {
    throw new TypeError("createUploadHandler: pass { routes: { name: { bucket, onBeforeUpload, ... } } }")
  }
  const handlerMaxBodySize = parseOptionalSize(options.maxBodySize, "maxBodySize")
  const routes = new Map(
    Object.entries(options.routes).map(([name, route]) => [name, prepareRoute(name, route, handlerMaxBodySize)])
  )
  // before the body is read, only the path can tell the route; a route named in the body alone is
  // read with the largest cap, then held to its own
  const largestMaxBodySize = Math.max(DEFAULT_MAX_BODY_SIZE, ...[...routes.values()].map((route) => route.maxBodySize))
  const routeOfPath = (request: Request): PreparedRoute | undefined => {
    if (routes.size === 1) return routes.values().next().value
    const last = new URL(request.url).pathname.split("/").filter((s) => s !== "").pop()
    try {
      return last === undefined ? undefined : routes.get(decodeURIComponent(last))
    } catch {
      return undefined
    }
  }
  const secret = options.secret === undefined
    ? randomBytes(32)
    : Buffer.from(Redacted.isRedacted(options.secret) ? Redacted.value(options.secret) : options.secret, "utf8")
  if (secret.length < 16) throw new TypeError("createUploadHandler: secret must be at least 16 bytes")

  return async (request: Request): Promise<Response> => {
    let route: PreparedRoute | undefined
    let routeName = ""
    try {
      if (request.method !== "POST") {
        throw new BlobError("invalid_input", { message: `Upload routes take POST, not ${request.method}` })
      }
      const pathRoute = routeOfPath(request)
      if (pathRoute !== undefined) routeName = pathRoute.name
      const unsupported = unsupportedMediaType(request)
      if (unsupported !== undefined) {
        // the route the path names answers (its onError first), the body left unread
        route = pathRoute
        await request.body?.cancel().catch(() => undefined)
        throw unsupported
      }
      const limit = pathRoute?.maxBodySize ?? largestMaxBodySize
      const text = await readCappedBody(request, limit).catch((error: unknown) => {
        // the route the path names answers (its onError first); otherwise none is known yet
        route = pathRoute
        throw error
      })
      const body = await decodeUploadRequest(text)
      routeName = body.route ?? pathSegmentName(request)
      route = routes.get(routeName) ?? (routes.size === 1 && body.route === undefined ? routes.values().next().value : undefined)
      if (route === undefined) throw new BlobError("not_found", { message: `No upload route ${JSON.stringify(routeName)}` })
      routeName = route.name
      // read with the largest cap (the route was in the body): held to the route's own now
      if (Buffer.byteLength(text) > route.maxBodySize) throw bodyTooLarge(route.maxBodySize)
      switch (body.type) {
        case "begin":
          return await begin(secret, route, request, body)
        case "complete":
          return await complete(secret, route, request, body)
        case "resume":
          return await resume(secret, route, body)
      }
    } catch (error) {
      return resolveFailure(error, route?.options, { request, route: routeName })
    }
  }
}

/** A handler for a single route (any request path). */
export const createUploadRoute = (options: UploadRouteOptions & { readonly name?: string | undefined; readonly secret?: string | Redacted.Redacted<string> | undefined }): UploadHandler => {
  if (typeof options !== "object" || options === null) throw new TypeError("createUploadRoute: options must be an object")
  const { name, secret, ...route } = options
  return createUploadHandler({ routes: { [name ?? "default"]: route }, ...(secret === undefined ? {} : { secret }) })
}
