/**
 * `Logging.layer`'s lines: one per event, on stderr (console.error, never console.log), with the
 * request's annotations on the same line and a value holding a line break escaped, not split.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, ConfigProvider, Console, Effect } from "effect"
import * as Logging from "../../src/Logging.ts"

/**
 * Runs `effect` under Logging.layer, configured by `env` alone (not the runner's LOG_LEVEL), with a
 * console that records what each method was given.
 */
const captured = (effect: Effect.Effect<void>, env: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const written: Array<{ readonly method: string; readonly text: string }> = []
    const record = (method: string) => (...args: ReadonlyArray<unknown>) => {
      written.push({ method, text: args.map(String).join(" ") })
    }
    const console: Console.Console = Object.assign(Object.create(globalThis.console), {
      log: record("log"),
      info: record("info"),
      error: record("error")
    })
    yield* effect.pipe(
      Effect.provide(Logging.layer),
      Effect.provideService(Console.Console, console),
      Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(env))
    )
    return written
  })

describe("Logging", () => {
  it.effect("a request's line is one line on stderr, its annotations on it, in logfmt", () =>
    Effect.gen(function*() {
      const written = yield* captured(
        Effect.logInfo("GET /api/v2/libs/search?libraryName=react&query=hooks 200 12ms").pipe(
          Effect.annotateLogs({ service: "docs-api", requestId: "bb5203a4-91c6-4c3a-8f55-97d635827803" })
        )
      )
      assert.deepStrictEqual(written.map(({ method }) => method), ["error"])
      const [line] = written.map(({ text }) => text)
      assert.notInclude(line, "\n")
      assert.match(
        line!,
        /^timestamp=\d{4}-\d\d-\d\dT[\d:.]+Z level=INFO fiber=#\d+ message="GET \/api\/v2\/libs\/search\?libraryName=react&query=hooks 200 12ms" service=docs-api requestId=bb5203a4-91c6-4c3a-8f55-97d635827803$/
      )
    }))

  it.effect("a line break in a message or a cause is escaped: nothing can forge a second line", () =>
    Effect.gen(function*() {
      const written = yield* captured(
        Effect.logWarning("title \"a\nlevel=ERROR message=forged\"").pipe(
          Effect.andThen(Effect.logError("failed", Cause.fail(new Error("boom\nat nowhere"))))
        )
      )
      assert.strictEqual(written.length, 2)
      for (const { text } of written) assert.notInclude(text, "\n")
      assert.include(written[0]!.text, String.raw`message="title \"a\nlevel=ERROR message=forged\""`)
      assert.match(written[1]!.text, /level=ERROR .*message=failed cause="Error: boom\\nat nowhere/)
    }))

  it.effect("below LOG_LEVEL (info by default) nothing is written", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* captured(Effect.logDebug("details")), [])
      const debug = yield* captured(Effect.logDebug("details"), { LOG_LEVEL: "debug" })
      assert.match(debug.map(({ text }) => text).join(""), /level=DEBUG .*message=details$/)
    }))
})
