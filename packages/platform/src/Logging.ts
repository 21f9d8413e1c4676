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

/** Log lines to stderr (effect's default logger writes them to stdout). */
export const layerStderr = Layer.succeed(Logger.LogToStderr, true)

/** Sets the minimum log level for everything built on top of it, and sends log lines to stderr. */
export const layer = Layer.merge(
  Layer.effect(
    References.MinimumLogLevel,
    Effect.gen(function*() {
      return yield* LogLevel
    })
  ),
  layerStderr
)
