/**
 * The uploads demo (`svc start uploads`): a React page (drop zone, per-file progress, cancel, the error's
 * message, which carries its hint) and the upload route behind it, storing into a bucket of the local radosgw.
 *
 * - `GET /` the page, `GET /app.js` its bundle (esbuild, built in memory when the layer starts),
 *   `POST /api/upload/:route` the upload route (`files`: content-type allowlist, size cap, multipart above
 *   16 MiB so big files show part progress and can be resumed), `GET /ready` (the bucket answers).
 * - The bucket gets CORS rules for the page's origins (`http://localhost:<port>` and
 *   `http://127.0.0.1:<port>`, plus `UPLOADS_ORIGINS`), so the browser may PUT to it directly.
 *
 * `layer` reads its configuration and starts the local object storage itself (in
 * `<OBJECT_STORAGE_DIR>/uploads`); `make(options)` serves a given bucket (the tests use it).
 *
 * | variable | default |
 * | --- | --- |
 * | `UPLOADS_PORT` | 8791 |
 * | `UPLOADS_BUCKET` | `uploads` |
 * | `UPLOADS_MAX_SIZE` | `1GB` |
 * | `UPLOADS_CONTENT_TYPES` | `image/*,video/*,audio/*,text/plain,application/pdf,application/octet-stream` (SVG refused: `image/*` does not admit it) |
 * | `UPLOADS_ORIGINS` | (none) more page origins allowed to PUT, comma-separated |
 * | `UPLOAD_TOKEN_SECRET` | random per process: signs completion tokens |
 *
 * @module
 */
import { LocalObjectStorage, Readiness, serve, Settings } from "@svc/platform"
import { Config, Effect, Exit, Layer, Option, Redacted, Schema } from "effect"
import { HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import { randomBytes } from "node:crypto"
import * as NodePath from "node:path"
import { Bucket, type BucketApi } from "../server/Bucket.ts"
import { createUploadHandler, errorResponse } from "../server/route.ts"
import { formatBlobToken } from "../server/token.ts"
import { BlobError } from "../shared/BlobError.ts"
import { checkContentTypePatterns } from "../shared/contentTypes.ts"
import { parseSize, type SizeInput } from "../shared/size.ts"
import { bundle, pageEntry } from "./bundle.ts"

export interface DemoOptions {
  readonly bucket: BucketApi
  /** 0 picks a free port (read it from `HttpServer.HttpServer`) */
  readonly port: number
  readonly host?: string | undefined
  readonly contentTypes?: ReadonlyArray<string> | undefined
  readonly maxSize?: SizeInput | undefined
  /**
   * CORS origins set on the bucket; default: the page's own (localhost and 127.0.0.1 at the bound port)
   * plus `extraOrigins`. `false` leaves the bucket's CORS rules alone.
   */
  readonly corsOrigins?: ReadonlyArray<string> | false | undefined
  readonly extraOrigins?: ReadonlyArray<string> | undefined
  readonly secret?: string | Redacted.Redacted<string> | undefined
}

export const DEFAULT_CONTENT_TYPES = ["image/*", "video/*", "audio/*", "text/plain", "application/pdf", "application/octet-stream"]

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Uploads</title>
<style>
  body { font: 15px/1.4 system-ui, sans-serif; margin: 2rem auto; max-width: 46rem; padding: 0 1rem; }
  .dropzone { border: 2px dashed #888; border-radius: 8px; padding: 2rem; text-align: center; }
  .dropzone.over { border-color: #06c; background: #eef5ff; }
  .uploads { list-style: none; padding: 0; }
  .upload { padding: .6rem 0; border-bottom: 1px solid #ddd; }
  .upload progress { width: 12rem; vertical-align: middle; }
  .status { color: #555; }
  .error { color: #a00; margin-top: .3rem; }
  .path { font-family: monospace; color: #060; }
</style>
</head>
<body>
<div id="root"></div>
<script type="module" src="/app.js"></script>
</body>
</html>
`

/**
 * The longest stored file name: the local radosgw refuses a multipart upload's create for an object
 * name over 366 bytes (a put over 416: blob README, design decisions), and the demo always writes there.
 * A name of 346 to 1,003 characters under `uploads/<12 hex>/` passed the path rule (S3's 1,024 bytes) and
 * a large file's begin was a 502 from storage (an outside sweep); the name is cut, keeping its extension
 * (a longer one, refused 400 by the path rule, is now cut too).
 */
const MAX_STORED_NAME = 200

/** Storage paths: one folder per upload, so two files of the same name never meet. */
const storedPath = (pathname: string) => {
  const safe = pathname.split("/").pop()!.replace(/[^\w.\- ()]+/g, "_")
  const name = safe === "" || safe === "." || safe === ".." ? "file" : safe
  return `uploads/${randomBytes(6).toString("hex")}/${shortened(name)}`
}

/** `name` cut to {@link MAX_STORED_NAME} characters (ASCII here), its extension (up to 20 characters) kept. */
const shortened = (name: string) => {
  if (name.length <= MAX_STORED_NAME) return name
  const dot = name.lastIndexOf(".")
  const extension = dot > 0 && name.length - dot <= 20 ? name.slice(dot) : ""
  return name.slice(0, MAX_STORED_NAME - extension.length) + extension
}

/** The page, its bundle and the upload route, as router layers. */
export const routes = (options: Omit<DemoOptions, "port" | "host" | "corsOrigins" | "extraOrigins">) =>
  Layer.unwrap(Effect.gen(function*() {
    const app = yield* Effect.promise(() => bundle(pageEntry))
    const handler = createUploadHandler({
      ...(options.secret === undefined ? {} : { secret: options.secret }),
      routes: {
        files: {
          bucket: options.bucket,
          contentTypes: options.contentTypes ?? DEFAULT_CONTENT_TYPES,
          maxSize: options.maxSize ?? "1GB",
          multipartThreshold: "16MB",
          onBeforeUpload: ({ pathname }) => ({ path: storedPath(pathname) })
        }
      }
    })
    const page = HttpRouter.add("GET", "/", HttpServerResponse.html(PAGE))
    const script = HttpRouter.add(
      "GET",
      "/app.js",
      HttpServerResponse.text(app.code, { contentType: "text/javascript; charset=utf-8", headers: { "cache-control": "no-cache" } })
    )
    const upload = HttpRouter.add(
      // Every method reaches the route, which answers any but POST with its own BlobError JSON
      // (400 invalid_input), as it answers every refusal (spec 3B); the router's 405 is not of that model.
      "*",
      "/api/upload/:route",
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        // A request no Fetch `Request` can carry (a Host with a user, `user@host`; the TRACE method,
        // which undici refuses) is refused as the route refuses input: it was a 500
        // (a throw in `new Request`: a defect, not a failure)
        const web = yield* Effect.exit(HttpServerRequest.toWeb(request))
        if (Exit.isFailure(web)) {
          return HttpServerResponse.fromWeb(errorResponse(
            new BlobError("invalid_input", {
              message: request.method === "POST"
                ? "The request cannot be read: its Host header is not a host name and port"
                : `Upload routes take POST, not ${request.method}`
            })
          ))
        }
        // the handler answers every refusal itself; a rejection is an application bug (a 500)
        const response = yield* Effect.promise(() => handler(web.value))
        return HttpServerResponse.fromWeb(response)
      })
    )
    return Layer.mergeAll(page, script, upload)
  }))

/** Sets the bucket's CORS rules for the page's origin(s), once the server knows its port. */
const corsForPage = (options: DemoOptions) =>
  Layer.effectDiscard(Effect.gen(function*() {
    if (options.corsOrigins === false) return
    const server = yield* HttpServer.HttpServer
    const port = server.address._tag === "UnixPathAddress" ? options.port : server.address.port
    const origins = options.corsOrigins ?? [`http://localhost:${port}`, `http://127.0.0.1:${port}`, ...(options.extraOrigins ?? [])]
    yield* options.bucket.configureCors({ origins })
    yield* Effect.logInfo(`Uploads demo: open http://localhost:${port}/ (bucket ${options.bucket.name}, CORS for ${origins.join(", ")})`)
  }))

/** `GET /ready`: the bucket answers (a path no upload has; found or not, the store answered). */
const readyRoute = (bucket: BucketApi) =>
  Readiness.route(Effect.succeed([{ name: "objectStorage", probe: bucket.exists("svc-readiness-probe") }]))

/** The demo on a given bucket. */
export const make = (options: DemoOptions) =>
  corsForPage(options).pipe(
    Layer.provideMerge(serve(Layer.merge(routes(options), readyRoute(options.bucket)), {
      name: "uploads",
      port: options.port,
      portVariable: "UPLOADS_PORT",
      ...(options.host === undefined ? {} : { host: options.host })
    }))
  )

export const Port = Config.Port("UPLOADS_PORT").pipe(Config.withDefault(8791))

const list = (text: string) => text.split(",").map((s) => s.trim()).filter((s) => s !== "")

/**
 * Local object storage for the life of the layer in its own folder (`<OBJECT_STORAGE_DIR>/uploads`,
 * default `.data/object-storage/uploads`: never a data directory another local store uses, as the
 * listings service does with `.../listings`).
 */
const localStorage = Layer.unwrap(Effect.gen(function*() {
  const root = yield* Settings.ObjectStorageDir
  const backend = yield* Settings.ObjectStorageBackendSetting
  return LocalObjectStorage.layerAt({ dir: NodePath.join(root, "uploads"), backend })
}))

/** A setting checked by `check` (a thrown TypeError's message is the reason), naming the variable when it fails. */
const checkedSetting = <A>(name: string, fallback: string, check: (value: string) => A) =>
  Config.withDefault(checked(name, check), check(fallback))

const checked = <A>(name: string, check: (value: string) => A) =>
  Config.schema(
    Schema.String.check(Schema.makeFilter((value) => {
      try {
        check(value)
        return true
      } catch (error) {
        return error instanceof Error ? error.message : String(error)
      }
    })),
    name
  ).pipe(Config.map(check))

/**
 * The demo's settings, checked before the object storage starts (seconds), so that a bad one stops the
 * start at once with the variable named.
 */
const UploadSettings = Config.all({
  port: Port,
  bucketName: Config.String("UPLOADS_BUCKET").pipe(Config.withDefault("uploads")),
  maxSize: checkedSetting("UPLOADS_MAX_SIZE", "1GB", (value) => {
    parseSize(value, "the size")
    return value
  }),
  contentTypes: checkedSetting("UPLOADS_CONTENT_TYPES", DEFAULT_CONTENT_TYPES.join(","), (value) => {
    const checked = checkContentTypePatterns(list(value))
    if (checked instanceof BlobError) throw new TypeError(checked.message)
    return checked
  }),
  extraOrigins: Config.String("UPLOADS_ORIGINS").pipe(Config.withDefault(""), Config.map(list)),
  // unset or empty: a random secret per process
  secret: Config.option(checked("UPLOAD_TOKEN_SECRET", (value) => {
    if (value.trim().length < 16) throw new TypeError("must be at least 16 characters")
    return Redacted.make(value)
  }))
})

/** `svc start uploads`: the demo on the local radosgw's `UPLOADS_BUCKET`, configured from the environment. */
export const layer: Layer.Layer<never, unknown> = Layer.unwrap(Effect.gen(function*() {
  const settings = yield* UploadSettings
  return Layer.unwrap(Effect.gen(function*() {
    const storage = yield* LocalObjectStorage
    yield* storage.createBucket(settings.bucketName)
    const token = formatBlobToken({
      endpoint: storage.endpoint,
      bucket: settings.bucketName,
      accessKeyId: storage.accessKeyId,
      secretAccessKey: Redacted.value(storage.secretAccessKey),
      region: storage.region
    })
    const bucket = yield* Bucket.make({ token })
    return make({
      bucket,
      port: settings.port,
      maxSize: settings.maxSize,
      contentTypes: settings.contentTypes,
      extraOrigins: settings.extraOrigins,
      ...(Option.isSome(settings.secret) ? { secret: settings.secret.value } : {})
    })
  })).pipe(Layer.provide(localStorage))
}))
