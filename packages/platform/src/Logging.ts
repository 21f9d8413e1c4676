/**
 * Log verbosity from the environment: `LOG_LEVEL` (trace, debug, info, warn, error; default info),
 * or `DEBUG=*` as a shorthand for debug (the convention many Node tools follow).
 */
import { Config, Effect, Layer, References } from "effect"

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

/** Sets the minimum log level for everything built on top of it. */
export const layer = Layer.effect(
  References.MinimumLogLevel,
  Effect.gen(function*() {
    return yield* LogLevel
  })
)
