/**
 * Settings read from the environment with the range they must be in. A value out of it stops the
 * start with a configuration error naming the variable and the range (the CLI prints it on one line),
 * instead of a service that starts and then never works: a worker with a concurrency of 0 delivers
 * nothing, a timeout of 0 fails every request, an interval of 0 spins a loop at full CPU, and a
 * size of -1 turned every publish into a 500 (an outside sweep of every variable, 2026-11-28).
 */
import { parseDuration } from "@svc/schema"
import { Config, ConfigProvider, Duration, Effect, Option, Redacted, Schema, SchemaGetter, SchemaIssue } from "effect"
import * as path from "node:path"
import { fileInTheWay } from "./Directory.ts"

/**
 * A number as an environment variable holds it: decimal digits, a sign, a fraction and an exponent.
 * Effect's own reading told "10MB" or "abc" as "Expected a string representing a finite number",
 * which names neither the value nor the form; this names both ("expected a whole number, not \"10MB\"").
 */
const numberText = (expected: string) =>
  Schema.String.pipe(
    Schema.decodeTo(Schema.Number, {
      decode: SchemaGetter.transformEffect((text: string) => {
        const value = /^\s*[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?\s*$/i.test(text) ? Number(text) : Number.NaN
        return Number.isFinite(value)
          ? Effect.succeed(value)
          : Effect.fail(new SchemaIssue.InvalidValue({ message: `expected ${expected}, not ${JSON.stringify(text.slice(0, 50))}` }, text))
      }),
      encode: SchemaGetter.transform(String)
    })
  )

/** A whole number within `min` and `max` (by default at least 1); `fallback` when unset. */
export const intSetting = (name: string, fallback: number, range: { readonly min?: number; readonly max?: number } = {}) =>
  Config.schema(
    numberText("a whole number").check(
      Schema.isInt({ message: "expected a whole number" }),
      range.max === undefined
        ? Schema.isGreaterThanOrEqualTo(range.min ?? 1)
        : Schema.isBetween({ minimum: range.min ?? 1, maximum: range.max })
    ),
    name
  ).pipe(Config.withDefault(fallback))

/** A finite number within `min` and `max` (NaN and Infinity refused); `fallback` when unset. */
export const numberSetting = (name: string, fallback: number, range: { readonly min: number; readonly max: number }) =>
  Config.schema(numberText("a number").check(Schema.isBetween({ minimum: range.min, maximum: range.max })), name).pipe(
    Config.withDefault(fallback)
  )

/**
 * A duration as effect writes it ("30 seconds", "5 minutes", "1.5 hours") or as the queue's headers take
 * it ("30s", "5m", "1h30m", "1500ms", or "30": seconds). Only effect's form was accepted, and
 * `SHUTDOWN_TIMEOUT=30s` stopped the start with "Expected a valid Duration string" — while the range
 * messages printed durations as "3650d".
 */
const DurationText = Schema.String.pipe(
  Schema.decodeTo(Schema.Duration, {
    decode: SchemaGetter.transformEffect((text: string) => {
      const compact = parseDuration(text)
      const duration = compact === undefined
        ? Duration.fromInput(text.trim() as Duration.Input)
        : Option.some(Duration.millis(compact))
      return Option.isSome(duration)
        ? Effect.succeed(duration.value)
        : Effect.fail(
          new SchemaIssue.InvalidValue({
            message: `expected a duration such as "30 seconds", "30s", "5m" or "1h30m", not ${JSON.stringify(text.slice(0, 50))}`
          }, text)
        )
    }),
    encode: SchemaGetter.transform((duration: Duration.Duration) => `${Duration.toMillis(duration)} millis`)
  })
)

/** "3650 days", "1 minute", "0 seconds": how a range is told (the form the setting takes back). */
const spelled = (duration: Duration.Duration): string => {
  const ms = Duration.toMillis(duration)
  const [unit, size] = ([["day", 86_400_000], ["hour", 3_600_000], ["minute", 60_000], ["second", 1000]] as const)
    .find(([, size]) => ms % size === 0) ?? ["millisecond", 1]
  const count = ms / size
  return `${count} ${unit}${count === 1 ? "" : "s"}`
}

/**
 * A duration ({@link DurationText}) longer than zero, or at least `min`, and at most `max` (by
 * default 10 years: longer ones overflow what timers and Postgres intervals hold); `fallback` when
 * unset (none: the setting is required, or wrapped in `Config.option`).
 */
export const durationSetting = (
  name: string,
  fallback: Duration.Input | undefined,
  range: { readonly min?: Duration.Input; readonly max?: Duration.Input } = {}
) => {
  const min = range.min === undefined ? undefined : Duration.fromInputUnsafe(range.min)
  const max = Duration.fromInputUnsafe(range.max ?? "3650 days")
  const inRange = Schema.makeFilter<Duration.Duration>((duration) =>
    (min === undefined ? Duration.isGreaterThan(duration, Duration.zero) : Duration.isGreaterThanOrEqualTo(duration, min))
      ? Duration.isLessThanOrEqualTo(duration, max) || `must be at most ${spelled(max)}`
      : min === undefined
      ? "must be longer than 0"
      : `must be at least ${spelled(min)}`
  )
  const duration = Config.schema(DurationText.check(inRange), name)
  return fallback === undefined ? duration : duration.pipe(Config.withDefault(Duration.fromInputUnsafe(fallback)))
}

/**
 * A setting's text. Unset or empty is unset (effect's environment provider reads an empty variable as
 * unset, for every setting: its default applies). Only whitespace stops the command naming the variable
 * and saying what to give (`instead`): it is never what was meant, and taken as given it failed later
 * under another name (`EMBEDDED_POSTGRES_DIR="  "` made a cluster in a folder named two spaces,
 * `QUEUE_URL=" "` was "not an http(s) URL"; outside audits). The rule of every text setting but the
 * secrets ({@link tokenSetting}, whose message must not repeat them).
 */
export const textSetting = (name: string, instead: string): Config.Config<string> =>
  Config.String(name).pipe(
    Config.flatMap((value) =>
      value !== "" && value.trim() === ""
        ? Config.fail(new ConfigProvider.SourceError({ message: `${name} is only whitespace: ${instead}` }))
        : Config.succeed(value)
    )
  )

/**
 * A URL setting ({@link textSetting}: `QUEUE_URL`, `LISTINGS_URL`, `DOCS_URL`, `DOCS_API_URL`,
 * `PUBLIC_BASE_URL`), the spaces around it dropped: the URL parser drops them when the URL is checked,
 * so `QUEUE_URL="http://host:8788 "` passed the check and then failed as a call to `http://host:8788 /rpc`.
 */
export const urlSetting = (name: string): Config.Config<string> =>
  textSetting(name, "give a URL, or leave it unset").pipe(Config.map((url) => url.trim()))

/** An absolute http(s) URL (what links and outbound calls are built on); `fallback` when unset. */
export const httpUrlSetting = (name: string, fallback?: string) => {
  const url = urlSetting(name).pipe(
    Config.flatMap((value) => {
      const parsed = URL.parse(value)
      const problem = parsed === null || !/^https?:$/.test(parsed.protocol) || parsed.host === ""
        ? "must be an absolute http or https URL, like http://127.0.0.1:8789"
        // such a URL is logged at start (DOCS_API_URL) or sent to every client (PUBLIC_BASE_URL)
        : parsed.username !== "" || parsed.password !== ""
        ? "must not hold a user name or password"
        : undefined
      return problem === undefined ? Config.succeed(value) : Config.fail(new ConfigProvider.SourceError({ message: `${name} ${problem}` }))
    })
  )
  return fallback === undefined ? url : url.pipe(Config.withDefault(fallback))
}

/**
 * `DATABASE_URL`: none when unset or empty (effect's environment provider reads an empty variable as
 * unset, for every setting): the embedded Postgres; else a `postgres://` or `postgresql://` URL. The
 * message never repeats the value (it holds the password).
 */
export const DatabaseUrl: Config.Config<Option.Option<Redacted.Redacted<string>>> = Config.option(Config.Redacted("DATABASE_URL")).pipe(
  Config.flatMap((url): Config.Config<Option.Option<Redacted.Redacted<string>>> => {
    if (Option.isNone(url)) return Config.succeed(url)
    const value = Redacted.value(url.value)
    // the driver parses the rest; the host may be empty, given by `?host=` (a Unix socket directory)
    return /^postgres(ql)?:\/\//i.test(value)
      ? Config.succeed(url)
      : Config.fail(new ConfigProvider.SourceError({
        message: "DATABASE_URL is not a postgres:// URL (postgres://user:password@host:5432/database)"
      }))
  })
)

/**
 * A bearer token (`ADMIN_TOKEN`, `QUEUE_TOKEN`, `DOCS_ADMIN_TOKEN`): none when unset or empty (its routes
 * are disabled). A value that is only whitespace, or starts or ends with it, stops the start: a bearer
 * header's token is read trimmed, so no request could ever present it (`QUEUE_TOKEN="   "` started, and
 * every request was a 401 "Invalid bearer token", never the 503 saying the token is unset). The message
 * never repeats the value.
 */
export const tokenSetting = (name: string): Config.Config<Option.Option<Redacted.Redacted<string>>> =>
  Config.option(Config.Redacted(name)).pipe(
    Config.flatMap((token): Config.Config<Option.Option<Redacted.Redacted<string>>> => {
      if (Option.isNone(token)) return Config.succeed(token)
      const value = Redacted.value(token.value)
      if (value === "") return Config.succeed(Option.none())
      return value.trim() === value
        ? Config.succeed(token)
        : Config.fail(new ConfigProvider.SourceError({
          message: value.trim() === ""
            ? `${name} is only whitespace: set a token (printable characters, no spaces at either end), or leave it unset to disable its routes`
            : `${name} starts or ends with whitespace, which no Authorization header can carry: remove it`
        }))
    })
  )

/** `EMBEDDED_POSTGRES_PORT`: the embedded cluster's port; none: the remembered one, or a free one at first. */
export const EmbeddedPostgresPort = Config.option(Config.Port("EMBEDDED_POSTGRES_PORT"))

/**
 * A data folder's setting ({@link textSetting}), `fallback` when unset or empty. A file where the folder
 * is to be, the path itself or a parent ({@link fileInTheWay}), stops the command saying so: it failed
 * later with messages that did not (`No embedded Postgres in <file> yet`, "an earlier first start …
 * was interrupted", mkdir's ENOTDIR from the object storage's script; an outside audit).
 */
const folderSetting = (name: string, fallback: string): Config.Config<string> =>
  textSetting(name, `give a folder, or leave it unset for ${fallback}`).pipe(
    Config.withDefault(fallback),
    Config.flatMap((value) => {
      const folder = value === "" ? fallback : value
      const file = fileInTheWay(folder)
      if (file === undefined) return Config.succeed(folder)
      const what = file === path.resolve(folder) ? "a file, not a folder" : `under ${file}, a file, not a folder`
      return Config.fail(new ConfigProvider.SourceError({
        message: folder === fallback
          ? `${name} is ${folder} (the default): ${what}; give a folder`
          : `${name} is ${folder}: ${what}; give a folder, or leave it unset for ${fallback}`
      }))
    })
  )

/** `EMBEDDED_POSTGRES_DIR`: the embedded cluster's data folder (relative to the working directory). */
export const EmbeddedPostgresDir = folderSetting("EMBEDDED_POSTGRES_DIR", ".data/postgres")

/**
 * `OBJECT_STORAGE_DIR`: the folder under which each service's local object storage keeps its
 * instance (`<dir>/listings`, `<dir>/uploads`; relative to the working directory).
 */
export const ObjectStorageDir = folderSetting("OBJECT_STORAGE_DIR", ".data/object-storage")

/** `OBJECT_STORAGE_BACKEND`: `auto` (radosgw when installed, else s3rver with a warning), `radosgw` or `s3rver`. */
export const ObjectStorageBackendSetting = Config.Literals(["auto", "radosgw", "s3rver"], "OBJECT_STORAGE_BACKEND").pipe(
  Config.withDefault("auto" as const)
)
