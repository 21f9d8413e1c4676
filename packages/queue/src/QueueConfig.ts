/**
 * The queue's configuration, read once from the environment (see packages/queue/README.md).
 */
import { Settings } from "@svc/platform"
import { Config, ConfigProvider, Context, type Duration, Effect, Layer, Option, Redacted } from "effect"

export interface QueueSettings {
  /** `QUEUE_TOKEN`: the bearer token of publish and every management route. Unset: those routes answer 503. */
  readonly token: Option.Option<Redacted.Redacted<string>>
  /** `QUEUE_ALLOW_PRIVATE=true`: accept destinations in private/loopback ranges (development, tests). */
  readonly allowPrivate: boolean
  /** `QUEUE_MAX_MESSAGE_BYTES` (1 MiB): publish body cap; callback bodies are truncated to it. */
  readonly maxMessageBytes: number
  /** `QUEUE_MAX_BATCH_MESSAGES` (1,000): most elements of one `POST /v2/batch` (400 beyond). */
  readonly maxBatchMessages: number
  /** `QUEUE_MAX_BATCH_BYTES` (10 MiB): body cap of `POST /v2/batch` (413 beyond, checked before reading). */
  readonly maxBatchBytes: number
  /** `QUEUE_DEFAULT_RETRIES` (3). */
  readonly defaultRetries: number
  /** `QUEUE_MAX_RETRIES` (100): the largest Svc-Retries accepted. */
  readonly maxRetries: number
  /** `QUEUE_DEFAULT_TIMEOUT` (30 seconds): per delivery attempt. */
  readonly defaultTimeout: Duration.Duration
  /** `QUEUE_MAX_TIMEOUT` (15 minutes): the largest Svc-Timeout accepted. */
  readonly maxTimeout: Duration.Duration
  /** `QUEUE_MAX_DELAY` (7 days): the largest Svc-Delay accepted. */
  readonly maxDelay: Duration.Duration
  /** `QUEUE_RETRY_BASE` (2 seconds): first retry delay of the exponential schedule (doubling). */
  readonly retryBase: Duration.Duration
  /** `QUEUE_RETRY_MAX_DELAY` (1 day): cap of a retry delay, also of an honoured Retry-After. */
  readonly retryMaxDelay: Duration.Duration
  /** `QUEUE_WORKER` (true): run the delivery worker in this process. */
  readonly worker: boolean
  /**
   * `QUEUE_CONCURRENCY` (200): deliveries in flight per worker process. 200 rather than 100: claims of
   * 100 instead of 50 messages cost Postgres less per message, and a backlog drained 9-18 % faster in
   * three alternating pairs of bench:queue's batch run (README, "Benchmark"). The price is memory: up
   * to this many bodies (each at most `QUEUE_MAX_MESSAGE_BYTES`) and response bodies (same cap) held.
   */
  readonly concurrency: number
  /** `QUEUE_BATCH_SIZE` (200): messages claimed per statement (at most the free delivery slots). */
  readonly batchSize: number
  /** `QUEUE_POLL_INTERVAL` (1 second): longest idle wait between claims without a notification. */
  readonly pollInterval: Duration.Duration
  /** `QUEUE_LEASE_MARGIN` (30 seconds): a claim lasts the attempt's timeout plus this. */
  readonly leaseMargin: Duration.Duration
  /** `QUEUE_DEDUP_WINDOW` (10 minutes): how long a Svc-Deduplication-Id is remembered. */
  readonly dedupWindow: Duration.Duration
  /** `QUEUE_EVENTS` (true): record every state change of a message in the events log (store/Events.ts). */
  readonly events: boolean
  /** `QUEUE_EVENTS_RETENTION` (7 days): events older than this are pruned (Pruning.ts). */
  readonly eventsRetention: Duration.Duration
}

const { durationSetting: duration, intSetting: int } = Settings

export const settingsConfig: Config.Config<QueueSettings> = Config.all({
  token: Settings.tokenSetting("QUEUE_TOKEN"),
  allowPrivate: Config.Boolean("QUEUE_ALLOW_PRIVATE").pipe(Config.withDefault(false)),
  maxMessageBytes: int("QUEUE_MAX_MESSAGE_BYTES", 1024 * 1024),
  maxBatchMessages: int("QUEUE_MAX_BATCH_MESSAGES", 1000),
  maxBatchBytes: int("QUEUE_MAX_BATCH_BYTES", 10 * 1024 * 1024),
  defaultRetries: int("QUEUE_DEFAULT_RETRIES", 3, { min: 0 }),
  maxRetries: int("QUEUE_MAX_RETRIES", 100, { min: 0 }),
  defaultTimeout: duration("QUEUE_DEFAULT_TIMEOUT", "30 seconds"),
  maxTimeout: duration("QUEUE_MAX_TIMEOUT", "15 minutes"),
  maxDelay: duration("QUEUE_MAX_DELAY", "7 days"),
  retryBase: duration("QUEUE_RETRY_BASE", "2 seconds"),
  retryMaxDelay: duration("QUEUE_RETRY_MAX_DELAY", "1 day"),
  worker: Config.Boolean("QUEUE_WORKER").pipe(Config.withDefault(true)),
  concurrency: int("QUEUE_CONCURRENCY", 200, { max: 10_000 }),
  batchSize: int("QUEUE_BATCH_SIZE", 200, { max: 10_000 }),
  // shorter, an idle worker polls Postgres in a loop
  pollInterval: duration("QUEUE_POLL_INTERVAL", "1 second", { min: "10 millis" }),
  leaseMargin: duration("QUEUE_LEASE_MARGIN", "30 seconds"),
  dedupWindow: duration("QUEUE_DEDUP_WINDOW", "10 minutes"),
  events: Config.Boolean("QUEUE_EVENTS").pipe(Config.withDefault(true)),
  eventsRetention: duration("QUEUE_EVENTS_RETENTION", "7 days")
}).pipe(
  Config.flatMap((settings) =>
    settings.defaultRetries > settings.maxRetries
      ? Config.fail(new ConfigProvider.SourceError({
        message: `QUEUE_DEFAULT_RETRIES (${settings.defaultRetries}) must be at most QUEUE_MAX_RETRIES (${settings.maxRetries})`
      }))
      : Config.succeed({
        ...settings,
        // An empty QUEUE_TOKEN is no token: it must not open the routes.
        token: Option.filter(settings.token, (token) => Redacted.value(token).length > 0)
      })
  )
)

export class QueueConfig extends Context.Service<QueueConfig, QueueSettings>()("@svc/queue/QueueConfig") {
  static readonly layer = QueueConfig.layerWith({})
  /** The environment's settings overridden by `overrides` (tests). */
  static layerWith(overrides: Partial<QueueSettings>) {
    return Layer.effect(
      QueueConfig,
      Effect.gen(function*() {
        const settings = yield* settingsConfig
        return QueueConfig.of({ ...settings, ...overrides })
      })
    )
  }
}
