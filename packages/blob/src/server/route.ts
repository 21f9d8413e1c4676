/**
 * Upload routes: a route definition served as a plain `(request: Request) => Promise<Response>` handler,
 * usable from any Node or web framework (and from an effect `HttpRouter` through
 * `HttpServerRequest.toWeb` / `HttpServerResponse.fromWeb`).
 *
 * Protocol (see `shared/protocol.ts`): `begin` runs `onBeforeUpload`, checks type and size, and answers a
 * presigned PUT (one URL, or one per part for large files; content type and length are signed) plus a
 * completion token — HMAC-SHA256 over route, path, size, content type, upload id and expiry.
 * `complete` verifies the token (`forbidden` when invalid, for another route, or expired), completes a
 * multipart upload, checks the stored object (missing -> `not_found`; other size or type ->
 * `signature_mismatch`; leading bytes contradicting the type -> `content_type_not_allowed`; the object is
 * deleted in those cases), then runs `onUploadComplete` (a throw deletes the object first, then the
 * error is answered). `resume` re-signs an upload already begun from its token alone (expired URLs; a
 * multipart upload picked up again, with the parts storage holds listed by ListParts) and answers a new
 * token with the same claims.
 *
 * Failures resolve in the spec's order: `onError` first (a Response it returns is the answer, a BlobError
 * is answered as JSON); else a thrown BlobError as itself; else an application error with a `status` (or
 * `statusCode`) from 400 to 599 by the status table (other statuses: `request_failed` keeping the status);
 * anything else is rethrown unchanged (an application bug).
 *
 * @module
 */
import { Effect, Redacted, Schema } from "effect"
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { BlobError, type BlobErrorCode } from "../shared/BlobError.ts"
import { checkContentTypePatterns, contentTypeRefusal, essence, SNIFF_BYTES, sniffRefusal } from "../shared/contentTypes.ts"
import { pathProblem } from "../shared/paths.ts"
import {
  type BeginUploadRequest,
  type BeginUploadResponse,
  type CompleteUploadRequest,
  type CompleteUploadResponse,
  type LandedPartInfo,
  type ResumeUploadRequest,
  type ResumeUploadResponse,
  UploadRequest
} from "../shared/protocol.ts"
import { formatBytes, parseOptionalSize, type SizeInput } from "../shared/size.ts"
import type { BucketApi, PromiseBucket } from "./Bucket.ts"

export interface BeforeUploadArgs {
  readonly request: Request
  /** the path the client asked for */
  readonly pathname: string
  readonly contentType: string
  readonly size: number
  readonly clientPayload: string | null
  readonly route: string
}

/** What onBeforeUpload may decide (every field optional); `false` refuses the upload (unauthorized). */
export interface BeforeUploadResult {
  /** store under this path instead of the requested one */
  readonly path?: string | undefined
  /** narrows the route's contentTypes */
  readonly contentTypes?: ReadonlyArray<string> | undefined
  readonly maxSize?: SizeInput | undefined
  readonly allowOverwrite?: boolean | undefined
  /** carried (signed) in the completion token and handed to onUploadComplete */
  readonly tokenPayload?: string | undefined
}

export interface UploadCompleteArgs {
  readonly request: Request
  readonly route: string
  readonly path: string
  readonly size: number
  readonly contentType: string
  readonly etag: string
  readonly tokenPayload: string | undefined
}

type MaybePromise<A> = A | Promise<A>

export interface UploadRouteOptions {
  readonly bucket: BucketApi | PromiseBucket
  /** required: the application's own check */
  readonly onBeforeUpload: (args: BeforeUploadArgs) => MaybePromise<BeforeUploadResult | boolean | void>
  readonly contentTypes?: ReadonlyArray<string> | undefined
  readonly maxSize?: SizeInput | undefined
  readonly allowOverwrite?: boolean | undefined
  readonly onUploadComplete?: ((args: UploadCompleteArgs) => MaybePromise<void>) | undefined
  readonly onError?:
    | ((error: unknown, args: { readonly request: Request; readonly route: string }) => MaybePromise<Response | BlobError | undefined | void>)
    | undefined
  /** presigned URLs and completion tokens live this long (seconds, default 3600) */
  readonly expiresIn?: number | undefined
  /** above this, the upload is multipart (default 64 MiB) */
  readonly multipartThreshold?: SizeInput | undefined
  /** part size of multipart uploads (default 8 MiB) */
  readonly partSize?: SizeInput | undefined
  /**
   * how long after its completion token expired an upload may still be resumed (re-signed), in seconds
   * (default 86400): a long or interrupted upload outlives its first URLs; the token still binds the
   * route, path, size, type and upload id, and complete only takes an unexpired token
   */
  readonly resumeWindow?: number | undefined
  /**
   * the largest upload request body (the begin/complete/resume JSON message) this route reads; more is
   * refused with `too_large` (413) without reading further: a declared Content-Length over it is refused
   * unread, a chunked body is read up to it. Default: 64 KiB, raised for a route whose multipart
   * uploads can have so many parts that their `complete` message needs more (128 bytes a part)
   */
  readonly maxBodySize?: SizeInput | undefined
}

export interface UploadHandlerOptions {
  readonly routes: Readonly<Record<string, UploadRouteOptions>>
  /** the default `maxBodySize` of every route (a route's own wins) */
  readonly maxBodySize?: SizeInput | undefined
  /**
   * the key completion tokens are signed with; default: random per process (tokens then only verify on
   * the instance that issued them: set one for several instances)
   */
  readonly secret?: string | Redacted.Redacted<string> | undefined
}

export type UploadHandler = (request: Request) => Promise<Response>

// --- completion token ----------------------------------------------------------------------------------

interface TokenClaims {
  readonly r: string
  readonly p: string
  readonly s: number
  readonly ct: string
  readonly e: number
  readonly o: boolean
  readonly u?: string
  /** multipart: the part size the parts were planned with */
  readonly ps?: number
  readonly tp?: string
}

const b64url = (bytes: Uint8Array | string) => Buffer.from(bytes).toString("base64url")

export const signCompletionToken = (secret: Uint8Array, claims: TokenClaims): string => {
  const payload = b64url(JSON.stringify(claims))
  const signature = createHmac("sha256", secret).update(`v1.${payload}`).digest("base64url")
  return `v1.${payload}.${signature}`
}

const forbidden = (message: string) =>
  new BlobError("forbidden", { message, hint: "Begin the upload again" })

/** `grace`: milliseconds past its expiry a token is still accepted (resume only). */
export const verifyCompletionToken = (
  secret: Uint8Array,
  token: string,
  route: string,
  now: number,
  grace = 0
): TokenClaims | BlobError => {
  const [version, payload, signature] = token.split(".")
  if (version !== "v1" || payload === undefined || signature === undefined || token.split(".").length !== 3) {
    return forbidden("The completion token is not valid")
  }
  const expected = createHmac("sha256", secret).update(`v1.${payload}`).digest()
  const given = Buffer.from(signature, "base64url")
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return forbidden("The completion token is not valid")
  let claims: TokenClaims
  try {
    claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as TokenClaims
  } catch {
    return forbidden("The completion token is not valid")
  }
  if (claims.r !== route) return forbidden("The completion token is for another upload route")
  if (claims.e + grace <= now) return forbidden("The completion token has expired")
  return claims
}

// --- failure resolution ----------------------------------------------------------------------------------

const STATUS_CODES: Readonly<Record<number, BlobErrorCode>> = {
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  409: "conflict",
  411: "length_required",
  413: "too_large",
  429: "rate_limited"
}

/** The error's JSON at its own status (with Retry-After when retryAfter is set). */
export const errorResponse = (error: BlobError): Response =>
  new Response(JSON.stringify(error.toJSON()), {
    status: error.status,
    headers: {
      "content-type": "application/json",
      "cache-control": "no-store",
      ...(error.retryAfter === undefined ? {} : { "retry-after": String(Math.ceil(error.retryAfter)) })
    }
  })

const statusOf = (error: unknown): number | undefined => {
  if (typeof error !== "object" || error === null) return undefined
  const e = error as { status?: unknown; statusCode?: unknown }
  const status = typeof e.status === "number" ? e.status : typeof e.statusCode === "number" ? e.statusCode : undefined
  return status !== undefined && Number.isInteger(status) ? status : undefined
}

/** Steps 2-4 of the resolution order: BlobError as itself, a status mapped by the table, else undefined. */
export const toBlobError = (error: unknown): BlobError | undefined => {
  if (BlobError.is(error)) return error
  const status = statusOf(error)
  if (status === undefined || status < 400 || status > 599) return undefined
  const code = STATUS_CODES[status] ?? "request_failed"
  const message = error instanceof Error && error.message.trim() !== "" ? error.message : undefined
  return new BlobError(code, {
    message,
    ...(code === "request_failed" ? { status } : {}),
    cause: error
  })
}

const resolveFailure = async (
  error: unknown,
  route: UploadRouteOptions | undefined,
  args: { readonly request: Request; readonly route: string }
): Promise<Response> => {
  if (route?.onError !== undefined) {
    const answer = await route.onError(error, args)
    if (answer instanceof Response) return answer
    if (BlobError.is(answer)) return errorResponse(answer)
  }
  const blobError = toBlobError(error)
  if (blobError !== undefined) return errorResponse(blobError)
  throw error
}

// --- the handler -----------------------------------------------------------------------------------------

const effectBucket = (bucket: BucketApi | PromiseBucket): BucketApi => "effect" in bucket ? bucket.effect : bucket

const run = <A>(effect: Effect.Effect<A, BlobError>) => Effect.runPromise(effect)

const decodeRequest = Schema.decodeUnknownEffect(UploadRequest)

interface PreparedRoute {
  readonly name: string
  readonly options: UploadRouteOptions
  readonly bucket: BucketApi
  readonly contentTypes: ReadonlyArray<string> | undefined
  readonly maxSize: number | undefined
  readonly expiresIn: number
  readonly multipartThreshold: number
  readonly partSize: number | undefined
  readonly resumeWindow: number
  readonly maxBodySize: number
}

/** The default cap on an upload request body: begin, complete and resume messages are small JSON. */
export const DEFAULT_MAX_BODY_SIZE = 64 * 1024
/** Room for one part of a multipart `complete` message (`{"partNumber":10000,"etag":"\"…32 hex…\""}`, with margin). */
const BYTES_PER_PART = 128
const MiB = 1024 * 1024

/**
 * The default body cap of a route: 64 KiB, or more when its largest multipart upload (at most 10,000
 * parts, S3's limit; parts at least 5 MiB, or the route's part size) completes with a longer message.
 */
const defaultMaxBodySize = (maxSize: number | undefined, partSize: number | undefined): number => {
  const parts = maxSize === undefined ? 10_000 : Math.min(10_000, Math.ceil(maxSize / Math.max(partSize ?? 5 * MiB, 5 * MiB)))
  return Math.max(DEFAULT_MAX_BODY_SIZE, 4 * 1024 + parts * BYTES_PER_PART)
}

const prepareRoute = (name: string, options: UploadRouteOptions, handlerMaxBodySize?: number): PreparedRoute => {
  if (typeof options !== "object" || options === null) throw new TypeError(`upload route ${name}: options must be an object`)
  if (typeof options.onBeforeUpload !== "function") {
    throw new TypeError(`upload route ${name}: onBeforeUpload is required (the application's own check)`)
  }
  if (options.bucket === undefined) throw new TypeError(`upload route ${name}: bucket is required`)
  let contentTypes: ReadonlyArray<string> | undefined
  if (options.contentTypes !== undefined) {
    const checked = checkContentTypePatterns(options.contentTypes)
    if (BlobError.is(checked)) throw checked
    contentTypes = checked
  }
  const expiresIn = options.expiresIn ?? 3600
  if (!Number.isFinite(expiresIn) || expiresIn <= 0) throw new TypeError(`upload route ${name}: expiresIn must be seconds > 0`)
  const resumeWindow = options.resumeWindow ?? 86_400
  if (!Number.isFinite(resumeWindow) || resumeWindow < 0) throw new TypeError(`upload route ${name}: resumeWindow must be seconds >= 0`)
  const maxSize = parseOptionalSize(options.maxSize, "maxSize")
  const partSize = parseOptionalSize(options.partSize, "partSize")
  const maxBodySize = parseOptionalSize(options.maxBodySize, "maxBodySize") ?? handlerMaxBodySize ??
    defaultMaxBodySize(maxSize, partSize)
  if (maxBodySize < 1024) throw new TypeError(`upload route ${name}: maxBodySize must be at least 1 KiB`)
  return {
    name,
    options,
    bucket: effectBucket(options.bucket),
    contentTypes,
    maxSize,
    expiresIn,
    multipartThreshold: parseOptionalSize(options.multipartThreshold, "multipartThreshold") ?? 64 * 1024 * 1024,
    partSize,
    resumeWindow,
    maxBodySize
  }
}

const bodyTooLarge = (limit: number) =>
  new BlobError("too_large", {
    message: `The upload request is larger than ${formatBytes(limit)}`,
    hint: "Upload requests are small JSON messages; the file itself goes straight to storage"
  })

/**
 * The request's body as text, refusing (`too_large`) a body over `limit` bytes without reading past it:
 * a declared Content-Length over the limit is refused unread, a chunked body is cut off (its stream
 * cancelled) as soon as it goes over.
 */
export const readCappedBody = async (request: Request, limit: number): Promise<string> => {
  const declared = request.headers.get("content-length")
  if (declared !== null && /^\s*\d+\s*$/.test(declared) && Number(declared) > limit) {
    await request.body?.cancel().catch(() => undefined)
    throw bodyTooLarge(limit)
  }
  if (request.body === null) return ""
  const reader = request.body.getReader()
  const chunks: Array<Uint8Array> = []
  let total = 0
  while (true) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.length
    if (total > limit) {
      await reader.cancel().catch(() => undefined)
      throw bodyTooLarge(limit)
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks, total).toString("utf8")
}

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

  const begin = async (route: PreparedRoute, request: Request, body: BeginUploadRequest): Promise<Response> => {
    const problem = pathProblem(body.pathname)
    if (problem !== undefined) throw new BlobError("invalid_input", { message: `Invalid path: ${problem}` })
    if (body.size === 0) throw new BlobError("empty_body", { message: "The file is empty" })
    const decided = await route.options.onBeforeUpload({
      request,
      pathname: body.pathname,
      contentType: body.contentType,
      size: body.size,
      clientPayload: body.clientPayload ?? null,
      route: route.name
    })
    if (decided === false) throw new BlobError("unauthorized", { message: "The upload was refused" })
    const result: BeforeUploadResult = typeof decided === "object" && decided !== null ? decided : {}
    const path = result.path ?? body.pathname
    const pathCheck = pathProblem(path)
    if (pathCheck !== undefined) throw new BlobError("invalid_input", { message: `Invalid path: ${pathCheck}` })
    let contentTypes = route.contentTypes
    if (result.contentTypes !== undefined) {
      const checked = checkContentTypePatterns(result.contentTypes)
      if (BlobError.is(checked)) throw checked
      contentTypes = checked
    }
    const refusal = contentTypeRefusal(body.contentType, contentTypes)
    if (refusal !== undefined) throw refusal
    const maxSize = parseOptionalSize(result.maxSize, "maxSize") ?? route.maxSize
    if (maxSize !== undefined && body.size > maxSize) {
      throw new BlobError("too_large", {
        message: `The file is ${formatBytes(body.size)}, over the limit of ${formatBytes(maxSize)}`
      })
    }
    const allowOverwrite = result.allowOverwrite ?? route.options.allowOverwrite ?? false
    const now = Date.now()
    if (body.size > route.multipartThreshold) {
      const multipart = await run(route.bucket.signedMultipartUpload(path, {
        contentType: body.contentType,
        size: body.size,
        expiresIn: route.expiresIn,
        allowOverwrite,
        ...(route.partSize === undefined ? {} : { partSize: route.partSize })
      }))
      const completionToken = signCompletionToken(secret, {
        r: route.name,
        p: path,
        s: body.size,
        ct: body.contentType,
        e: Math.min(multipart.expiresAt, now + route.expiresIn * 1000),
        o: allowOverwrite,
        u: multipart.uploadId,
        ps: multipart.partSize,
        ...(result.tokenPayload === undefined ? {} : { tp: result.tokenPayload })
      })
      return Response.json({
        type: "begin",
        path,
        method: "PUT",
        headers: multipart.headers,
        expiresAt: multipart.expiresAt,
        completionToken,
        multipart: { uploadId: multipart.uploadId, partSize: multipart.partSize, parts: multipart.parts }
      } satisfies BeginUploadResponse)
    }
    const signed = await run(route.bucket.signedUploadUrl(path, {
      contentType: body.contentType,
      size: body.size,
      expiresIn: route.expiresIn,
      allowOverwrite
    }))
    const completionToken = signCompletionToken(secret, {
      r: route.name,
      p: path,
      s: body.size,
      ct: body.contentType,
      e: signed.expiresAt,
      o: allowOverwrite,
      ...(result.tokenPayload === undefined ? {} : { tp: result.tokenPayload })
    })
    return Response.json({
      type: "begin",
      path,
      method: "PUT",
      url: signed.url,
      headers: signed.headers,
      expiresAt: signed.expiresAt,
      completionToken
    } satisfies BeginUploadResponse)
  }

  const complete = async (route: PreparedRoute, request: Request, body: CompleteUploadRequest): Promise<Response> => {
    const claims = verifyCompletionToken(secret, body.completionToken, route.name, Date.now())
    if (BlobError.is(claims)) throw claims
    const bucket = route.bucket
    if (claims.u !== undefined) {
      if (body.parts === undefined || body.parts.length === 0) {
        throw new BlobError("invalid_input", { message: "A multipart upload completes with its parts' etags" })
      }
      await run(bucket.completeMultipartUpload(claims.p, claims.u, body.parts, { allowOverwrite: claims.o }))
    }
    const stored = await run(bucket.info(claims.p)).catch((error: unknown) => {
      if (BlobError.is(error, "not_found")) {
        throw new BlobError("not_found", { message: `The upload to ${claims.p} never arrived`, cause: error })
      }
      throw error
    })
    const discard = () => run(bucket.del(claims.p)).catch(() => undefined)
    if (stored.size !== claims.s || essence(stored.contentType) !== essence(claims.ct)) {
      await discard()
      throw new BlobError("signature_mismatch", {
        message: stored.size !== claims.s
          ? `Stored ${stored.size} bytes, but the upload declared ${claims.s}`
          : `Stored as ${essence(stored.contentType)}, but the upload declared ${essence(claims.ct)}`
      })
    }
    const leading = await readLeading(bucket, claims.p)
    const refusal = leading === undefined ? undefined : sniffRefusal(claims.ct, leading)
    if (refusal !== undefined) {
      await discard()
      throw refusal
    }
    if (route.options.onUploadComplete !== undefined) {
      try {
        await route.options.onUploadComplete({
          request,
          route: route.name,
          path: claims.p,
          size: stored.size,
          contentType: stored.contentType,
          etag: stored.etag,
          tokenPayload: claims.tp
        })
      } catch (error) {
        await discard()
        throw error
      }
    }
    return Response.json({
      type: "complete",
      path: claims.p,
      size: stored.size,
      contentType: stored.contentType,
      etag: stored.etag
    } satisfies CompleteUploadResponse)
  }

  /**
   * Fresh URLs for an upload already begun: the token (signed, for this route, expired less than
   * resumeWindow ago) fixes path, size, type, overwrite flag and upload id, so nothing else is authorized.
   */
  const resume = async (route: PreparedRoute, body: ResumeUploadRequest): Promise<Response> => {
    const now = Date.now()
    const claims = verifyCompletionToken(secret, body.completionToken, route.name, now, route.resumeWindow * 1000)
    if (BlobError.is(claims)) throw claims
    const bucket = route.bucket
    if (claims.u === undefined) {
      const signed = await run(bucket.signedUploadUrl(claims.p, {
        contentType: claims.ct,
        size: claims.s,
        expiresIn: route.expiresIn,
        allowOverwrite: claims.o
      }))
      return Response.json({
        type: "resume",
        path: claims.p,
        method: "PUT",
        url: signed.url,
        headers: signed.headers,
        expiresAt: signed.expiresAt,
        completionToken: signCompletionToken(secret, { ...claims, e: signed.expiresAt })
      } satisfies ResumeUploadResponse)
    }
    const partSize = claims.ps
    if (partSize === undefined) throw forbidden("The completion token cannot resume this upload")
    const count = Math.max(1, Math.ceil(claims.s / partSize))
    const plannedSize = (partNumber: number) => partNumber < count ? partSize : claims.s - partSize * (count - 1)
    let wanted: ReadonlyArray<number>
    let landed: ReadonlyArray<LandedPartInfo> | undefined
    if (body.parts !== undefined) {
      const outside = body.parts.find((n) => n > count)
      if (outside !== undefined) throw new BlobError("invalid_input", { message: `This upload has ${count} parts, not part ${outside}` })
      wanted = [...new Set(body.parts)]
    } else {
      // what storage holds is the truth (a part the page remembers may never have landed): ListParts,
      // keeping only parts of the planned size (a part cut short is sent again)
      const held = await run(bucket.listParts(claims.p, claims.u))
      landed = held.filter((part) => part.partNumber <= count && part.size === plannedSize(part.partNumber))
      const done = new Set(landed.map((part) => part.partNumber))
      wanted = Array.from({ length: count }, (_, i) => i + 1).filter((n) => !done.has(n))
    }
    const signed = await run(bucket.signedUploadParts(claims.p, claims.u, wanted.map((partNumber) => ({ partNumber, size: plannedSize(partNumber) })), {
      expiresIn: route.expiresIn
    }))
    const expiresAt = Math.min(signed.expiresAt, now + route.expiresIn * 1000)
    return Response.json({
      type: "resume",
      path: claims.p,
      method: "PUT",
      headers: {},
      expiresAt,
      completionToken: signCompletionToken(secret, { ...claims, e: expiresAt }),
      multipart: {
        uploadId: claims.u,
        partSize,
        parts: signed.parts,
        ...(landed === undefined ? {} : { landed })
      }
    } satisfies ResumeUploadResponse)
  }

  return async (request: Request): Promise<Response> => {
    let route: PreparedRoute | undefined
    let routeName = ""
    try {
      if (request.method !== "POST") {
        throw new BlobError("invalid_input", { message: `Upload routes take POST, not ${request.method}` })
      }
      const pathRoute = routeOfPath(request)
      if (pathRoute !== undefined) routeName = pathRoute.name
      const limit = pathRoute?.maxBodySize ?? largestMaxBodySize
      const text = await readCappedBody(request, limit).catch((error: unknown) => {
        // the route the path names answers (its onError first); otherwise none is known yet
        route = pathRoute
        throw error
      })
      let json: unknown
      try {
        json = JSON.parse(text)
      } catch {
        throw new BlobError("invalid_input", { message: "The upload request body is not JSON" })
      }
      const decoded = await Effect.runPromise(Effect.result(decodeRequest(json)))
      if (decoded._tag === "Failure") {
        throw new BlobError("invalid_input", {
          message: "Malformed upload request",
          hint: "Send { type: \"begin\", pathname, contentType, size }, { type: \"complete\", completionToken } or { type: \"resume\", completionToken }",
          cause: decoded.failure
        })
      }
      const body = decoded.success
      routeName = body.route ?? pathSegmentName(request)
      route = routes.get(routeName) ?? (routes.size === 1 && body.route === undefined ? routes.values().next().value : undefined)
      if (route === undefined) throw new BlobError("not_found", { message: `No upload route ${JSON.stringify(routeName)}` })
      routeName = route.name
      // read with the largest cap (the route was in the body): held to the route's own now
      if (Buffer.byteLength(text) > route.maxBodySize) throw bodyTooLarge(route.maxBodySize)
      switch (body.type) {
        case "begin":
          return await begin(route, request, body)
        case "complete":
          return await complete(route, request, body)
        case "resume":
          return await resume(route, body)
      }
    } catch (error) {
      return resolveFailure(error, route?.options, { request, route: routeName })
    }
  }
}

/** The last segment of the request path, decoded ("" when there is none or it cannot be decoded). */
const pathSegmentName = (request: Request): string => {
  const last = new URL(request.url).pathname.split("/").filter((s) => s !== "").pop() ?? ""
  try {
    return decodeURIComponent(last)
  } catch {
    return last
  }
}

/** A handler for a single route (any request path). */
export const createUploadRoute = (options: UploadRouteOptions & { readonly name?: string | undefined; readonly secret?: string | Redacted.Redacted<string> | undefined }): UploadHandler => {
  if (typeof options !== "object" || options === null) throw new TypeError("createUploadRoute: options must be an object")
  const { name, secret, ...route } = options
  return createUploadHandler({ routes: { [name ?? "default"]: route }, ...(secret === undefined ? {} : { secret }) })
}

/** Reads the first bytes of a stored object (for sniffing); undefined when it cannot. */
const readLeading = async (bucket: BucketApi, path: string): Promise<Uint8Array | undefined> => {
  try {
    const got = await run(bucket.get(path))
    const reader = got.body.getReader()
    const chunks: Array<Uint8Array> = []
    let total = 0
    while (total < SNIFF_BYTES) {
      const { done, value } = await reader.read()
      if (done) break
      chunks.push(value)
      total += value.length
    }
    await reader.cancel().catch(() => undefined)
    const out = new Uint8Array(total)
    let offset = 0
    for (const c of chunks) {
      out.set(c, offset)
      offset += c.length
    }
    return out.subarray(0, SNIFF_BYTES)
  } catch {
    return undefined
  }
}

/**
 * Serves a handler on a `node:http` server: `createServer(toNodeListener(handler))`. The body is handed
 * to the handler as a stream, so the handler's cap (`maxBodySize`) holds here too: once the handler stops
 * reading (a body over the cap), nothing more is read, and the answer closes the connection.
 */
export const toNodeListener = (handler: UploadHandler) =>
(
  req: import("node:http").IncomingMessage,
  res: import("node:http").ServerResponse
): void => {
  let ended = false
  req.on("end", () => {
    ended = true
  })
  req.on("error", () => res.destroy())
  const headers = new Headers()
  for (const [key, value] of Object.entries(req.headers)) {
    if (value === undefined) continue
    for (const v of Array.isArray(value) ? value : [value]) headers.append(key, v)
  }
  const method = req.method ?? "GET"
  const body = method === "GET" || method === "HEAD" ? undefined : new ReadableStream<Uint8Array>({
    start(controller) {
      req.on("data", (chunk: Buffer) => {
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length))
        if ((controller.desiredSize ?? 1) <= 0) req.pause()
      })
      req.on("end", () => controller.close())
      req.on("error", (error) => controller.error(error))
      req.pause()
    },
    pull() {
      req.resume()
    },
    cancel() {
      // the handler has read enough (a body over its cap): stop reading; the answer closes the connection
      req.pause()
      req.removeAllListeners("data")
    }
  })
  let request: Request
  try {
    request = new Request(`http://${req.headers.host ?? "localhost"}${req.url ?? "/"}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body, duplex: "half" } as RequestInit)
    })
  } catch {
    res.writeHead(400, { "content-type": "application/json", connection: "close" })
    res.end(JSON.stringify({ code: "invalid_input", status: 400, message: "The request could not be read" }))
    return
  }
  handler(request).then(
    async (response) => {
      const answer = Buffer.from(await response.arrayBuffer())
      const responseHeaders: Record<string, string> = Object.fromEntries(response.headers)
      // a body left unread is not read now: the connection ends with this answer
      if (!ended && body !== undefined) responseHeaders["connection"] = "close"
      res.writeHead(response.status, responseHeaders)
      res.end(answer)
    },
    () => {
      // an application bug (rethrown by the handler): a bare 500, details stay in the server's logs
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json", ...(ended ? {} : { connection: "close" }) })
      res.end(JSON.stringify({ code: "internal_error", message: "Internal error" }))
    }
  )
}
