/**
 * The configured sources: from the JSON file `SOURCES_FILE`, or built in (the mock source alone).
 *
 * ```json
 * {
 *   "sources": [
 *     {
 *       "id": "autoplac",
 *       "adapter": "json",
 *       "enabled": true,
 *       "url": "https://feeds.autoplac.example/offers.json",
 *       "auth": { "env": "AUTOPLAC_TOKEN", "header": "Authorization", "scheme": "Bearer" },
 *       "itemsPath": "data.offers",
 *       "nextPagePath": "links.next",
 *       "pageOrigins": ["https://pages.autoplac.example"],
 *       "fields": { "nativeId": "id", "make": "vehicle.brand", "images": "photos[].url" },
 *       "defaults": { "currency": "PLN" }
 *     },
 *     { "id": "carhub", "adapter": "csv", "url": "https://carhub.example/export.csv", "delimiter": ";" }
 *   ]
 * }
 * ```
 *
 * Credentials are never in the file: `auth.env` names the environment variable holding them.
 * The `mock` adapter runs only with `ENABLE_MOCK_SOURCE=true`; otherwise a mock source is listed as
 * disabled (or not at all when it comes from the built-in default).
 */
import { Config, Context, Effect, Layer, Option, Schema } from "effect"
import * as fs from "node:fs/promises"

const SourceIdSchema = Schema.String.check(
  Schema.isPattern(/^[a-z0-9][a-z0-9-]{0,62}$/, { message: "Expected a source id of lowercase letters, digits and '-'" })
)

const FeedAuth = Schema.Struct({
  /** Environment variable holding the credential. */
  env: Schema.String,
  /** Header to send it in (default Authorization). */
  header: Schema.optionalKey(Schema.String),
  /** Prefix such as "Bearer" (default "Bearer" for Authorization, none otherwise). */
  scheme: Schema.optionalKey(Schema.String)
})

/** Why `url` cannot be a feed's address (an absolute http or https URL), or none. */
const feedUrlProblem = (url: string): string | undefined => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return `url ${JSON.stringify(url.slice(0, 200))} is not an absolute URL`
  }
  return parsed.protocol === "http:" || parsed.protocol === "https:"
    ? undefined
    : `url ${JSON.stringify(url.slice(0, 200))} is not an http or https URL`
}

/** Feed field -> our field: a dotted path (`price.amount`), `[]` maps over an array (`photos[].url`). */
const Fields = Schema.Record(Schema.String, Schema.String)
const Defaults = Schema.Record(Schema.String, Schema.Union([Schema.String, Schema.Number]))

export const SourceConfig = Schema.Struct({
  id: SourceIdSchema,
  adapter: Schema.Literals(["mock", "json", "csv"]),
  enabled: Schema.optionalKey(Schema.Boolean),
  url: Schema.optionalKey(Schema.String),
  auth: Schema.optionalKey(FeedAuth),
  fields: Schema.optionalKey(Fields),
  defaults: Schema.optionalKey(Defaults),
  /** json: where the array of offers is (default: the document itself, or its `offers`/`items`/`data`). */
  itemsPath: Schema.optionalKey(Schema.String),
  /** json: where the next page's URL is; absent or null ends the feed. */
  nextPagePath: Schema.optionalKey(Schema.String),
  /**
   * json: origins other than `url`'s that next-page links may point at (`https://cdn.partner.example`).
   * By default paging stays on `url`'s origin. The credential is never sent to these.
   */
  pageOrigins: Schema.optionalKey(Schema.Array(Schema.String)),
  /** csv: field delimiter (default ","). */
  delimiter: Schema.optionalKey(Schema.String),
  /** csv: separator inside the images column (default "|"). */
  listSeparator: Schema.optionalKey(Schema.String),
  /** mock: how many offers (default 3000). */
  count: Schema.optionalKey(Schema.Int)
})
export type SourceConfig = typeof SourceConfig.Type

export const SourcesFile = Schema.Struct({ sources: Schema.Array(SourceConfig) })

/** A configured source, with whether it actually runs. */
export interface Source {
  readonly id: string
  readonly enabled: boolean
  readonly config: SourceConfig
}

export class SourcesConfigError extends Schema.TaggedError<SourcesConfigError>()("SourcesConfigError", {
  message: Schema.String
}) {}

/** The built-in demo source's id (`ENABLE_MOCK_SOURCE=true` without `SOURCES_FILE`). */
export const BUILT_IN_MOCK_ID = "mock"

export class Sources extends Context.Service<Sources, {
  readonly all: ReadonlyArray<Source>
  readonly get: (id: string) => Option.Option<Source>
  /**
   * Demo sources whose offers must not be listed: while `ENABLE_MOCK_SOURCE` is not true, the
   * built-in `mock` and every configured `mock` adapter (a start with it on left their demo offers).
   */
  readonly retiredDemoSources: ReadonlyArray<string>
}>()("@svc/listings/Sources") {
  static readonly make = (configs: ReadonlyArray<SourceConfig>, mockEnabled: boolean): Sources["Service"] => {
    const all = configs.map((config): Source => ({
      id: config.id,
      config,
      enabled: (config.enabled ?? true) && (config.adapter !== "mock" || mockEnabled)
    }))
    const byId = new Map(all.map((source) => [source.id, source]))
    // By adapter, never by id alone: a json or csv feed may be called "mock" too, and its offers are real.
    const builtInTaken = configs.some((config) => config.id === BUILT_IN_MOCK_ID && config.adapter !== "mock")
    const retiredDemoSources = mockEnabled
      ? []
      : [
        ...new Set([
          ...(builtInTaken ? [] : [BUILT_IN_MOCK_ID]),
          ...configs.filter((config) => config.adapter === "mock").map((config) => config.id)
        ])
      ]
    return Sources.of({ all, get: (id) => Option.fromUndefinedOr(byId.get(id.toLowerCase())), retiredDemoSources })
  }

  static readonly layerStatic = (configs: ReadonlyArray<SourceConfig>, options?: { readonly mockEnabled?: boolean }) =>
    Layer.succeed(Sources, Sources.make(configs, options?.mockEnabled ?? true))

  /** `SOURCES_FILE`, `ENABLE_MOCK_SOURCE`. */
  static readonly layer = Layer.effect(
    Sources,
    Effect.gen(function*() {
      const mockEnabled = yield* Config.Boolean("ENABLE_MOCK_SOURCE").pipe(Config.withDefault(false))
      const file = yield* Config.option(Config.String("SOURCES_FILE"))
      if (Option.isNone(file)) {
        return Sources.make(mockEnabled ? [{ id: BUILT_IN_MOCK_ID, adapter: "mock" }] : [], mockEnabled)
      }
      const text = yield* Effect.tryPromise({
        try: () => fs.readFile(file.value, "utf8"),
        catch: () => new SourcesConfigError({ message: `SOURCES_FILE ${file.value} cannot be read` })
      })
      const parsed = yield* Schema.decodeUnknownEffect(Schema.fromJsonString(SourcesFile))(text).pipe(
        Effect.mapError((error) =>
          new SourcesConfigError({ message: `SOURCES_FILE ${file.value} is invalid: ${error.message}` })
        )
      )
      const ids = parsed.sources.map((source) => source.id)
      const duplicate = ids.find((id, index) => ids.indexOf(id) !== index)
      if (duplicate !== undefined) {
        return yield* new SourcesConfigError({ message: `SOURCES_FILE ${file.value}: source id ${duplicate} appears twice` })
      }
      for (const source of parsed.sources) {
        if (source.adapter !== "mock" && source.url === undefined) {
          return yield* new SourcesConfigError({ message: `SOURCES_FILE ${file.value}: source ${source.id} has no url` })
        }
        // checked here, not only at each run: a file:, gopher: or data: feed started fine and failed every run
        const problem = source.url === undefined ? undefined : feedUrlProblem(source.url)
        if (problem !== undefined) {
          return yield* new SourcesConfigError({ message: `SOURCES_FILE ${file.value}: source ${source.id}: ${problem}` })
        }
      }
      return Sources.make(parsed.sources, mockEnabled)
    })
  )
}
