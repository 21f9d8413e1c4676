/** The listings service's settings, read once when its layer is built (README: Configuration). */
import { OutboundGuard, Settings } from "@svc/platform"
import { Config, Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import type { HttpClient } from "effect/http"
import { FeedMaxBytes, FeedTimeout } from "./adapters/http.ts"

export class ListingsConfig extends Context.Service<ListingsConfig, {
  /** No trailing slash: `http://localhost:8787`. */
  readonly publicBaseUrl: string
  readonly adminToken: Option.Option<Redacted.Redacted<string>>
  readonly ingestInterval: Duration.Duration
  readonly leaseTtl: Duration.Duration
  readonly batchSize: number
  /**
   * `FEED_MAX_DURATION` (30 minutes): the longest one run may read its feed, all pages, writes
   * included. A feed that trickles a byte at a time never trips `FEED_TIMEOUT` and renewed its lease
   * forever, so its source was never read again.
   */
  readonly feedMaxDuration: Duration.Duration
  /** Memory for remembered GET /offers answers (see Offers); 0 remembers none. */
  readonly answerCacheBytes: number
  /**
   * `LISTINGS_ALLOW_PRIVATE` (false): feed pages and images may be fetched from loopback and private
   * addresses (local development). Off, the outbound guard refuses them (see `@svc/platform` OutboundGuard).
   */
  readonly allowPrivate: boolean
}>()("@svc/listings/ListingsConfig") {
  static readonly layer = Layer.effect(
    ListingsConfig,
    Effect.gen(function*() {
      const port = yield* Config.Port("LISTINGS_PORT").pipe(Config.withDefault(8787))
      // the start of every image and page link the API answers: an absolute http(s) URL
      const publicBaseUrl = yield* Settings.httpUrlSetting("PUBLIC_BASE_URL", `http://localhost:${port}`)
      // read at each feed fetch (adapters/http.ts); checked here so that a bad value stops the start
      yield* FeedTimeout
      yield* FeedMaxBytes
      return ListingsConfig.of({
        publicBaseUrl: publicBaseUrl.replace(/\/+$/, ""),
        adminToken: yield* Settings.tokenSetting("ADMIN_TOKEN"),
        // shorter, the schedule would start a run, skip it as still running, and loop at full CPU
        ingestInterval: yield* Settings.durationSetting("INGEST_INTERVAL", "15 minutes", { min: "1 second" }),
        leaseTtl: yield* Settings.durationSetting("INGEST_LEASE_TTL", "30 seconds", { min: "1 second" }),
        batchSize: yield* Settings.intSetting("INGEST_BATCH_SIZE", 2000, { max: 100_000 }),
        feedMaxDuration: yield* Settings.durationSetting("FEED_MAX_DURATION", "30 minutes"),
        answerCacheBytes: yield* Settings.numberSetting("OFFERS_CACHE_MB", 64, { min: 0, max: 1_000_000 }).pipe(
          Config.map((mb) => Math.floor(mb * 1024 * 1024))
        ),
        allowPrivate: yield* Config.Boolean("LISTINGS_ALLOW_PRIVATE").pipe(Config.withDefault(false))
      })
    })
  )

  static readonly layerTest = (overrides: Partial<ListingsConfig["Service"]> = {}) =>
    Layer.succeed(
      ListingsConfig,
      ListingsConfig.of({
        publicBaseUrl: "http://listings.test",
        adminToken: Option.none(),
        ingestInterval: Duration.minutes(15),
        leaseTtl: Duration.seconds(30),
        batchSize: 2000,
        feedMaxDuration: Duration.minutes(30),
        answerCacheBytes: 64 * 1024 * 1024,
        allowPrivate: false,
        ...overrides
      })
    )
}

/**
 * The client of every outbound request (feed pages, images): the suite's outbound guard, private
 * hosts allowed only with `LISTINGS_ALLOW_PRIVATE=true`, redirects followed by the guard (at most 5,
 * each hop checked, credentials dropped when a hop leaves the origin).
 */
export const GuardedHttpClient: Layer.Layer<HttpClient.HttpClient, never, ListingsConfig> = Layer.unwrap(
  Effect.gen(function*() {
    const { allowPrivate } = yield* ListingsConfig
    return OutboundGuard.layerHttpClient({ allowPrivate, setting: "LISTINGS_ALLOW_PRIVATE" })
  })
)
