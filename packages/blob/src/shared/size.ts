/**
 * Sizes written as options: a byte count or a string such as `"10MB"`, `"1.5 GiB"`, `"512kb"`.
 * Units are binary, as in the `bytes` npm package: KB = KiB = 1024 B, MB = MiB = 1024², GB = GiB = 1024³,
 * TB = TiB = 1024⁴. An unparseable value throws TypeError where the option is written.
 *
 * @module
 */
const UNITS: Record<string, number> = {
  b: 1,
  kb: 1024,
  kib: 1024,
  k: 1024,
  mb: 1024 ** 2,
  mib: 1024 ** 2,
  m: 1024 ** 2,
  gb: 1024 ** 3,
  gib: 1024 ** 3,
  g: 1024 ** 3,
  tb: 1024 ** 4,
  tib: 1024 ** 4,
  t: 1024 ** 4
}

/** A size option: bytes, or a string with a unit. */
export type SizeInput = number | string

/** Parses a size option into bytes (an integer >= 0). Throws TypeError naming `option` when unparseable. */
export const parseSize = (value: SizeInput, option = "size"): number => {
  if (typeof value === "number") {
    if (!Number.isFinite(value) || value < 0) throw new TypeError(`${option} must be a number of bytes >= 0`)
    return Math.floor(value)
  }
  if (typeof value === "string") {
    const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(value)
    const unit = UNITS[(match?.[2] ?? "").toLowerCase() || "b"]
    if (match !== null && unit !== undefined) return Math.floor(Number(match[1]) * unit)
    throw new TypeError(`${option} must be a number of bytes or a size such as "10MB" (got ${JSON.stringify(value)})`)
  }
  throw new TypeError(`${option} must be a number of bytes or a size such as "10MB"`)
}

/** An optional size option. */
export const parseOptionalSize = (value: SizeInput | undefined, option: string): number | undefined =>
  value === undefined ? undefined : parseSize(value, option)

/** Human-readable bytes for messages ("4.5 MiB"). */
export const formatBytes = (bytes: number): string => {
  if (bytes < 1024) return `${bytes} B`
  const units = ["KiB", "MiB", "GiB", "TiB"]
  let value = bytes / 1024
  let i = 0
  while (value >= 1024 && i < units.length - 1) {
    value /= 1024
    i++
  }
  return `${Number(value.toFixed(1))} ${units[i]}`
}

/**
 * A size and the limit it is over, as a refusal shows them: in exact bytes when rounding would show
 * them equal (a file one byte over 1 GiB was "1 GiB, over the limit of 1 GiB").
 */
export const formatOverLimit = (size: number, limit: number): readonly [string, string] => {
  const [shownSize, shownLimit] = [formatBytes(size), formatBytes(limit)]
  return shownSize !== shownLimit ? [shownSize, shownLimit] : [`${size} bytes`, `${limit} bytes (${shownLimit})`]
}
