/**
 * A schedule's cron (`Svc-Cron`): five fields (minute hour day-of-month month day-of-week) with an
 * optional `CRON_TZ=<IANA zone> ` prefix (UTC without one), parsed and walked by `croner`. Pure.
 *
 * Daylight saving follows croner (and Vixie cron): on a spring-forward day a time that does not
 * exist (02:30 in Europe/Berlin on the last Sunday of March) fires once, at the first instant after
 * the gap (03:00 local, shifted by the hour skipped); on a fall-back day a time that exists twice
 * fires once, at its first occurrence. Interval patterns (`*\/15 * * * *`) keep firing on real
 * time through both. "A time" is Vixie cron's fixed time: neither the minute nor the hour field starts
 * with `*`. croner fired a single time (`30 2`) once but a list or range (`0,30 2`, `10-11 2`, `30 1,2`)
 * at both occurrences (an outside audit), so {@link nextTick} skips a fixed time's second occurrence itself.
 *
 * The catch-up rule ({@link tickAfterFire}): a tick missed by at most the catch-up window
 * (`QUEUE_SCHEDULE_CATCH_UP`, 10 minutes) still fires, each missed tick once, so a restart shorter
 * than the window loses nothing. Ticks missed by longer (a long outage) collapse into one fire — the
 * catch-up fire, for the oldest — and the schedule moves on to the first tick within the window, so
 * the ticks missed by less than the window still fire each: never a storm of replays, never a tick
 * of the window lost.
 */
import { Cron } from "croner"
import { controlCharacterProblem } from "./Publish.ts"

/** Longest `Svc-Cron` value accepted (characters). */
export const MAX_CRON_LENGTH = 200

export interface ParsedCron {
  /** The value as given (stored and shown). */
  readonly text: string
  readonly pattern: string
  readonly timezone: string
  readonly cron: Cron
  /** Neither the minute nor the hour field starts with `*`: fires once in a repeated hour (module comment). */
  readonly fixedTime: boolean
  /** The zone's wall clock to the minute, to tell a repeated local time. */
  readonly wallClock: Intl.DateTimeFormat
}

/** The longest daylight-saving shift there is (a repeated local time recurs within it). */
const LONGEST_SHIFT_MS = 2 * 60 * 60_000
const SHIFTS_MS = [30 * 60_000, 60 * 60_000, LONGEST_SHIFT_MS]

/** Whether `at` is the second occurrence of its local time: the same wall clock minute, up to two hours earlier. */
const repeatedLocalTime = (cron: ParsedCron, at: number): boolean => {
  const wall = cron.wallClock.format(at)
  return SHIFTS_MS.some((shift) => cron.wallClock.format(at - shift) === wall)
}

const PREFIX = /^CRON_TZ=(\S+)\s+(.*)$/s

/** A parsed cron, or the problem, in words, naming the bad part (pattern or zone). */
export const parseCron = (text: string): { readonly cron: ParsedCron } | { readonly problem: string } => {
  // a line break split fields as a space did, and was stored (`0\n0 1 1 *` through the query form)
  const control = controlCharacterProblem(text)
  if (control !== undefined) return { problem: `${control}: separate the fields with spaces` }
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
    const [minute, hour] = fields as [string, string]
    const wallClock = new Intl.DateTimeFormat("en-CA", {
      timeZone: timezone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit"
    })
    return { cron: { text: trimmed, pattern, timezone, cron, fixedTime: !minute.startsWith("*") && !hour.startsWith("*"), wallClock } }
  } catch (error) {
    const why = error instanceof Error ? outOfRange(error.message.replace(/^CronPattern: /, "")) : String(error)
    return { problem: `invalid cron pattern ${JSON.stringify(pattern.slice(0, 100))}: ${why.slice(0, 200)}` }
  }
}

/** Each field's name and range as croner names it in "Invalid value for <field>: <n>". */
const FIELD_RANGES: Record<string, { readonly name: string; readonly range: string; readonly counted: number }> = {
  minute: { name: "minute", range: "0-59", counted: 0 },
  hour: { name: "hour", range: "0-23", counted: 0 },
  // croner counts days of the month and months from 0 in this message: "32" reads "day: 31"
  day: { name: "day-of-month", range: "1-31", counted: 1 },
  month: { name: "month", range: "1-12", counted: 1 },
  dayOfWeek: { name: "day-of-week", range: "0-7", counted: 0 }
}

/** croner's out-of-range message with the value as written and the field's range (it quoted 31 for a 32). */
const outOfRange = (message: string): string => {
  const match = /^Invalid value for (\w+): (-?\d+)$/.exec(message)
  const field = match === null ? undefined : FIELD_RANGES[match[1]!]
  return field === undefined ? message : `the ${field.name} ${Number(match![2]) + field.counted} is out of range (${field.range})`
}

/**
 * {@link parseCron} for a stored value (checked when stored): throws when it no longer parses. Its white
 * space read as spaces: a value stored before control characters were refused (a tab or line break
 * between fields) still fires.
 */
export const cronOf = (text: string): ParsedCron => {
  const parsed = parseCron(text.replace(/\s+/g, " "))
  if ("problem" in parsed) throw new Error(`Stored cron ${JSON.stringify(text)}: ${parsed.problem}`)
  return parsed.cron
}

/**
 * The first tick strictly after `after` (ms), or `undefined` when the pattern never fires again; a fixed
 * time's second occurrence in a repeated hour is not a tick (module comment).
 */
export const nextTick = (cron: ParsedCron, after: number): number | undefined => {
  let tick = cron.cron.nextRun(new Date(after))?.getTime()
  // at most the ticks of one repeated hour are skipped (60 of a minute list)
  for (let skipped = 0; tick !== undefined && cron.fixedTime && skipped <= 120 && repeatedLocalTime(cron, tick); skipped++) {
    tick = cron.cron.nextRun(new Date(tick))?.getTime()
  }
  return tick
}

/** The next `count` ticks strictly after `after`. */
export const nextTicks = (cron: ParsedCron, after: number, count: number): Array<number> => {
  const ticks: Array<number> = []
  for (let tick = nextTick(cron, after); tick !== undefined && ticks.length < count; tick = nextTick(cron, tick)) ticks.push(tick)
  return ticks
}

/**
 * The tick a schedule fires next once tick `tick` has fired at `now` (see the catch-up rule above):
 * the cron time after `tick`, unless `tick` was missed by more than `catchUpMs`, then the first cron
 * time within the window (after `now - catchUpMs`). The later ticks were moved on to the first tick
 * after `now`, and an outage a little longer than the window lost the ticks inside it (an outside
 * kill sweep: `* * * * *`, a 90 s window, 142 s down: the 83 s and 23 s late ticks never fired).
 */
export const tickAfterFire = (cron: ParsedCron, tick: number, now: number, catchUpMs: number): number | undefined =>
  nextTick(cron, now - tick > catchUpMs ? now - catchUpMs : tick)
