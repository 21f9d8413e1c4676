/**
 * Settings with ranges: each helper answers the value in range, its fallback when unset, and a
 * configuration error naming the variable for a value a service could not work with.
 */
import { assert, describe, it } from "@effect/vitest"
import { Config, ConfigProvider, Duration, Effect, Option, Redacted, Result } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import {
  DatabaseUrl,
  durationSetting,
  EmbeddedPostgresDir,
  httpUrlSetting,
  intSetting,
  numberSetting,
  ObjectStorageDir,
  tokenSetting,
  urlSetting
} from "../../src/Settings.ts"

const read = <A>(config: Config.Config<A>, env: Record<string, string>) =>
  Effect.result(config.parse(ConfigProvider.fromEnvRecord(env)))

const refusal = <A>(config: Config.Config<A>, env: Record<string, string>) =>
  Effect.map(read(config, env), (result) => {
    assert.isTrue(Result.isFailure(result), `${JSON.stringify(env)} was accepted`)
    return Result.isFailure(result) ? result.failure.message.replace(/\s+/g, " ") : ""
  })

describe("Settings", () => {
  it.effect("intSetting: at least 1 unless told, an upper bound when given, whole numbers only", () =>
    Effect.gen(function*() {
      const workers = intSetting("WORKERS", 4, { max: 100 })
      assert.deepStrictEqual(yield* read(workers, {}), Result.succeed(4))
      assert.deepStrictEqual(yield* read(workers, { WORKERS: "100" }), Result.succeed(100))
      for (const bad of ["0", "-1", "101", "1.5", "abc", "1e308"]) {
        assert.include(yield* refusal(workers, { WORKERS: bad }), `["WORKERS"]`)
      }
      assert.deepStrictEqual(yield* read(intSetting("RETRIES", 3, { min: 0 }), { RETRIES: "0" }), Result.succeed(0))
      assert.include(yield* refusal(intSetting("BYTES", 1), { BYTES: "-1" }), "greater than or equal to 1")
      // the value and the form named (effect's own reading said "Expected a string representing a finite number")
      assert.include(yield* refusal(intSetting("BYTES", 1), { BYTES: "10MB" }), `expected a whole number, not "10MB" at ["BYTES"]`)
      assert.include(yield* refusal(workers, { WORKERS: "1.5" }), `expected a whole number at ["WORKERS"]`)
      assert.deepStrictEqual(yield* read(workers, { WORKERS: " 7 " }), Result.succeed(7))
    }))

  it.effect("durationSetting: effect's form or the compact one, longer than 0 (or at least min), at most max (10 years by default), ranges told as they are written", () =>
    Effect.gen(function*() {
      const interval = durationSetting("INTERVAL", "1 minute", { min: "10 millis" })
      assert.deepStrictEqual(yield* read(interval, {}), Result.succeed(Duration.minutes(1)))
      assert.deepStrictEqual(yield* read(interval, { INTERVAL: "10 millis" }), Result.succeed(Duration.millis(10)))
      assert.include(yield* refusal(interval, { INTERVAL: "1 millis" }), `must be at least 10 milliseconds at ["INTERVAL"]`)
      const timeout = durationSetting("TIMEOUT", "30 seconds")
      assert.include(yield* refusal(timeout, { TIMEOUT: "0 seconds" }), `must be longer than 0 at ["TIMEOUT"]`)
      assert.include(yield* refusal(timeout, { TIMEOUT: "-1 seconds" }), `["TIMEOUT"]`)
      assert.include(yield* refusal(timeout, { TIMEOUT: "99999999999999999999 days" }), `must be at most 3650 days at ["TIMEOUT"]`)
      // the queue headers' compact form too (one rule: @svc/schema parseDuration); a bare number is seconds
      for (const [text, ms] of [["30s", 30_000], ["1h30m", 5_400_000], ["1500ms", 1500], ["2d", 172_800_000], ["45", 45_000], [" 1.5 hours ", 5_400_000]] as const) {
        assert.deepStrictEqual(yield* read(timeout, { TIMEOUT: text }), Result.succeed(Duration.millis(ms)), text)
      }
      for (const bad of ["soon", "1 s", "5mins", "1m1h"]) {
        assert.include(yield* refusal(timeout, { TIMEOUT: bad }), `expected a duration such as "30 seconds", "30s", "5m" or "1h30m", not ${JSON.stringify(bad)}`)
      }
      assert.deepStrictEqual(yield* read(durationSetting("GRACE", "5 seconds", { min: "0 seconds" }), { GRACE: "0 seconds" }), Result.succeed(Duration.zero))
      assert.isTrue(Result.isFailure(yield* read(durationSetting("REQUIRED", undefined), {})), "no fallback: required")
    }))

  it.effect("numberSetting refuses NaN and Infinity; httpUrlSetting only absolute http(s) URLs", () =>
    Effect.gen(function*() {
      const cache = numberSetting("CACHE_MB", 64, { min: 0, max: 1000 })
      assert.deepStrictEqual(yield* read(cache, { CACHE_MB: "0.5" }), Result.succeed(0.5))
      for (const bad of ["NaN", "Infinity", "-1", "1001"]) assert.include(yield* refusal(cache, { CACHE_MB: bad }), `["CACHE_MB"]`)
      assert.include(yield* refusal(cache, { CACHE_MB: "0x10" }), `expected a number, not "0x10" at ["CACHE_MB"]`)
      assert.deepStrictEqual(yield* read(cache, { CACHE_MB: "1e2" }), Result.succeed(100))
      const url = httpUrlSetting("BASE_URL", "http://localhost:8787")
      assert.deepStrictEqual(yield* read(url, {}), Result.succeed("http://localhost:8787"))
      assert.deepStrictEqual(yield* read(url, { BASE_URL: "https://cars.example.com/app" }), Result.succeed("https://cars.example.com/app"))
      for (const bad of ["javascript:alert(1)", "http://", "abc", "ftp://host/", "/relative"]) {
        assert.include(yield* refusal(url, { BASE_URL: bad }), `must be an absolute http or https URL`)
      }
    }))

  it.effect("DATABASE_URL: unset (or empty) is the embedded Postgres; set, a postgres:// URL, and the message never repeats it", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* read(DatabaseUrl, {}), Result.succeed(Option.none()))
      for (const good of ["postgres://svc:secret@127.0.0.1:5432/svc", "postgresql:///svc?host=/run/postgresql", "postgres://svc@/svc?host=/tmp"]) {
        const result = yield* read(DatabaseUrl, { DATABASE_URL: good })
        assert.isTrue(Result.isSuccess(result) && Option.isSome(result.success) && Redacted.value(result.success.value) === good, good)
      }
      assert.deepStrictEqual(yield* read(DatabaseUrl, { DATABASE_URL: "" }), Result.succeed(Option.none()), "empty is unset")
      for (const bad of ["mysql://root:hunter2@db/app", "hunter2", "http://db:5432/app"]) {
        const message = yield* refusal(DatabaseUrl, { DATABASE_URL: bad })
        assert.include(message, "DATABASE_URL is not a postgres:// URL")
        assert.notInclude(message, "hunter2")
      }
    }))

  it.effect("a data folder (EMBEDDED_POSTGRES_DIR, OBJECT_STORAGE_DIR): unset or empty is the default; only whitespace stops the start", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* read(EmbeddedPostgresDir, {}), Result.succeed(".data/postgres"))
      assert.deepStrictEqual(yield* read(EmbeddedPostgresDir, { EMBEDDED_POSTGRES_DIR: "" }), Result.succeed(".data/postgres"))
      assert.deepStrictEqual(yield* read(EmbeddedPostgresDir, { EMBEDDED_POSTGRES_DIR: "/srv/pg" }), Result.succeed("/srv/pg"))
      assert.include(
        yield* refusal(EmbeddedPostgresDir, { EMBEDDED_POSTGRES_DIR: "  " }),
        "EMBEDDED_POSTGRES_DIR is only whitespace: give a folder, or leave it unset for .data/postgres"
      )
      assert.include(yield* refusal(ObjectStorageDir, { OBJECT_STORAGE_DIR: "\t" }), "OBJECT_STORAGE_DIR is only whitespace")
    }))

  it.effect("a data folder that is a file, or under one, stops the start saying so and naming the variable", () =>
    Effect.gen(function*() {
      const root = fs.mkdtempSync(path.join(os.tmpdir(), "svc-settings-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(root, { recursive: true, force: true })))
      const file = path.join(root, "data")
      fs.writeFileSync(file, "")
      // it said "No embedded Postgres in <file> yet", or started over an "interrupted first start"
      assert.include(
        yield* refusal(EmbeddedPostgresDir, { EMBEDDED_POSTGRES_DIR: file }),
        `EMBEDDED_POSTGRES_DIR is ${file}: a file, not a folder; give a folder, or leave it unset for .data/postgres`
      )
      assert.include(
        yield* refusal(EmbeddedPostgresDir, { EMBEDDED_POSTGRES_DIR: path.join(file, "pg") }),
        `EMBEDDED_POSTGRES_DIR is ${path.join(file, "pg")}: under ${file}, a file, not a folder`
      )
      // it failed in the object storage's script with mkdir's "Not a directory", after Postgres had started
      assert.include(yield* refusal(ObjectStorageDir, { OBJECT_STORAGE_DIR: file }), `OBJECT_STORAGE_DIR is ${file}: a file, not a folder`)
      assert.deepStrictEqual(yield* read(ObjectStorageDir, { OBJECT_STORAGE_DIR: path.join(root, "new", "os") }), Result.succeed(path.join(root, "new", "os")))
    }))

  it.effect("a URL setting (QUEUE_URL, LISTINGS_URL, DOCS_URL, DOCS_API_URL, PUBLIC_BASE_URL): unset or empty is unset; only whitespace is refused naming the variable; the spaces around one are dropped", () =>
    Effect.gen(function*() {
      const queueUrl = urlSetting("QUEUE_URL").pipe(Config.withDefault("http://localhost:8788"))
      assert.deepStrictEqual(yield* read(queueUrl, {}), Result.succeed("http://localhost:8788"))
      assert.deepStrictEqual(yield* read(queueUrl, { QUEUE_URL: "" }), Result.succeed("http://localhost:8788"))
      assert.deepStrictEqual(yield* read(queueUrl, { QUEUE_URL: " http://queue:8788 \n" }), Result.succeed("http://queue:8788"))
      // it said "QUEUE_URL must be an http(s) URL", as if a URL had been given
      for (const blank of [" ", "\t", " \n "]) {
        assert.include(yield* refusal(queueUrl, { QUEUE_URL: blank }), "QUEUE_URL is only whitespace: give a URL, or leave it unset")
      }
      assert.deepStrictEqual(yield* read(Config.option(urlSetting("DOCS_URL")), { DOCS_URL: "" }), Result.succeed(Option.none()))
      assert.include(yield* refusal(Config.option(urlSetting("DOCS_URL")), { DOCS_URL: "  " }), "DOCS_URL is only whitespace")
      const apiUrl = httpUrlSetting("DOCS_API_URL", "http://localhost:8789")
      assert.deepStrictEqual(yield* read(apiUrl, { DOCS_API_URL: "" }), Result.succeed("http://localhost:8789"))
      assert.deepStrictEqual(yield* read(apiUrl, { DOCS_API_URL: "http://docs:8789 " }), Result.succeed("http://docs:8789"))
      // it said "must be an absolute http or https URL"
      assert.include(yield* refusal(apiUrl, { DOCS_API_URL: "   " }), "DOCS_API_URL is only whitespace: give a URL, or leave it unset")
      assert.include(yield* refusal(apiUrl, { DOCS_API_URL: "http://u:p@docs" }), "DOCS_API_URL must not hold a user name or password")
    }))

  it.effect("tokenSetting: unset or empty is no token; only whitespace, or whitespace at an end, stops the start naming the variable, never the value", () =>
    Effect.gen(function*() {
      const token = tokenSetting("QUEUE_TOKEN")
      assert.deepStrictEqual(yield* read(token, {}), Result.succeed(Option.none()))
      assert.deepStrictEqual(yield* read(token, { QUEUE_TOKEN: "" }), Result.succeed(Option.none()))
      const set = yield* read(token, { QUEUE_TOKEN: "s3cr3t-token" })
      assert.isTrue(Result.isSuccess(set) && Option.isSome(set.success) && Redacted.value(set.success.value) === "s3cr3t-token")
      assert.include(yield* refusal(token, { QUEUE_TOKEN: "   " }), "QUEUE_TOKEN is only whitespace")
      for (const padded of [" hunter2", "hunter2\n", "\thunter2"]) {
        const message = yield* refusal(token, { QUEUE_TOKEN: padded })
        assert.include(message, "QUEUE_TOKEN starts or ends with whitespace")
        assert.notInclude(message, "hunter2")
      }
    }))
})
