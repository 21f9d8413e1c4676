/**
 * Offer images: an object store for their bytes (`ImageStore`, on `@svc/blob`'s server `Bucket`), the
 * background cacher that fills it after ingest (`ImageCacher`), and the lookup GET /images/:key answers
 * from (`listings.images`).
 *
 * Caching rules: only URLs that came from a source feed (the rows ingest writes into
 * `listings.images`), never anything a client asks for; http(s) only; `IMAGE_CACHE_CONCURRENCY`
 * fetches at once (default 4); transient failures (network, timeout, 429, 5xx) retried with an
 * exponential `Schedule` (3 retries); at most `IMAGE_MAX_BYTES` (default 10 MiB) and only
 * image/jpeg, png, webp, gif or avif (the declared type, and the bucket's check of the leading bytes),
 * else the image is `rejected` for good; a failed image is tried again by later passes, 3 attempts in
 * all. The object key is the image key (hex SHA-256 of the URL). A pass claims images in batches (an
 * attempt counted, other processes skip them for a minute); stopped (SIGTERM), it gives back the ones
 * not done; a killed process's claims are taken again when their minute is up (the worker wakes then).
 *
 * Dimensions: the width and height the image's header declares (PNG IHDR, JPEG SOF0-2, GIF logical
 * screen, WebP VP8/VP8L/VP8X, AVIF `ispe`; read with `image-size`, nothing is decoded) must be at most
 * `IMAGE_MAX_SIDE` px a side (default 10,000) and `IMAGE_MAX_PIXELS` in all (default 40,000,000),
 * else the image is `rejected`: a few bytes can declare 2147483647 × 2147483647 px, a decompression
 * bomb for the app that decodes it. Bytes whose dimensions cannot be read, or whose format is not the
 * declared type, are `rejected` too (what cannot be measured is not served).
 *
 * Every download goes through the suite's outbound guard (the service's `HttpClient`, see
 * `Service.ts`): loopback, private, link-local and other internal addresses are refused on the address
 * connected to and on every redirect hop, unless `LISTINGS_ALLOW_PRIVATE=true`. A refused image is
 * `rejected` (never fetched again, GET /images redirects to the original). Images of mock sources
 * (demo URLs under `.example`) are registered, so GET /images redirects to them, but never fetched.
 */
import { Bucket, type BucketApi, formatBlobToken, parseBlobToken } from "@svc/blob"
import { NodeServices } from "@effect/platform-node"
import { LocalObjectStorage, type ObjectStorageError, OutboundGuard, Settings, startObjectStorage } from "@svc/platform"
import { CACHED_IMAGE_TYPES } from "@svc/schema"
import { Config, Context, Duration, Effect, Layer, Option, Queue, Redacted, Schedule, Schema, Stream } from "effect"
import { withoutQueries } from "./adapters/http.ts"
import { HttpClient, HttpClientRequest } from "effect/http"
import { SqlClient, SqlSchema } from "effect/sql"
import { imageSize } from "image-size"
import { createHash } from "node:crypto"
import * as NodePath from "node:path"
import { Sources } from "./Sources.ts"

export class ImageStoreError extends Schema.TaggedError<ImageStoreError>()("ImageStoreError", {
  message: Schema.String,
  /** the store refused the bytes for good (over the size limit, or not the image type they claim) */
  refused: Schema.optionalKey(Schema.Boolean)
}) {}

export interface StoredImage {
  readonly body: Stream.Stream<Uint8Array, ImageStoreError>
  readonly contentLength: number | undefined
}

/** The types stored (the OpenAPI document names them as GET /images/{key}'s content types). */
export const allowedTypes: ReadonlySet<string> = new Set(CACHED_IMAGE_TYPES)

export class ImageStore extends Context.Service<ImageStore, {
  /** false: no object storage configured (OFFER_IMAGES_STORAGE=off): nothing is cached. */
  readonly enabled: boolean
  readonly put: (key: string, body: Uint8Array, contentType: string) => Effect.Effect<void, ImageStoreError>
  readonly get: (key: string) => Effect.Effect<Option.Option<StoredImage>, ImageStoreError>
  /** Succeeds when the store answers (`GET /ready`'s `objectStorage`); absent when there is nothing to probe. */
  readonly probe?: Effect.Effect<void, ImageStoreError> | undefined
}>()("@svc/listings/ImageStore") {
  static readonly layerDisabled = Layer.succeed(
    ImageStore,
    ImageStore.of({
      enabled: false,
      put: () => Effect.fail(new ImageStoreError({ message: "image storage is off" })),
      get: () => Effect.succeed(Option.none())
    })
  )

  /**
   * The store on a `Bucket`: objects are written with their content type (only allowed image types,
   * leading bytes checked by the bucket), overwriting (same key = same URL), and read as a stream.
   */
  static readonly fromBucket = (bucket: BucketApi): ImageStore["Service"] =>
    ImageStore.of({
      enabled: true,
      // a key no image has (image keys are hex): found or not, the store answered
      probe: bucket.exists("svc-readiness-probe").pipe(
        Effect.asVoid,
        Effect.mapError((error) => new ImageStoreError({ message: `probing the image store: ${error.message}` }))
      ),
      put: (key, body, contentType) =>
        bucket.put(key, body, {
          contentType,
          contentTypes: [...allowedTypes],
          allowOverwrite: true,
          cacheControl: "public, max-age=86400"
        }).pipe(
          Effect.asVoid,
          Effect.mapError((error) =>
            new ImageStoreError({
              message: `storing image ${key}: ${error.message}`,
              refused: error.code === "content_type_not_allowed" || error.code === "too_large"
            })
          )
        ),
      get: (key) =>
        bucket.get(key).pipe(
          Effect.map((object) =>
            Option.some<StoredImage>({
              contentLength: object.size,
              body: Stream.fromReadableStream({
                evaluate: () => object.body,
                onError: (error) => new ImageStoreError({ message: `reading image ${key}: ${String(error)}` })
              })
            })
          ),
          Effect.catch((error) =>
            error.code === "not_found"
              ? Effect.succeed(Option.none())
              : Effect.fail(new ImageStoreError({ message: `reading image ${key}: ${error.message}` }))
          )
        )
    })

  /** The store on the bucket a blob token (`SVC_BLOB_TOKEN` format) names; the bucket must exist. */
  static readonly layerBucket = (token: Redacted.Redacted<string> | string): Layer.Layer<ImageStore> =>
    Layer.effect(ImageStore, Effect.map(Bucket.make({ token }), ImageStore.fromBucket))

  /**
   * Local object storage started for the life of the layer in its own folder
   * (`<OBJECT_STORAGE_DIR>/listings`, default `.data/object-storage/listings`, so it never shares a
   * data directory with another local store), bucket `offer-images` (created).
   */
  static readonly layerLocal: Layer.Layer<ImageStore, ObjectStorageError | Config.ConfigError> = Layer.effect(
    ImageStore,
    Effect.gen(function*() {
      const root = yield* Settings.ObjectStorageDir
      const backend = yield* Settings.ObjectStorageBackendSetting
      const info = yield* startObjectStorage({ dir: NodePath.resolve(process.cwd(), root, "listings"), backend }).pipe(
        Effect.provide(NodeServices.layer)
      )
      return yield* Effect.gen(function*() {
        const storage = yield* LocalObjectStorage
        yield* storage.createBucket("offer-images")
        const bucket = yield* Bucket.make({
          token: formatBlobToken({
            endpoint: storage.endpoint,
            bucket: "offer-images",
            accessKeyId: storage.accessKeyId,
            secretAccessKey: Redacted.value(storage.secretAccessKey),
            region: storage.region
          })
        })
        return ImageStore.fromBucket(bucket)
      }).pipe(Effect.provide(LocalObjectStorage.layerExternal(info)))
    })
  )

  /**
   * `OFFER_IMAGES_STORAGE`:
   * - `local` (default): local object storage for the life of the service (see `layerLocal`);
   * - a bucket token in the `SVC_BLOB_TOKEN` format (`s3+http://KEY:SECRET@host:port/bucket?region=...`,
   *   `s3://` for TLS): any S3-compatible store; the bucket must exist;
   * - `off`: no caching, GET /images redirects to the originals.
   */
  static readonly layerConfig: Layer.Layer<
    ImageStore,
    ImageStoreError | Config.ConfigError | ObjectStorageError
  > = Layer.unwrap(Effect.gen(function*(): Effect.fn.Return<
    Layer.Layer<ImageStore, ImageStoreError | Config.ConfigError | ObjectStorageError>,
    Config.ConfigError
  > {
    const setting = yield* Config.Redacted("OFFER_IMAGES_STORAGE").pipe(Config.withDefault(Redacted.make("local")))
    const value = Redacted.value(setting).trim()
    if (value === "off") return ImageStore.layerDisabled
    if (value === "local") return ImageStore.layerLocal
    try {
      parseBlobToken(value, "OFFER_IMAGES_STORAGE")
    } catch (error) {
      // never echo the value: it holds a secret
      return Layer.effect(
        ImageStore,
        Effect.fail(
          new ImageStoreError({
            message: `${(error as Error).message} (OFFER_IMAGES_STORAGE must be off, local or a bucket token)`
          })
        )
      )
    }
    return ImageStore.layerBucket(Redacted.make(value))
  }))
}

// -----------------------------------------------------------------------------
// Dimensions
// -----------------------------------------------------------------------------

/** The largest image the cache keeps: each side and the pixel count (see `dimensionsRefusal`). */
export interface DimensionLimits {
  readonly maxSide: number
  readonly maxPixels: number
}

/**
 * 10,000 px a side, 40 megapixels: listing photos are a few thousand px (a 12 MP phone photo is
 * 4032 × 3024, dealer feeds send ≤ 2,000 px), phone screens under 3,000; 40 MP is already ~160 MB
 * decoded as RGBA. Anything larger is no listing photo.
 */
export const defaultDimensionLimits: DimensionLimits = { maxSide: 10_000, maxPixels: 40_000_000 }

/** The `image-size` type each allowed content type must turn out to be. */
const measuredTypes: Readonly<Record<string, string>> = {
  "image/jpeg": "jpg",
  "image/png": "png",
  "image/gif": "gif",
  "image/webp": "webp",
  "image/avif": "avif"
}

/**
 * Why `body` is refused for its declared dimensions, or undefined when they are within `limits`.
 * Reads only the header (`image-size`, no decoding). Refused: dimensions that cannot be read (no
 * IHDR/SOF0-2/…, truncated), a format other than `contentType`, a side of 0, or one over the limits;
 * every frame or item counts (ICO/AVIF images list several).
 */
export const dimensionsRefusal = (
  body: Uint8Array,
  contentType: string,
  limits: DimensionLimits = defaultDimensionLimits
): string | undefined => {
  // a copy with its own ArrayBuffer: image-size reads through a DataView on `.buffer`, and a pooled
  // Buffer's would let a truncated header be completed from unrelated bytes
  const bytes = new Uint8Array(body)
  let size: ReturnType<typeof imageSize>
  try {
    size = imageSize(bytes)
  } catch (error) {
    return `dimensions cannot be read from the ${contentType} header (${(error as Error).message})`
  }
  if (size.type !== measuredTypes[contentType]) {
    return `the bytes are ${size.type ?? "an unknown format"}, not ${contentType}`
  }
  for (const { height, width } of [size, ...(size.images ?? [])]) {
    if (!(Number.isSafeInteger(width) && Number.isSafeInteger(height) && width > 0 && height > 0)) {
      return `declared dimensions ${width} × ${height} px are not an image`
    }
    if (width > limits.maxSide || height > limits.maxSide) {
      return `declared dimensions ${width} × ${height} px are over the limit of ${limits.maxSide} px a side`
    }
    if (width * height > limits.maxPixels) {
      return `declared dimensions ${width} × ${height} px are over the limit of ${limits.maxPixels} pixels`
    }
  }
  return undefined
}

// -----------------------------------------------------------------------------
// The cacher
// -----------------------------------------------------------------------------

const MAX_ATTEMPTS = 3

class Transient extends Schema.TaggedError<Transient>()("Transient", { message: Schema.String }) {}
class Rejected extends Schema.TaggedError<Rejected>()("Rejected", { message: Schema.String }) {}
class Failed extends Schema.TaggedError<Failed>()("Failed", { message: Schema.String }) {}

export interface CacheOptions {
  readonly concurrency: number
  readonly maxBytes: number
  readonly timeout: Duration.Duration
  /** base delay of the retry schedule */
  readonly retryBase: Duration.Duration
  /** largest declared dimensions kept (default `defaultDimensionLimits`) */
  readonly dimensions?: DimensionLimits
}

export class ImageCacher extends Context.Service<ImageCacher, {
  /** Asks the background worker for a pass (after an ingest). Returns at once. */
  readonly kick: Effect.Effect<void>
  /** One full pass now: caches what is pending; returns how many images were attempted. */
  readonly runPass: Effect.Effect<number>
}>()("@svc/listings/ImageCacher") {
  static readonly layerDisabled = Layer.succeed(ImageCacher, ImageCacher.of({ kick: Effect.void, runPass: Effect.succeed(0) }))

  /** The cacher with a background worker (needs ImageStore, SqlClient, HttpClient; Sources if any). */
  static readonly layerWith = (options: CacheOptions) =>
    Layer.effect(
      ImageCacher,
      Effect.gen(function*() {
        const store = yield* ImageStore
        if (!store.enabled) return ImageCacher.of({ kick: Effect.void, runPass: Effect.succeed(0) })
        const sql = yield* SqlClient.SqlClient
        const client = yield* HttpClient.HttpClient
        // Mock sources' demo images are never fetched (the built-in mock source is `mock`).
        const sources = yield* Effect.serviceOption(Sources)
        const mockIds = [
          ...new Set([
            "mock",
            ...Option.match(sources, {
              onNone: () => [],
              onSome: ({ all }) => all.filter((source) => source.config.adapter === "mock").map((source) => source.id)
            })
          ])
        ]

        const download = (url: string) =>
          Effect.gen(function*() {
            const response = yield* client.execute(HttpClientRequest.get(url)).pipe(
              Effect.timeoutOrElse({
                duration: options.timeout,
                orElse: () => Effect.fail(new Transient({ message: "timed out" }))
              }),
              Effect.catchTag("HttpClientError", (error): Effect.Effect<never, Transient | Rejected> => {
                const refused = OutboundGuard.refusalOf(error)
                return refused === undefined
                  ? Effect.fail(new Transient({ message: withoutQueries(error.message) }))
                  : Effect.fail(new Rejected({ message: `refused by the outbound guard: ${refused}` }))
              })
            )
            if (response.status === 429 || response.status >= 500) {
              return yield* new Transient({ message: `HTTP ${response.status}` })
            }
            if (response.status !== 200) return yield* new Failed({ message: `HTTP ${response.status}` })
            const contentType = (response.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()
            if (!allowedTypes.has(contentType)) {
              return yield* new Rejected({ message: `content type ${contentType || "(none)"} is not an allowed image type` })
            }
            const declared = Number(response.headers["content-length"] ?? NaN)
            if (declared > options.maxBytes) return yield* new Rejected({ message: `${declared} bytes is over the limit` })
            const chunks: Array<Uint8Array> = []
            let size = 0
            yield* response.stream.pipe(
              Stream.mapError((error) => new Transient({ message: error.message })),
              Stream.runForEach((chunk) => {
                size += chunk.length
                if (size > options.maxBytes) return Effect.fail(new Rejected({ message: "body is over the size limit" }))
                chunks.push(chunk)
                return Effect.void
              }),
              Effect.timeoutOrElse({
                duration: options.timeout,
                orElse: () => Effect.fail(new Transient({ message: "body timed out" }))
              })
            )
            const body = Buffer.concat(chunks)
            return { body, contentType }
          }).pipe(
            Effect.retry({
              while: (error) => error._tag === "Transient",
              schedule: Schedule.exponential(options.retryBase).pipe(Schedule.jittered),
              times: 3
            })
          )

        const cacheOne = (image: { readonly key: string; readonly original_url: string }) =>
          download(image.original_url).pipe(
            Effect.flatMap(({ body, contentType }) =>
              Effect.gen(function*() {
                const refusal = dimensionsRefusal(body, contentType, options.dimensions)
                if (refusal !== undefined) return yield* new Rejected({ message: refusal })
                yield* store.put(image.key, body, contentType).pipe(
                  Effect.mapError((error) =>
                    error.refused === true ? new Rejected({ message: error.message }) : new Failed({ message: error.message })
                  )
                )
                const etag = `"${createHash("sha256").update(body).digest("hex").slice(0, 32)}"`
                yield* sql`
                  UPDATE listings.images SET status = 'cached', content_type = ${contentType},
                    size_bytes = ${body.length}, etag = ${etag}, cached_at = now()
                  WHERE key = ${image.key}`
              })
            ),
            Effect.catch((error) => {
              const status = error._tag === "Rejected" ? "rejected" : "failed"
              return Effect.andThen(
                // a rejection is final (never fetched again): worth a line at the default level
                (status === "rejected" ? Effect.logInfo : Effect.logDebug)(
                  `Image ${image.key} not cached (${status}): ${error.message}`
                ),
                sql`UPDATE listings.images SET status = ${status} WHERE key = ${image.key}`
              )
            }),
            Effect.catch((error) => Effect.logWarning(`Image cache bookkeeping failed: ${error.message}`))
          )

        /** Claims a batch (other instances skip it) and caches it; loops until nothing is due. */
        const runPass = Effect.gen(function*() {
          let attempted = 0
          while (true) {
            const batch = yield* SqlSchema.findAll({ Request: Schema.Void, Result: DueImage, execute: () => sql`
              UPDATE listings.images i SET attempts = attempts + 1, last_attempt_at = now()
              FROM (
                SELECT key FROM listings.images
                WHERE status IN ('pending', 'failed') AND attempts < ${MAX_ATTEMPTS}
                  AND (last_attempt_at IS NULL OR last_attempt_at < now() - interval '1 minute')
                  AND source_id <> ALL(${mockIds}::text[])
                ORDER BY first_seen_at LIMIT 100 FOR UPDATE SKIP LOCKED
              ) due
              WHERE i.key = due.key
              RETURNING i.key, i.original_url` })()
            if (batch.length === 0) return attempted
            attempted += batch.length
            // Stopped mid-batch (SIGTERM): the images not done yet are given back, their attempt
            // uncounted, so the next process's first pass takes them at once.
            const unfinished = new Set(batch.map((image) => image.key))
            yield* Effect.forEach(
              batch,
              (image) => Effect.tap(cacheOne(image), () => Effect.sync(() => unfinished.delete(image.key))),
              { concurrency: options.concurrency, discard: true }
            ).pipe(
              Effect.onInterrupt(() =>
                unfinished.size === 0 ? Effect.void : sql`
                  UPDATE listings.images SET attempts = attempts - 1, last_attempt_at = NULL
                  WHERE key = ANY(${[...unfinished]}::text[]) AND status = 'pending'`.pipe(
                  Effect.andThen(Effect.logInfo(`Image cache: stopping, gave back ${unfinished.size} images not cached yet`)),
                  Effect.catch((error) => Effect.logWarning(`Image cache: giving back unfinished images failed: ${error.message}`))
                )
              )
            )
          }
        }).pipe(
          Effect.catch((error) => Effect.as(Effect.logWarning(`Image caching pass failed: ${error.message}`), 0))
        )

        // Images a process claimed and never finished (it was killed, or stopped, mid-batch) stay
        // `pending` with their attempt counted: due again a minute after that attempt. The worker
        // wakes then, as after a kick; it slept until the next ingest (INGEST_INTERVAL, 15 minutes by
        // default), so a restarted process left them uncached that long.
        const abandonedDue = SqlSchema.findAll({
          Request: Schema.Void,
          Result: Schema.Struct({ ms: Schema.NullOr(Schema.Number) }),
          execute: () => sql`
            SELECT ceil(extract(epoch FROM min(last_attempt_at) + interval '1 minute' - now()) * 1000)::float8 AS ms
            FROM listings.images
            WHERE status = 'pending' AND attempts > 0 AND attempts < ${MAX_ATTEMPTS}
              AND source_id <> ALL(${mockIds}::text[])`
        })
        const nextWake = abandonedDue(undefined).pipe(
          Effect.map(([row]) => row?.ms ?? null),
          Effect.catch(() => Effect.succeed(60_000))
        )
        const kicks = yield* Queue.sliding<void>(1)
        yield* Effect.gen(function*() {
          const ms = yield* nextWake
          yield* ms === null ? Queue.take(kicks) : Queue.take(kicks).pipe(Effect.timeoutOption(Math.max(100, ms)))
          yield* runPass
        }).pipe(
          Effect.forever,
          Effect.forkScoped
        )
        // one pass at start: images left pending by a stopped process waited for the next ingest
        // (with INGEST_ON_START=false, a whole INGEST_INTERVAL)
        yield* Queue.offer(kicks, undefined)
        return ImageCacher.of({ kick: Queue.offer(kicks, undefined).pipe(Effect.asVoid), runPass })
      })
    )

  /**
   * `IMAGE_CACHE_CONCURRENCY` (4), `IMAGE_MAX_BYTES` (10 MiB), `IMAGE_FETCH_TIMEOUT` (20 s),
   * `IMAGE_MAX_SIDE` (10,000 px), `IMAGE_MAX_PIXELS` (40,000,000).
   */
  static readonly settings = Config.all({
    concurrency: Settings.intSetting("IMAGE_CACHE_CONCURRENCY", 4, { max: 1000 }),
    maxBytes: Settings.intSetting("IMAGE_MAX_BYTES", 10 * 1024 * 1024),
    timeout: Settings.durationSetting("IMAGE_FETCH_TIMEOUT", "20 seconds"),
    dimensions: Config.all({
      maxSide: Settings.intSetting("IMAGE_MAX_SIDE", defaultDimensionLimits.maxSide),
      maxPixels: Settings.intSetting("IMAGE_MAX_PIXELS", defaultDimensionLimits.maxPixels)
    })
  })

  static readonly layer = Layer.unwrap(
    Effect.map(ImageCacher.settings, (settings) => ImageCacher.layerWith({ ...settings, retryBase: Duration.millis(500) }))
  )
}

/** An image the cacher claimed. */
const DueImage = Schema.Struct({ key: Schema.String, original_url: Schema.String })

/** What GET /images/:key needs to know about a key. */
export const ImageRecord = Schema.Struct({
  key: Schema.String,
  original_url: Schema.String,
  status: Schema.String,
  content_type: Schema.NullOr(Schema.String),
  size_bytes: Schema.NullOr(Schema.Number),
  etag: Schema.NullOr(Schema.String)
})
export type ImageRecord = typeof ImageRecord.Type
