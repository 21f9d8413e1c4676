#!/usr/bin/env node
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { exitZeroOnSignal, Logging, ServiceClient } from "@svc/platform"
import { Cause, Config, Effect, Exit, type Runtime } from "effect"
import { CliError, CliOutput, Command } from "effect/cli"
import { isatty } from "node:tty"
import { helpHint, UsageError } from "./CommandFailed.ts"
import { svc } from "./main.ts"
import { printable } from "./Terminal.ts"

/** Longest failure line: an argument of 100 KB came back whole (and a pipe cut it at 64 KiB). */
const MAX_LINE = 1000

/**
 * A message as one line for a terminal: control characters shown escaped (`\u001b`), never sent raw (an
 * id of `ESC [31m` recoloured the terminal), and cut at {@link MAX_LINE} characters.
 */
const oneLine = (message: string): string => {
  const escaped = printable(message.replace(/[\n\t]/g, " "))
  return escaped.length > MAX_LINE ? `${escaped.slice(0, MAX_LINE - 1)}…` : escaped
}

/** A usage error's line: the problem {@link oneLine}, then where the help is (never cut off with it). */
const usageLine = (problem: string, commandPath: ReadonlyArray<string>): string => `svc: ${oneLine(problem)} ${helpHint(commandPath)}\n`

/**
 * A failure is told as one line, `svc: <what went wrong>`, and the exit code is 1. Every error
 * the commands raise carries a message meant for the operator; the cause with its stack is shown
 * only at LOG_LEVEL=debug (a defect is a bug of ours, and then worth a report).
 */
const report = (cause: Cause.Cause<unknown>) =>
  Effect.gen(function*() {
    if (Cause.hasInterruptsOnly(cause)) return
    const failure = cause.reasons.find(Cause.isFailReason)?.error
    if (CliError.isCliError(failure)) return // already shown with the usage by Command.run
    if (failure instanceof UsageError) {
      process.stderr.write(usageLine(failure.problem, failure.commandPath))
      return
    }
    // An RPC client refusing its own payload (a 100 KB id) dies, not fails: still the operator's input.
    const refused = failure === undefined ? ServiceClient.argumentProblem(cause.reasons.find(Cause.isDieReason)?.defect) : undefined
    const own = failure instanceof Config.ConfigError
      ? `invalid configuration: ${failure.cause.message.replace(/\s+/g, " ")}`
      : failure instanceof Error || (typeof failure === "object" && failure !== null && "message" in failure)
      ? String((failure as { message: unknown }).message).trim()
      : ""
    // Never `svc: ` and nothing after: an error without a message of its own (a library's) says what
    // its causes say, else its name.
    const message = own !== ""
      ? own
      : refused !== undefined
      ? refused
      : failure !== undefined
      ? [(failure as { _tag?: unknown })._tag, ServiceClient.innermostMessage(failure)].filter(Boolean).join(": ") ||
        "unexpected error (run with LOG_LEVEL=debug for details)"
      : "unexpected error (run with LOG_LEVEL=debug for details)"
    process.stderr.write(`svc: ${oneLine(message)}\n`)
    const level = yield* Logging.LogLevel.pipe(Effect.orElseSucceed(() => "Info"))
    if (level === "Debug" || level === "Trace") process.stderr.write(`${Cause.pretty(cause)}\n`)
  })

/**
 * A usage error (unknown subcommand, a bad flag value) is one line on stderr naming the problem, and
 * where the help is: `Command.run`'s default presenter prints the whole help page first.
 */
const usagePresenter = CliOutput.layerPresenter({
  present: (event) =>
    event._tag === "InvalidInvocation"
      ? Effect.sync(() => {
        const problems = event.errors.map((error) => error.message.replace(/\s*\n\s*/g, " ").trim()).join("; ")
        process.stderr.write(usageLine(problems, event.commandPath))
      })
      : CliOutput.defaultPresenter.present(event)
})

/**
 * A result that could not be written (stdout on a full disk) is a failure: `svc docs keys create >
 * file` on a full disk exited 0 with the key's only copy lost. The write's error comes a tick after it,
 * so the exit waits one turn to hear it. A reader that went away (EPIPE: `| head`) is not one.
 * The line is written only when the command itself succeeded: one that failed has said why in its own
 * line (`docs keys create`: `could not write the output (ENOSPC), so the key … was revoked`), and a
 * failure is one line.
 */
let outputLost: string | undefined
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE" || outputLost !== undefined) return
  outputLost = error.code ?? error.message
})
/**
 * The signal that stopped the process, if one did (`runMain` interrupts the command on SIGINT and
 * SIGTERM). For the commands that run until stopped (`svc start`, `svc mcp`) a signal is their normal
 * stop: exit 0. Any other command did not finish: `svc: interrupted (SIGINT) before the command
 * finished`, exit 130 (SIGTERM: 143), as a shell reports it. They exited 0 with nothing said, so
 * `KEY=$(svc docs keys create) && deploy` went on with an empty key (an outside audit).
 */
let signalled: NodeJS.Signals | undefined
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => (signalled ??= signal))
/** The values of the global flags that take one: not the command. */
const FLAG_VALUES = new Set(["--log-level", "--completions"])
const command = process.argv.slice(2).find((arg, i, args) => !arg.startsWith("-") && !FLAG_VALUES.has(args[i - 1] ?? ""))
const runsUntilStopped = command === "start" || command === "mcp"

const teardown: Runtime.Teardown = (exit, onExit) => {
  if (signalled !== undefined && !runsUntilStopped && Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)) {
    process.stderr.write(`svc: interrupted (${signalled}) before the command finished\n`)
    return onExit(signalled === "SIGINT" ? 130 : 143)
  }
  exitZeroOnSignal(exit, (code) =>
    setImmediate(() => {
      if (code !== 0 || outputLost === undefined) return onExit(code)
      process.stderr.write(`svc: could not write the output (${outputLost})\n`)
      onExit(1)
    }))
}

/**
 * `--wizard` (effect's built-in: it asks for a command, its arguments and flags, then runs it) needs a
 * terminal to ask on. Without one it misbehaved: at the end of its input it said "Wizard cancelled." and
 * exited 0, and keystrokes piped in picked a command and ran it. Refused at once, before anything runs,
 * as a usage error naming what is not a terminal. After `--` it is an argument, not the flag.
 */
const wizardProblem = (args: ReadonlyArray<string>): string | undefined => {
  const end = args.indexOf("--")
  const asked = (end === -1 ? args : args.slice(0, end)).some((arg) => arg === "--wizard" || arg.startsWith("--wizard="))
  if (!asked) return undefined
  const stdin = isatty(0)
  const stdout = isatty(1)
  if (stdin && stdout) return undefined
  const which = !stdin && !stdout ? "neither stdin nor stdout is one" : `${stdin ? "stdout" : "stdin"} is not one`
  return `--wizard needs a terminal to ask its questions, and ${which}: ` +
    "give the command with its arguments and flags instead (settings come from the environment)"
}

const wizardRefused = wizardProblem(process.argv.slice(2))

const program = wizardRefused === undefined
  ? svc.pipe(Command.run({ version: "0.1.0" }))
  : Effect.fail(new UsageError(["svc"], wizardRefused))

program.pipe(
  Effect.provide([NodeServices.layer, Logging.layer, usagePresenter]),
  Effect.tapCause(report),
  NodeRuntime.runMain({ disableErrorReporting: true, teardown })
)
