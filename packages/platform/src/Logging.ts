/**
 * Log verbosity from the environment: `LOG_LEVEL` (trace, debug, info, warn, error; default info),
 * or `DEBUG=*` as a shorthand for debug (the convention many Node tools follow).
 *
 * Log lines go to stderr: stdout is for a command's results (`KEY=$(svc docs keys create)` must
 * capture the key and nothing else), and a service's logs are not its results either.
 */
import { Config, Effect, Layer, Logger, References } from "effect"

const levels = ["Trace", "Debug", "Info", "Warn", "Error", "Fatal"] as const

export const LogLevel = Config.all({
  level: Config.Literals(["trace", "debug", "info", "warn", "error", "fatal"], "LOG_LEVEL").pipe(Config.option),
  debug: Config.String("DEBUG").pipe(Config.withDefault(""))
}).pipe(Config.map(({ level, debug }) => {
  if (level._tag === "Some") return levels.find((name) => name.toLowerCase() === level.value) ?? "Info"
  return debug === "*" || debug.split(",").some((name) => name.trim() === "svc" || name.trim() === "svc:*")
    ? "Debug"
    : "Info"
}))

/**
 * Every log event as one logfmt line on stderr (effect's default logger writes to stdout):
 * `timestamp=… level=INFO fiber=#12 message="GET /health 200 1ms" service=docs-api requestId=…`.
 * The default logger also printed a log's annotations as an inspected object, over four lines for
 * every request once they passed 80 characters, and a message raw, so a value holding a line break
 * could forge a line. logfmt quotes and escapes every value that is not plain text; a failure's cause
 * (stack included) is one escaped value too.
 */
export const layerOneLine = Logger.layer([Logger.withConsoleError(Logger.formatLogFmt)])

/** Sets the minimum log level for everything built on top of it, and writes log lines ({@link layerOneLine}). */
export const layer = Layer.merge(
  Layer.effect(
    References.MinimumLogLevel,
    Effect.gen(function*() {
      return yield* LogLevel
    })
  ),
  layerOneLine
)
