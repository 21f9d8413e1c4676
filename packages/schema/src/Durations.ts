/**
 * Durations as people write them in a header or a setting: `"10s"`, `"1500ms"`, `"2m"`, `"1h30m"`, or a
 * bare number of seconds (`"30"`), as QStash's headers take them. One rule for the queue's `Svc-Delay`,
 * `Svc-Timeout`, ... and the suite's duration settings (which also take effect's `"30 seconds"`).
 */

/** Days, hours, minutes, seconds, milliseconds: each at most once, largest first (`1d1d`, `1m1h` are typos). */
const DURATION = /^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+)s)?(?:(\d+)ms)?$/
const UNIT_MS = [86_400_000, 3_600_000, 60_000, 1000, 1]

/**
 * `"10s"`, `"1500ms"`, `"2m"`, `"1h30m"`, or a bare number of seconds (`"30"`), to milliseconds;
 * `undefined` when it is none of those.
 */
export const parseDuration = (text: string): number | undefined => {
  const trimmed = text.trim()
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000
  const parts = trimmed === "" ? null : DURATION.exec(trimmed)
  if (parts === null) return undefined
  return UNIT_MS.reduce((total, unit, i) => total + Number(parts[i + 1] ?? 0) * unit, 0)
}
