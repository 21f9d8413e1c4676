/** The listings service's settings, read once when its layer is built (README: Configuration). */
import { Config, Context, Duration, Effect, Layer, Option, Redacted } from "effect"

export class ListingsConfig extends Context.Service<ListingsConfig, {
  /** No trailing slash: `http://localhost:8787`. */
  readonly publicBaseUrl: string
  readonly adminToken: Option.Option<Redacted.Redacted<string>>
  readonly ingestInterval: Duration.Duration
  readonly leaseTtl: Duration.Duration
  readonly batchSize: number
  /** Memory for remembered GET /offers answers (see Offers); 0 remembers none. */
  readonly answerCacheBytes: number
}>()("@svc/listings/ListingsConfig") {
  static readonly layer = Layer.effect(
    ListingsConfig,
    Effect.gen(function*() {
      const port = yield* Config.Port("LISTINGS_PORT").pipe(Config.withDefault(8787))
      const publicBaseUrl = yield* Config.String("PUBLIC_BASE_URL").pipe(
        Config.withDefault(`http://localhost:${port}`)
      )
      return ListingsConfig.of({
        publicBaseUrl: publicBaseUrl.replace(/\/+$/, ""),
        adminToken: yield* Config.option(Config.Redacted("ADMIN_TOKEN")).pipe(
          Config.map(Option.filter((token) => Redacted.value(token).trim() !== ""))
        ),
        ingestInterval: yield* Config.Duration("INGEST_INTERVAL").pipe(Config.withDefault(Duration.minutes(15))),
        leaseTtl: yield* Config.Duration("INGEST_LEASE_TTL").pipe(Config.withDefault(Duration.seconds(30))),
        batchSize: yield* Config.Int("INGEST_BATCH_SIZE").pipe(Config.withDefault(2000)),
        answerCacheBytes: yield* Config.Number("OFFERS_CACHE_MB").pipe(
          Config.withDefault(64),
          Config.map((mb) => Math.max(0, Math.floor(mb * 1024 * 1024)))
        )
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
        answerCacheBytes: 64 * 1024 * 1024,
        ...overrides
      })
    )
}
