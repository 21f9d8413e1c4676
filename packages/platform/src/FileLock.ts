/**
 * An exclusive advisory lock on a file (flock(2)), for work that two processes must not do at once
 * on one folder: creating an embedded Postgres cluster, or starting its server.
 *
 * Node has no flock, so util-linux's `flock` command holds it for us: it takes the lock, says so on
 * stdout, and keeps it while its `cat` reads our stdin. Releasing is closing that stdin. Should our
 * process die (a crash, a `kill -9`), the pipe closes with it and the kernel releases the lock: a
 * lock file left behind never blocks the next start (scripts/object-storage.sh locks its folder the
 * same way).
 */
import { Data, Effect, type Scope } from "effect"
import { type ChildProcess, spawn } from "node:child_process"

export class FileLockError extends Data.TaggedError("FileLockError")<{
  /** "busy": another process held it past the wait; "unavailable": no working `flock` here (not util-linux's). */
  readonly reason: "busy" | "unavailable"
  readonly message: string
}> {}

/** flock's exit code when the lock is held by another process (`--conflict-exit-code`). */
const BUSY = 75

class Busy extends Data.TaggedError("Busy")<{}> {}

/** One try: `waitSeconds` 0 gives up at once when another process holds the lock. */
const attempt = (file: string, waitSeconds: number, what: string) =>
  Effect.callback<ChildProcess, Busy | FileLockError>((resume) => {
    const wait = waitSeconds === 0 ? ["--nonblock"] : ["--wait", String(waitSeconds)]
    // in a process group of its own: a Ctrl-C in the terminal reaches our process, which then finishes
    // or gives up the locked work, not the holder, which would free the lock under that work
    const child = spawn("flock", ["--exclusive", ...wait, "--conflict-exit-code", String(BUSY), file, "-c", "echo locked; exec cat"], {
      stdio: ["pipe", "pipe", "pipe"],
      detached: true
    })
    let said = ""
    let settled = false
    const settle = (outcome: Effect.Effect<ChildProcess, Busy | FileLockError>) => {
      if (settled) return
      settled = true
      resume(outcome)
    }
    child.stdout!.on("data", (chunk) => {
      said += chunk
      if (said.startsWith("locked")) settle(Effect.succeed(child))
    })
    child.stderr!.on("data", (chunk) => said += chunk)
    child.once("error", (cause) => settle(Effect.fail(new FileLockError({ reason: "unavailable", message: `Could not lock ${file} (${what}): ${cause.message}` }))))
    child.once("close", (code) =>
      settle(Effect.fail(
        code === BUSY
          ? new Busy()
          : new FileLockError({ reason: "unavailable", message: `Could not lock ${file} (${what}): ${said.trim() || `flock exited ${code}`}` })
      ))
    )
    // interrupted while waiting: the pending flock goes, and the stdin a holder it may have started
    // already (the lock just taken, "locked" not yet read) waits on is closed, so that one ends too
    return Effect.sync(() => {
      child.stdin!.end()
      child.kill("SIGKILL")
    })
  })

const release = (child: ChildProcess) =>
  Effect.callback<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    child.once("close", () => resume(Effect.void))
    child.stdin!.end()
  })

/**
 * Holds an exclusive lock on `file` (created if missing) for the life of the scope. When another
 * process holds it, runs `onWait` (a progress line) and waits at most `waitSeconds`; `what` names
 * the work in the failure ("creating the Postgres data folder").
 */
export const lock = (
  file: string,
  options: { readonly what: string; readonly waitSeconds: number; readonly onWait: Effect.Effect<void> }
): Effect.Effect<void, FileLockError, Scope.Scope> =>
  Effect.acquireRelease(
    attempt(file, 0, options.what).pipe(
      Effect.catchTag("Busy", () => options.onWait.pipe(Effect.andThen(attempt(file, options.waitSeconds, options.what)))),
      Effect.catchTag("Busy", () =>
        Effect.fail(
          new FileLockError({
            reason: "busy",
            message: `Another process has been ${options.what} for ${options.waitSeconds} s (it holds ${file}); ` +
              "try again once it is done"
          })
        ))
    ),
    release,
    { interruptible: true }
  ).pipe(Effect.asVoid)
