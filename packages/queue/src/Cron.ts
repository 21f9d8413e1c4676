/**
 * A schedule's cron (`Svc-Cron`): five fields (minute hour day-of-month month day-of-week) with an
 * optional `CRON_TZ=<IANA zone> ` prefix (UTC without one), parsed and walked by `croner`. Pure.
 *
 * Daylight saving follows croner (and Vixie cron): on a spring-forward day a time that does not
 * exist (02:30 in Europe/Berlin on the last Sunday of March) fires once, at the first instant after
 * the gap (03:00 local, shifted by the hour skipped); on a fall-back day a time that exists twice
 * fires once, at its first occurrence. Interval patterns (`*\/15 * * * *`) keep firing on real
 * time through both.
 *
 * The catch-up rule ({@link tickAfterFire}): a tick missed by at most the catch-up window
 * (`QUEUE_SCHEDULE_CATCH_UP`, 10 minutes) still fires, each missed tick once, so a restart shorter
 * than the window loses nothing. Ticks missed by longer (a long outage) collapse into one fire — the
 * catch-up fire, for the oldest — and the schedule moves on to the first tick within the window, so
 * the ticks missed by less than the window still fire each: never a storm of replays, never a tick
 * of the window lost.
 */
import { Cron } from "croner"

/** Longest `Svc-Cron` value accepted (characters). */
export const MAX_CRON_LENGTH = 200

export interface ParsedCron {
  /** The value as given (stored and shown). */
  readonly text: string
  readonly pattern: string
  readonly timezone: string
  readonly cron: Cron
}

const PREFIX = /^CRON_TZ=(\S+)\s+(.*)$/s

/** A parsed cron, or the problem, in words, naming the bad part (pattern or zone). */
export const parseCron = (text: string): { readonly cron: ParsedCron } | { readonly problem: string } => {
  const trimmed = text.trim()
  if (trimmed.length === 0) return { problem: "expected a cron like \"*/5 * * * *\" (5 fields), got an empty value" }
  if (trimmed.length > MAX_CRON_LENGTH) return { problem: `must be at most ${MAX_CRON_LENGTH} characters` }
  const prefixed = PREFIX.exec(trimmed)
  if (prefixed === null && trimmed.startsWith("CRON_TZ=")) {
    return { problem: "expected \"CRON_TZ=<IANA zone> <5 fields>\", got a zone without a pattern" }
  }
  const timezone = prefixed?.[1] ?? "UTC"
  const pattern = (prefixed?.[2] ?? trimmed).trim()
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone })
  } catch {
    return { problem: `unknown time zone ${JSON.stringify(timezone.slice(0, 100))} in CRON_TZ (expected an IANA zone such as Europe/Berlin)` }
  }
  const fields = pattern.split(/\s+/)
  if (fields.length !== 5) {
    return {
      problem: `expected 5 cron fields (minute hour day-of-month month day-of-week), got ${fields.length} in ${
        JSON.stringify(pattern.slice(0, 100))
      }`
    }
  }
  try {
    const cron = new Cron(pattern, { timezone, mode: "5-part", paused: true })
    // A pattern that never matches (30 February) has no next run.
    if (cron.nextRun(new Date()) === null) return { problem: `the pattern ${JSON.stringify(pattern)} never fires` }
    return { cron: { text: trimmed, pattern, timezone, cron } }
  } catch (error) {
    const why = error instanceof Error ? error.message.replace(/^CronPattern: /, "") : String(error)
    return { problem: `invalid cron pattern ${JSON.stringify(pattern.slice(0, 100))}: ${why.slice(0, 200)}` }
  }
}

/** {@link parseCron} for a stored value (checked when stored): throws when it no longer parses. */
export const cronOf = (text: string): ParsedCron => {
  const parsed = parseCron(text)
  if ("problem" in parsed) throw new Error(`Stored cron ${JSON.stringify(text)}: ${parsed.problem}`)
  return parsed.cron
}

/** The first tick strictly after `after` (ms), or `undefined` when the pattern never fires again. */
export const nextTick = (cron: ParsedCron, after: number): number | undefined =>
  cron.cron.nextRun(new Date(after))?.getTime()

/** The next `count` ticks strictly after `after`. */
export const nextTicks = (cron: ParsedCron, after: number, count: number): Array<number> =>
  cron.cron.nextRuns(count, new Date(after)).map((date) => date.getTime())

/**
 * The tick a schedule fires next once tick `tick` has fired at `now` (see the catch-up rule above):
 * the cron time after `tick`, unless `tick` was missed by more than `catchUpMs`, then the first cron
 * time within the window (after `now - catchUpMs`). The later ticks were moved on to the first tick
 * after `now`, and an outage a little longer than the window lost the ticks inside it (an outside
 * kill sweep: `* * * * *`, a 90 s window, 142 s down: the 83 s and 23 s late ticks never fired).
 */
export const tickAfterFire = (cron: ParsedCron, tick: number, now: number, catchUpMs: number): number | undefined =>
  nextTick(cron, now - tick > catchUpMs ? now - catchUpMs : tick)
